"""The container image, without a container engine: the Dockerfile's runtime steps, done in a
fresh virtualenv from the wheel ``python -m build`` makes, and the service started as the
image's ENTRYPOINT and CMD start it, with its ENV, until its HEALTHCHECK passes.

What a container adds that this cannot show (the non-root user, the /data volume's
ownership, the Java runtime of the pipeline extra) is plain shell in the Dockerfile, which
CI lints with hadolint. compose.yaml is checked against the Dockerfile: its service uses the
port, the volume and a database service that exist.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from app import __version__
from tests.conftest import free_port
from tests.support.waiting import until

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "image-test-token"

# Building the wheel and installing it with its dependencies (from pip's cache) takes about
# a minute on an idle 2-core machine, several under load.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def _instructions(text: str) -> list[tuple[str, str]]:
    """The Dockerfile's instructions (continuations joined, comments dropped), in order."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        word, _, rest = (pending + line).partition(" ")
        out.append((word.upper(), rest.strip()))
        pending = ""
    return out


def runtime_stage() -> list[tuple[str, str]]:
    """The final stage: what the image runs."""
    steps = _instructions((ROOT / "Dockerfile").read_text())
    last = max(i for i, (word, _) in enumerate(steps) if word == "FROM")
    return steps[last:]


def _one(stage: list[tuple[str, str]], word: str) -> str:
    (found,) = [rest for w, rest in stage if w == word]
    return found


def image_env(stage: list[tuple[str, str]]) -> dict[str, str]:
    env: dict[str, str] = {}
    for word, rest in stage:
        if word == "ENV":
            env.update(pair.split("=", 1) for pair in shlex.split(rest))  # type: ignore[misc]
    return env


def test_the_dockerfile_is_what_the_test_below_reads() -> None:
    stage = runtime_stage()
    env = image_env(stage)
    assert env["XSTREAMS_HOST"] == "0.0.0.0" and env["XSTREAMS_DATA_DIR"] == "/data"
    assert _one(stage, "EXPOSE") == env["XSTREAMS_PORT"]
    assert json.loads(_one(stage, "VOLUME").replace("/data", '"/data"')) == "/data"
    user = _one(stage, "USER")
    assert not user.startswith(("0", "root")), "the service must not run as root"
    assert json.loads(_one(stage, "ENTRYPOINT")) == ["xstreams"]
    assert "/readyz" in _one(stage, "HEALTHCHECK")


def test_compose_runs_the_image_with_postgresql() -> None:
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    services = compose["services"]
    xs = services["xstreams"]
    stage = runtime_stage()
    assert xs["build"]["context"] == "." and "EXTRAS" in xs["build"]["args"]
    url = xs["environment"]["XSTREAMS_DATABASE_URL"]
    host = re.search(r"@([^:/]+)", url)
    assert url.startswith("postgresql+psycopg://") and host is not None
    db = host.group(1)
    assert "postgres" in services[db]["image"]
    assert xs["depends_on"][db]["condition"] == "service_healthy"
    assert any(v.endswith(":/data") for v in xs["volumes"])
    assert any(p.endswith(f":{_one(stage, 'EXPOSE')}") for p in xs["ports"])
    assert "XSTREAMS_TOKEN" in xs["environment"]  # 0.0.0.0 needs a credential


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv with the wheel built from this checkout installed, as the
    Dockerfile's build and runtime stages do (pip's cache keeps the dependencies local).

    The wheel is built from the sdist, in a folder of its own, as CI builds it: never from
    a ``build/`` folder an earlier build left in the checkout, which can hold stale files."""
    tmp = tmp_path_factory.mktemp("image")
    clean = _clean_env()
    subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(tmp / "dist"), str(ROOT)],
        check=True,
        capture_output=True,
        env=clean,
        timeout=300,
    )
    (wheel,) = (tmp / "dist").glob("xstreams-*.whl")
    venv = tmp / "venv"
    # Without a pip of its own (bootstrapping one is slow): this pip installs into it.
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300
    )
    pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin/python")]
    subprocess.run(
        [*pip, "install", "-q", str(wheel)],
        check=True,
        env=clean,
        timeout=600,
    )
    return venv


def _clean_env(**extra: str) -> dict[str, str]:
    """This environment without what would make the checkout importable (PYTHONPATH) or
    change the service's settings (XSTREAMS_*: a container starts with the image's only)."""
    env = {
        k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("XSTREAMS_")
    }
    return {**env, **extra}


@pytest.fixture
def container(installed: Path, tmp_path: Path) -> Iterator[tuple[str, list[str], dict[str, str]]]:
    """The service started as the image starts it: ENTRYPOINT + CMD, the image's ENV, /data
    as a folder of its own (the volume), a free port and the admin token (`docker run -e`)."""
    stage = runtime_stage()
    port = str(free_port())
    env = _clean_env(
        **{
            **image_env(stage),
            "XSTREAMS_DATA_DIR": str(tmp_path / "data"),
            "XSTREAMS_PORT": port,
            "XSTREAMS_TOKEN": TOKEN,
        }
    )
    (tmp_path / "data").mkdir()
    argv = json.loads(_one(stage, "ENTRYPOINT")) + json.loads(_one(stage, "CMD"))
    argv[0] = str(installed / "bin" / argv[0])
    log = (tmp_path / "out.log").open("wb")
    proc = subprocess.Popen(argv, env=env, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
    healthcheck = json.loads(_one(stage, "HEALTHCHECK").split(" CMD ", 1)[1])
    healthcheck[0] = str(installed / "bin" / healthcheck[0])
    try:
        yield f"http://127.0.0.1:{port}", healthcheck, env
    finally:
        proc.terminate()  # docker stop: SIGTERM
        try:
            # uvicorn shuts down cleanly, then ends by the signal it got (as Docker expects).
            assert proc.wait(30) in (0, -signal.SIGTERM)
            assert "Application shutdown complete" in (tmp_path / "out.log").read_text()
        finally:
            if proc.poll() is None:
                proc.kill()
            log.close()


def test_the_wheel_installs_starts_migrates_and_serves(
    installed: Path, container: tuple[str, list[str], dict[str, str]]
) -> None:
    url, healthcheck, env = container
    python = str(installed / "bin/python")
    where = subprocess.run(
        [python, "-c", "import app; print(app.__file__)"],
        env=env,
        cwd=installed,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert where.startswith(str(installed)), where  # the wheel's code, not the checkout's
    version = subprocess.run(
        [str(installed / "bin/xstreams"), "--version"], capture_output=True, text=True, env=env
    ).stdout
    assert version.strip() == f"xstreams {__version__}"

    def passed() -> bool:
        return subprocess.run(healthcheck, env=env, capture_output=True).returncode == 0

    until(passed, 60, "the HEALTHCHECK passed", poll_s=0.2)
    ready: Any = httpx.get(url + "/readyz", timeout=5).json()
    # The migrations ran from the wheel; the image serves the embedded engine by default.
    assert {k: ready[k] for k in ("status", "storage", "backend")} == {
        "status": "ready",
        "storage": "ok",
        "backend": "embedded",
    }
    assert (Path(env["XSTREAMS_DATA_DIR"]) / "xstreams.db").exists()

    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert httpx.post(url + "/", json=["XADD", "s", "1-1", "f", "v"], headers=auth).json() == {
        "result": "1-1"
    }
    assert httpx.post(url + "/", json=["XADD", "s", "*", "f", "v"]).status_code == 401
    metrics = httpx.get(url + "/metrics", headers=auth)
    assert metrics.status_code == 200 and "xstreams_stream_entries 1.0" in metrics.text
