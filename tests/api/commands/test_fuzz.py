"""Property: no body and no argument list makes the command endpoint answer 5xx.

Hypothesis draws request bodies of every JSON shape (nested arrays and objects, numbers of any
size, booleans, null, long strings), bytes that are not JSON or not UTF-8, and command argument
lists named from the command table with hostile arguments (huge and negative numbers, special
IDs, option words), and sends them to ``/``, ``/pipeline``, ``/multi-exec`` and the path style,
in process, on each target (the engine; the Redis backend on redis-server and on a cluster,
where what passes the command table reaches Redis). Every answer must be a well-formed
``{"result"}`` / ``{"error"}`` (or a list of them) with a status below 500.

CI cost is kept near 30 s by the ``XSTREAMS_FUZZ_EXAMPLES`` budget per test (raise it locally
for a longer hunt: ``XSTREAMS_FUZZ_EXAMPLES=5000``). BLOCK is never drawn with a value (a
``BLOCK 0`` would wait forever): the word is replaced by COUNT.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.engine.commands.table import COMMANDS
from app.engine.store import Store
from app.main import create_app
from app.settings import Settings
from tests.support.targets import (
    CLUSTER,
    EMBEDDED,
    TARGET_PARAMS,
    cluster_url,
    redis_url,
    require_redis,
)

T = TypeVar("T")
EXAMPLES = int(os.environ.get("XSTREAMS_FUZZ_EXAMPLES", "2000"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

NAMES = sorted(
    [name for name, c in COMMANDS.items() if not c.subcommands]
    + [f"{name} {sub}" for name, c in COMMANDS.items() for sub in c.subcommands]
    + ["nosuchcommand", "MULTI", "SUBSCRIBE"]
)
HOSTILE = [
    "0", "1", "-1", "10", "$", ">", "*", "+", "-", "(1-1", "(", "1-*", "0-0", "1-1", "5-0",
    "18446744073709551615-18446744073709551615", "18446744073709551616", "9223372036854775807",
    "9223372036854775808", "-9223372036854775809", "99999999999999999999", "1e3", "0x10", " 1",
    "COUNT", "STREAMS", "GROUP", "NOACK", "MAXLEN", "MINID", "~", "=", "LIMIT", "NOMKSTREAM",
    "FULL", "IDLE", "TIME", "RETRYCOUNT", "FORCE", "JUSTID", "LASTID", "MKSTREAM", "ENTRIESREAD",
    "ENTRIESADDED", "MAXDELETEDID", "MATCH", "TYPE", "s", "t", "g", "c", "", "*a" * 600,
    "a" * 10_000, "\u20ac", "\x00",
]  # fmt: skip

arguments = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=20), st.integers().map(str))
commands = st.builds(
    lambda name, args: [*name.split(" "), *args],
    st.sampled_from(NAMES),
    st.lists(arguments, max_size=12),
).map(lambda argv: ["COUNT" if a.lower() == "block" else a for a in argv])

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=30),
    st.sampled_from(HOSTILE),
)
documents = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=30,
)


def _nested(depth: int, leaf: str) -> bytes:
    return b"[" * depth + leaf.encode() + b"]" * depth


raw_bodies = st.one_of(
    documents.map(lambda d: json.dumps(d).encode()),
    commands.map(lambda c: json.dumps(c).encode()),
    st.lists(commands, min_size=1, max_size=8).map(lambda cs: json.dumps(cs).encode()),
    st.binary(max_size=200),
    st.builds(_nested, st.integers(1, 5000), st.sampled_from(["", "1", '"a"', "1,[2]", "{}"])),
    commands.map(lambda c: json.dumps(c).encode().replace(b'"s"', b'"\xff\xfe"')),
    st.integers(min_value=2**63).map(lambda n: b'["XRANGE","s","-","+","COUNT",%d]' % n),
)


@pytest.fixture(scope="module")
def run() -> Iterator[Callable[[Coroutine[Any, Any, T]], T]]:
    """Runs coroutines on one loop, against one app, for the whole module (state persists
    between examples: later ones meet the streams and groups earlier ones made)."""
    loop = asyncio.new_event_loop()
    yield loop.run_until_complete
    loop.close()


@pytest.fixture(scope="module", params=TARGET_PARAMS)
def client(
    request: pytest.FixtureRequest, run: Callable[[Coroutine[Any, Any, Any]], Any]
) -> Iterator[httpx.AsyncClient]:
    """The app in process on each target: the engine, or the Redis backend passing what the
    fuzzer draws through to redis-server and the cluster."""
    if request.param == EMBEDDED:
        app = create_app(Settings(max_reply_entries=1000), store=Store())
    else:
        if request.param == CLUSTER:
            url = cluster_url(request.getfixturevalue("cluster_nodes"))
        else:
            require_redis()
            url = redis_url()
        app = create_app(Settings(max_reply_entries=1000, backend=url))
        # No lifespan in process: connect here, and be ready as /readyz would say.
        run(app.state.services.backend.start())
        app.state.services.readiness.set_ready()
        run(app.state.services.backend.command(["FLUSHALL"]))
    transport = httpx.ASGITransport(app=app)
    c = httpx.AsyncClient(transport=transport, base_url="http://xs", timeout=10)
    run(c.post("/", json=["XADD", "s", "1-1", "f", "v"]))
    run(c.post("/", json=["XGROUP", "CREATE", "s", "g", "0"]))
    yield c
    run(c.aclose())
    run(app.state.services.backend.close())


def _well_formed(reply: Any) -> bool:
    return isinstance(reply, dict) and (set(reply) == {"result"} or set(reply) == {"error"})


def _check(r: httpx.Response, many: bool) -> None:
    assert r.status_code < 500, (r.status_code, r.text[:300])
    body = r.json()
    if many and r.status_code == 200:
        assert isinstance(body, list) and all(_well_formed(x) for x in body), r.text[:300]
    else:
        assert _well_formed(body), r.text[:300]
        if "error" in body:
            assert r.status_code >= 400 and isinstance(body["error"], str), r.text[:300]


@pytest.mark.parametrize("path", ["/", "/pipeline", "/multi-exec"])
@FUZZ
@given(body=raw_bodies)
def test_no_body_gets_a_server_error(
    run: Callable[[Coroutine[Any, Any, httpx.Response]], httpx.Response],
    client: httpx.AsyncClient,
    path: str,
    body: bytes,
) -> None:
    _check(run(client.post(path, content=body)), many=path != "/")


@FUZZ
@given(argv=commands)
def test_no_command_gets_a_server_error(
    run: Callable[[Coroutine[Any, Any, httpx.Response]], httpx.Response],
    client: httpx.AsyncClient,
    argv: list[str],
) -> None:
    """The same argument list through the three body styles and the path style."""
    _check(run(client.post("/", json=argv)), many=False)
    _check(run(client.post("/pipeline", json=[argv, argv])), many=True)
    _check(run(client.post("/multi-exec", json=[argv])), many=True)
    if argv[0] and len("".join(argv)) < 4000:
        path = "/" + "/".join(quote(a, safe="") for a in argv)
        for method in ("GET", "POST", "HEAD", "OPTIONS"):
            r = run(client.request(method, path))
            if method == "HEAD":
                assert r.status_code in (404, 405)  # never runs a command
            else:
                _check(r, many=False)
