"""``/ui/``: the dashboard's files, served without credentials (and nothing else is), with a
strict Content-Security-Policy; shipped in the package; plain modules that need no build."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from app.engine.store import Store
from app.main import create_app
from app.settings import Settings
from app.web import STATIC

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
async def client() -> httpx.AsyncClient:
    """A service that requires credentials (an admin token)."""
    app = create_app(Settings(token="secret"), store=Store())
    transport = httpx.ASGITransport(app=app)
    return httpx.AsyncClient(transport=transport, base_url="http://xs")


async def test_the_files_need_no_credentials_and_nothing_else_is_opened(
    client: httpx.AsyncClient,
) -> None:
    async with client:
        r = await client.get("/ui")
        assert r.status_code == 308 and r.headers["location"] == "/ui/"
        page = await client.get("/ui/")
        assert page.status_code == 200, page.text
        assert page.headers["content-type"].startswith("text/html")
        csp = page.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
        assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
        assert page.headers["x-content-type-options"] == "nosniff"
        assert page.headers["referrer-policy"] == "no-referrer"
        module = await client.get("/ui/js/main.js")
        assert module.status_code == 200
        assert module.headers["content-type"].startswith("text/javascript")
        assert (await client.get("/ui/app.css")).headers["content-type"].startswith("text/css")
        assert (await client.head("/ui/app.css")).status_code == 200
        # Nothing but the files, to GET and HEAD: any other name, escape or method under /ui
        # needs credentials, so none reaches another route (POST /ui matched the command
        # endpoint's catch-all and ran a command named UI).
        assert (await client.get("/ui/nothing.js")).status_code == 401
        assert (await client.get("/ui/../app/main.py")).status_code == 401
        assert (await client.get("/ui/%2E%2E/%2E%2E/pyproject.toml")).status_code == 401
        for method in ("POST", "PUT", "DELETE", "PATCH"):
            for path in ("/ui", "/ui/", "/ui/index.html", "/ui/xadd/s/*/f/v"):
                r = await client.request(method, path, content=b'["XADD", "s", "*", "f", "v"]')
                assert r.status_code == 401, (method, path, r.text)
        assert (await client.post("/healthz", content=b'["PING"]')).status_code == 401
        # With credentials, the files still answer only GET and HEAD.
        secret = {"Authorization": "Bearer secret"}
        assert (await client.post("/ui/", content=b"x", headers=secret)).status_code == 405
        assert (await client.get("/ui/nothing.js", headers=secret)).status_code == 404
        assert (await client.post("/", json=["XLEN", "s"], headers=secret)).json() == {"result": 0}
        # The API still asks for credentials, and so does everything beside /ui/.
        assert (await client.get("/v1/streams")).status_code == 401
        assert (await client.get("/v1/whoami")).status_code == 401
        assert (await client.get("/uix")).status_code == 401
        assert (await client.get("/ui-something/xadd/s/*/f/v")).status_code == 401
        ok = await client.get("/v1/whoami", headers={"Authorization": "Bearer secret"})
        assert ok.json()["kind"] == "token"


def test_no_inline_script_and_every_module_import_resolves() -> None:
    """The CSP allows scripts from files only, and modules load without a bundler."""
    pages = sorted(STATIC.glob("*.html"))
    assert {p.name for p in pages} >= {"index.html", "tail.html"}
    for page in pages:
        html = page.read_text()
        for tag in re.findall(r"<script\b[^>]*>", html):
            assert 'type="module"' in tag and "src=" in tag, (page.name, tag)
        assert not re.search(r"<script\b[^>]*>\s*[^<\s]", html), f"{page.name}: inline script"
        assert not re.search(r"\son[a-z]+=", html), f"{page.name}: inline event handler"
    modules = sorted(STATIC.rglob("*.js"))
    assert modules
    for module in modules:
        text = module.read_text()
        assert "innerHTML" not in text, f"{module.name}: values go in as text"
        for target in re.findall(r'from "(\.[^"]+)"', text):
            assert (module.parent / target).resolve().is_file(), f"{module.name}: {target}"


def test_the_package_carries_every_file(tmp_path: Path) -> None:
    """What setuptools puts in a wheel (build_py) holds every file under app/web/static."""
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(ROOT / "pyproject.toml", src)
    shutil.copy(ROOT / "README.md", src)
    shutil.copytree(ROOT / "app", src / "app", ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path / "lib"
    args = ["-q", "build_py", "--build-lib", str(out)]
    script = f"from setuptools import setup; setup(script_args={args!r})"
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=src, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    built = {p.relative_to(out / "app/web/static") for p in (out / "app/web/static").rglob("*")}
    shipped = {p.relative_to(STATIC) for p in STATIC.rglob("*")}
    assert built == shipped
