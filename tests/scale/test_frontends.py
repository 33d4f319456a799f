"""Stateless front-ends (issue 14): several workers and several processes in front of one
Redis, a front-end killed mid-stream, SSE resumed on another one, WAIT, and the refusals
that keep the embedded engine to one process."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.server.workers import settings_env
from app.settings import FsyncMode, Settings
from tests.api.sse.support import entry_ids, open_events
from tests.conftest import REDIS_HOST, REDIS_PORT, TARGET_REDIS_DB, Commands
from tests.support.targets import REDIS, Target, redis_url, require_redis
from tests.support.waiting import until

S = "{t}events"

# --------------------------------------------------------------------- settings and the CLI


def _serve(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "app.cli", "serve", "--port", "1", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)


def test_the_embedded_engine_refuses_several_workers(tmp_path: Path) -> None:
    done = _serve("--workers", "2", "--data-dir", str(tmp_path))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: --workers 2 needs a shared backend"), lines
    assert not (tmp_path / "xstreams.db").exists()  # refused before anything was opened


def test_an_unknown_backend_is_refused_in_one_line() -> None:
    done = _serve("--backend", "mysql://localhost/x")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: backend: Value error, unknown backend 'mysql': use 'embedded' or a URL starting"
        " with redis://, rediss://, redis+cluster://, rediss+cluster://"
    ]


def test_settings_reach_every_worker_through_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    overrides = {
        "backend": "redis+cluster://a:1,b:2",
        "workers": 3,
        "wait_replicas": 1,
        "wait_timeout_ms": 250,
        "fsync": FsyncMode.EVERYSEC,
        "cors_origins": ["https://a.example", "https://b.example"],
        "insecure_no_auth": True,
        "data_dir": tmp_path,
        "token": "s3cret",
    }
    for name, value in settings_env(overrides).items():
        monkeypatch.setenv(name, value)
    assert Settings() == Settings(**overrides)  # type: ignore[arg-type]


def test_backend_defaults_to_embedded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XSTREAMS_BACKEND", raising=False)
    s = Settings()
    assert s.backend == "embedded" and s.embedded and s.workers == 1 and s.wait_replicas == 0
    monkeypatch.setenv("XSTREAMS_BACKEND", "rediss://user:pw@h:6380/2")
    assert not Settings().embedded


# ------------------------------------------------------------------ several front-ends


@pytest.fixture
def redis_target() -> Target:
    """The standalone redis-server: these tests are about the front-ends, which behave the
    same in front of a cluster."""
    require_redis()
    return Target(REDIS, redis_url())


def _once(url: str, *args: object) -> Any:
    """One command on a client of its own, closed after."""
    c = Commands(url)
    try:
        return c(*args)
    finally:
        c.client.close()


def _redis_flush() -> None:
    import redis

    client = redis.Redis(host=REDIS_HOST, port=REDIS_PORT, db=TARGET_REDIS_DB)
    try:
        client.flushdb()
    finally:
        client.close()


def _flush(url: str) -> None:
    assert _once(url, "FLUSHALL") == "OK"


@pytest.mark.redis
def test_two_workers_both_serve(redis_target: Target, tmp_path: Path) -> None:
    front = redis_target.serve(tmp_path, "--workers", "2")
    try:
        _flush(front.url)
        pids: set[int] = set()
        deadline = time.monotonic() + 20
        while len(pids) < 2 and time.monotonic() < deadline:
            # A new connection each time: the workers take turns accepting them. The one that
            # did not answer the start-up wait may still be reading its keys (503 meanwhile).
            r = httpx.get(front.url + "/readyz", headers={"Connection": "close"}, timeout=5)
            if r.status_code == 200:
                pids.add(r.json()["pid"])
            else:
                assert r.status_code == 503, r.text
        assert len(pids) == 2 and front.proc.pid not in pids, pids
        for i in range(40):
            r = httpx.post(front.url + "/", json=["XADD", S, "*", "n", str(i)],
                           headers={"Connection": "close"}, timeout=5)  # fmt: skip
            assert r.status_code == 200, r.text
        assert _once(front.url, "XLEN", S) == 40  # one keyspace, whichever worker wrote
    finally:
        front.stop()
    assert front.proc.returncode == 0


@pytest.mark.redis
def test_a_killed_front_end_loses_no_acknowledged_write(
    redis_target: Target, tmp_path: Path
) -> None:
    a = redis_target.serve(tmp_path / "a")
    b = redis_target.serve(tmp_path / "b")
    try:
        _flush(b.url)
        acked: list[str] = []
        lock = threading.Lock()

        def writer(n: int) -> None:
            with httpx.Client(base_url=a.url, timeout=5) as c:
                i = 0
                while True:
                    try:
                        r = c.post("/", json=["XADD", S, "*", "w", str(n), "i", str(i)])
                    except httpx.HTTPError:
                        return  # the front-end is gone
                    if r.status_code == 200:
                        with lock:
                            acked.append(r.json()["result"])
                    i += 1

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        until(lambda: len(acked) > 20, 20, "writes acknowledged through a")
        a.kill()  # mid-stream: requests in flight are cut
        for t in threads:
            t.join(10)
        assert len(acked) > 20
        stored = {e[0] for e in _once(b.url, "XRANGE", S, "-", "+")}
        assert set(acked) <= stored  # every 2xx is in Redis
        restarted = redis_target.serve(tmp_path / "a2")
        try:
            again = {e[0] for e in _once(restarted.url, "XRANGE", S, "-", "+")}
            assert set(acked) <= again
        finally:
            restarted.stop()
    finally:
        b.stop()
        if a.proc.poll() is None:
            a.stop()


@pytest.mark.redis
async def test_an_event_stream_resumes_on_another_front_end(
    redis_target: Target, tmp_path: Path
) -> None:
    a = redis_target.serve(tmp_path / "a")
    b = redis_target.serve(tmp_path / "b")
    try:
        _flush(b.url)
        writes = Commands(b.url)
        total = 60
        written: list[str] = []
        stop, killed = threading.Event(), threading.Event()

        def writer() -> None:
            for i in range(total):
                if stop.is_set():
                    return
                if i == 20:  # the rest while the subscriber's front-end is gone and after
                    killed.wait(20)
                written.append(writes("XADD", S, "*", "i", str(i)))

        got: list[str] = []
        thread = threading.Thread(target=writer)
        async with httpx.AsyncClient(timeout=15) as client:
            async with open_events(client, a.url + f"/v1/streams/{S}/events", last_id="0") as ev:
                thread.start()
                got += entry_ids(await ev.take(10))
                last = ev.last_event_id
                a.kill()  # the front-end dies under its subscriber
                killed.set()
            assert last == got[-1]
            async with open_events(
                client, b.url + f"/v1/streams/{S}/events", last_event_id=last
            ) as ev:
                thread.join(20)
                got += entry_ids(await ev.take(total - len(got), timeout=15))
        assert got == written  # no gap, no repeat, in order
    finally:
        stop.set()
        writes.client.close()
        b.stop()
        if a.proc.poll() is None:
            a.stop()


@pytest.mark.redis
def test_wait_replicas_without_replicas_answers_503(redis_target: Target, tmp_path: Path) -> None:
    """A standalone redis-server has no replica to confirm: the write is applied, the answer
    says it is not as safe as asked (503, Redis's NOREPLICAS text)."""
    front = redis_target.serve(tmp_path, "--wait-replicas", "1", "--wait-timeout", "100")
    try:
        # FLUSHALL is a write too (applied, then 503 for the missing replica): FLUSHDB is the
        # same there, without WAIT.
        _redis_flush()
        r = httpx.post(front.url + "/", json=["XADD", S, "*", "f", "v"], timeout=5)
        assert r.status_code == 503
        assert r.json() == {"error": "NOREPLICAS Not enough good replicas to write."}
        r = httpx.post(front.url + "/pipeline", json=[["XADD", S, "*", "f", "v"]], timeout=5)
        assert r.status_code == 503 and r.json()["error"].startswith("NOREPLICAS")
        r = httpx.post(front.url + f"/v1/streams/{S}/entries", json={"fields": {"f": "v"}})
        assert r.status_code == 503, r.text
        assert r.headers["content-type"].startswith("application/problem+json")
        assert r.json()["code"] == "NOREPLICAS"
        assert _once(front.url, "XLEN", S) == 3  # applied all the same: WAIT takes nothing back
        first = _once(front.url, "XRANGE", S, "-", "+", "COUNT", "1")  # reads answer 200
        assert first[0][1] == ["f", "v"]
    finally:
        front.stop()


@pytest.mark.redis
def test_readyz_names_the_backend(redis_target: Target, tmp_path: Path) -> None:
    front = redis_target.serve(tmp_path)
    try:
        body = httpx.get(front.url + "/readyz").json()
        assert body["status"] == "ready" and body["backend"] == "redis"
        assert "://" not in str(body)  # never the URL (it may hold a password)
    finally:
        front.stop()


@pytest.mark.redis
def test_whoami_and_the_dashboard_on_redis(redis_target: Target, tmp_path: Path) -> None:
    front = redis_target.serve(tmp_path, "--token", "tok")
    try:
        auth = {"Authorization": "Bearer tok"}
        r = httpx.get(front.url + "/v1/whoami", headers=auth)
        assert r.status_code == 200, r.text
        assert r.json()["grant"]["admin"] is True
        assert httpx.get(front.url + "/ui/", follow_redirects=True).status_code == 200
    finally:
        front.stop()


@pytest.mark.redis
def test_metrics_and_info_on_redis(redis_target: Target, tmp_path: Path) -> None:
    """/metrics: the front-end's own figures (the keyspace's are Redis's); INFO: Redis's."""
    front = redis_target.serve(tmp_path)
    try:
        _flush(front.url)
        _once(front.url, "XADD", S, "*", "f", "v")
        text = httpx.get(front.url + "/metrics").text
        assert "xstreams_http_requests_total" in text
        assert "xstreams_streams " not in text  # no keyspace in this process
        info = _once(front.url, "INFO", "server")
        assert "redis_version:" in info and "xstreams_version" not in info
    finally:
        front.stop()
