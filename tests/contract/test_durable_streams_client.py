"""The protocol's TypeScript reference client (``@durable-streams/client``, pinned in
tests/contract/ds) against /ds, on the embedded engine and in front of Redis: its idempotent
producer appends; a consumer group reads those messages as entries (XREADGROUP); entries
appended with XADD reach the client's live tail; and the client's offsets are the entries'
IDs (docs/durable-streams.md)."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.api.ds import offsets
from app.engine.ids import parse_strict_id
from tests.support.npm import npm_ci, npm_or_skip
from tests.support.targets import EMBEDDED, REDIS, Frontend, redis_url, require_redis

DS = Path(__file__).resolve().parent / "ds"
KEY = "v1/stream/client-orders"
WAIT_S = 60


def _lines(proc: subprocess.Popen[str]) -> queue.Queue[str]:
    out: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            out.put(line)

    threading.Thread(target=pump, daemon=True).start()
    return out


def _next(lines: queue.Queue[str], proc: subprocess.Popen[str], err: Path) -> dict[str, Any]:
    try:
        line = lines.get(timeout=WAIT_S)
    except queue.Empty:
        proc.kill()
        said = err.read_text()[-2000:]
        raise AssertionError(f"the client said nothing in {WAIT_S} s: {said}") from None
    parsed: dict[str, Any] = json.loads(line)
    return parsed


@pytest.mark.server
@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", [EMBEDDED, pytest.param(REDIS, marks=pytest.mark.redis)])
def test_the_reference_client_and_a_consumer_group_share_a_stream(
    name: str, tmp_path: Path
) -> None:
    npm = npm_or_skip("to run the Durable Streams client")
    backend: tuple[str, ...] = ()
    if name == REDIS:
        require_redis()
        backend = ("--backend", redis_url())
    npm_ci(npm, DS)
    server = Frontend(tmp_path / "data", *backend)
    try:
        with httpx.Client(base_url=server.url, timeout=30) as http:

            def xs(*argv: str) -> Any:
                r = http.post("/", json=list(argv))
                assert r.status_code == 200, r.text
                return r.json()["result"]

            xs("FLUSHALL")  # the database of this test alone (a stream and its record)
            err = tmp_path / "client.err"
            with (
                err.open("w") as err_file,
                subprocess.Popen(
                    ["node", "client.mjs"],
                    cwd=DS,
                    env={**os.environ, "DS_URL": f"{server.url}/ds/{KEY}", "DS_EXPECT": "8"},
                    stdout=subprocess.PIPE,
                    stderr=err_file,
                    text=True,
                ) as proc,
            ):
                lines = _lines(proc)
                appended = _next(lines, proc, err)
                # The producer's five messages are five entries a consumer group reads.
                xs("XGROUP", "CREATE", KEY, "billing", "0")
                read = xs("XREADGROUP", "GROUP", "billing", "b1", "STREAMS", KEY, ">")
                entries = read[0][1]
                bodies = [
                    json.loads(dict(zip(e[1][::2], e[1][1::2], strict=True))["body"])
                    for e in entries
                ]
                assert bodies == [{"n": n, "from": "client"} for n in range(1, 6)]
                assert appended["offset"] == offsets.token(parse_strict_id(entries[-1][0]))
                # Three more through XADD reach the client's live tail, after its five.
                added = [
                    xs("XADD", KEY, "*", "content-type", "application/json", "body",
                       json.dumps({"n": n, "from": "xadd"}))
                    for n in range(6, 9)
                ]  # fmt: skip
                tailed = _next(lines, proc, err)
                assert proc.wait(timeout=WAIT_S) == 0, err.read_text()[-2000:]
                assert tailed["tailed"] == [{"n": n, "from": "client"} for n in range(1, 6)] + [
                    {"n": n, "from": "xadd"} for n in range(6, 9)
                ]
                assert tailed["offset"] == offsets.token(parse_strict_id(added[-1]))
                # The group reads the same three, by the IDs the client's offset names.
                more = xs("XREADGROUP", "GROUP", "billing", "b1", "STREAMS", KEY, ">")
                assert [e[0] for e in more[0][1]] == added
    finally:
        server.stop()
