"""The real ``@upstash/redis`` JavaScript SDK against xstreams returns what it returns against
redis-server 8.

JavaScript clients written for Upstash reach xstreams through this SDK. Its defaults differ
from the Python one's: calls made in the same tick go out together through ``/pipeline``
(auto-pipelining), field values keep their JSON type on the wire (``{n: 1, done: true}`` sends
a JSON number and a JSON boolean), and every value read back is parsed as JSON.

js/scenario.mjs runs one stream scenario (XADD, XGROUP, XREADGROUP, XACK, XPENDING, XRANGE,
XLEN, XTRIM, XDEL, and Redis 8.2's XACKDEL and XDELEX with each option and with none) twice
with the same SDK code: on xstreams through ``new Redis({url, token})``, and through a
requester that sends each command to redis-server 8 over RESP. Both runs must give the same
results and errors, in both request shapes (auto-pipelining, and one request a call); only
wall-clock values (idle times, a ``*`` ID) are masked.

The SDK is pinned in js/package-lock.json and installed by ``npm ci`` from the npm registry.
Without node and npm the test skips, unless XSTREAMS_REQUIRE_SERVICES=1.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Commands, Server
from tests.differential.exact import RespClient
from tests.differential.support import MASK, mask
from tests.support.npm import npm_ci, npm_or_skip
from tests.support.redis_servers import RedisProcess

JS = Path(__file__).resolve().parent / "js"
SDK_VERSION = "1.39.0"
MODES = ("auto-pipelining", "one request a call")
SCENARIO_TIMEOUT_S = 60
# npm ci (the first time) and a run of the scenario.
INSTALL_AND_RUN_S = 400
AUTO_ID = re.compile(r"^\d+-0$")

# What users rely on, as redis-server 8.6 answers it (the run compares every other step
# to the reference without naming the reply).
EXPECTED: dict[str, Any] = {
    # Every value comes back parsed as JSON: types survive the round trip, "007" does not
    # turn into 7 (the SDK keeps a string whose number would print differently).
    "xrange typed values": {
        "1-0": {
            "f": "v",
            "n": 1,
            "neg": -7,
            "pi": 3.14,
            "big": 12345678901234567000,
            "tiny": 1e-7,
            "done": True,
            "failed": False,
            "nothing": None,
            "obj": {"a": [1, "x"]},
            "text": "héllo ✓",
            "numtext": "007",
        }
    },
    "xackdel no option": [1],
    "xackdel KEEPREF": [1, -1],
    "xackdel ACKED referenced": [2],
    "xackdel acked lower case": [1],
    "xackdel DELREF": [1],
    "xackdel not pending": [-1, -1],
    "xackdel no group": [-1],
    "xackdel missing key": [-1],
    "xpending g after xackdel": [],
    "xpending h after xackdel": [],
    "xdelex ACKED": [2, 2],
    "xdelex no option": [-1],
    "xdelex KEEPREF": [1, -1],
    "xdelex DELREF": [1, 1],
    "xdelex no option deletes": [1, -1],
    "xdelex missing key": [-1],
    "xpending h after xdelex": [["8-0", "d", MASK, 1]],
    "xlen after xdelex": 0,
    "xtrim maxlen exact": 3,
    "xtrim minid exact": 3,
    "xrange u": {"9-0": {"i": 8}, "10-0": {"i": 9}},
}
INVALID_ID = "ERR Invalid stream ID specified as stream command argument"
EXPECTED_ERRORS = {
    "xackdel bad id": INVALID_ID,
    "xdelex bad id": INVALID_ID,
    "xgroup create again": "BUSYGROUP Consumer Group name already exists",
}
# The text xstreams stores for each value the SDK sent (a JSON number as written, a boolean
# as true/false, null and objects as the JSON text the SDK made of them).
STORED_VALUES = [
    ["f", "v"],
    ["n", "1"],
    ["neg", "-7"],
    ["pi", "3.14"],
    ["big", "12345678901234567000"],
    ["tiny", "1e-7"],
    ["done", "true"],
    ["failed", "false"],
    ["nothing", "null"],
    ["obj", '{"a":[1,"x"]}'],
    ["text", "héllo ✓"],
    ["numtext", "007"],
]


@pytest.fixture(scope="module")
def node_sdk() -> str:
    """The node executable, with js/node_modules installed from the lock file."""
    npm = npm_or_skip("to run the @upstash/redis SDK")
    npm_ci(npm, JS)
    package = json.loads((JS / "node_modules/@upstash/redis/package.json").read_text())
    assert package["version"] == SDK_VERSION
    node = shutil.which("node")
    assert node is not None
    return node


def run_scenario(node: str, url: str, redis_port: int) -> dict[str, Any]:
    done = subprocess.run(
        [node, "scenario.mjs", url, str(redis_port)],
        cwd=JS,
        capture_output=True,
        text=True,
        timeout=SCENARIO_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    runs: dict[str, Any] = json.loads(done.stdout)
    return runs


def masked(step: dict[str, Any]) -> tuple[str, Any]:
    """The step's outcome, ``("ok", result)`` or ``("error", text)``, wall clock masked."""
    if "error" in step:
        return "error", step["error"]
    result = step["ok"]
    if step["name"] == "xadd auto id":
        assert isinstance(result, str) and AUTO_ID.match(result), result
        return "ok", MASK
    if step["name"].startswith("xpending"):
        return "ok", mask(("XPENDING", "s", "g", "-", "+", 10), result)
    return "ok", result


@pytest.fixture
def js_runs(
    node_sdk: str, server: Server, xs: Commands, target: Any, redis8: RedisProcess
) -> Iterator[dict[str, Any]]:
    """The scenario's outcomes on xstreams and on redis-server 8, by request shape (each run
    flushes both first)."""
    yield run_scenario(node_sdk, server.url, redis8.port)


@pytest.mark.timeout(INSTALL_AND_RUN_S)
def test_js_sdk_matches_redis8(js_runs: dict[str, Any]) -> None:
    """Every step of the scenario gives the same outcome on xstreams as on redis-server 8."""
    assert set(js_runs) == set(MODES)
    # The default client sends most calls through /pipeline; the other, none.
    assert js_runs["auto-pipelining"]["pipelined"] > 0
    assert js_runs["one request a call"]["pipelined"] == 0
    mismatches = []
    for mode in MODES:
        ours, reference = js_runs[mode]["xstreams"], js_runs[mode]["reference"]
        assert [s["name"] for s in ours] == [s["name"] for s in reference]
        for step, ref in zip(ours, reference, strict=True):
            if masked(step) != masked(ref):
                mismatches.append((mode, ref["name"], ref["sent"], masked(ref), masked(step)))
    assert not mismatches, "\n".join(map(repr, mismatches))


@pytest.mark.timeout(INSTALL_AND_RUN_S)
def test_js_sdk_stream_replies(js_runs: dict[str, Any]) -> None:
    """The replies users rely on, by name: typed values read back, XACKDEL / XDELEX codes
    for each option and for none, and errors as the SDK raises them in each request shape
    (a pipeline row's ``Command failed: ...``; a lone call's Upstash HTTP 400 message, which
    ends with the command sent)."""
    for mode in MODES:
        steps = {s["name"]: s for s in js_runs[mode]["xstreams"]}
        for name, expected in EXPECTED.items():
            assert masked(steps[name]) == ("ok", expected), (mode, name, steps[name])
        for name, text in EXPECTED_ERRORS.items():
            kind, message = masked(steps[name])
            assert kind == "error", (mode, name, steps[name])
            if mode == "auto-pipelining":
                assert message == f"UpstashError: Command failed: {text}", (mode, name)
            else:
                assert message.startswith(f"UpstashError: {text}, command was: ["), (mode, name)


@pytest.mark.timeout(INSTALL_AND_RUN_S)
def test_js_sdk_values_are_stored_as_redis_text(
    js_runs: dict[str, Any], xs: Commands, redis8: RedisProcess
) -> None:
    """What the SDK's XADD left in the streams, read raw: the same text on both sides, and
    the text of each JSON type as listed."""
    resp8 = RespClient("127.0.0.1", redis8.port)
    try:
        for key in ("v", "s", "u"):
            assert xs("XRANGE", key, "-", "+") == resp8("XRANGE", key, "-", "+"), key
    finally:
        resp8.close()
    assert xs("XRANGE", "v", "-", "+") == [["1-0", [x for pair in STORED_VALUES for x in pair]]]
