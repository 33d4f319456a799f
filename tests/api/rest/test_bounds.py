"""REST bounds: ranges come in pages (default and maximum ``count``, ``next`` and a
``Link`` header), and integers beyond 64 bits are refused, never stored."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.engine.store import Store
from tests.api.inproc import serve
from tests.support.targets import TARGET_PARAMS, Served, served_on

PROBLEM = "application/problem+json"


async def _fill(c: object, n: int) -> None:
    await c.post(  # type: ignore[attr-defined]
        "/pipeline", json=[["XADD", "s", f"{i}-1", "f", "v"] for i in range(1, n + 1)]
    )


async def test_a_range_without_count_is_one_default_page_with_a_next_link() -> None:
    async with serve(rest_default_count=3, rest_max_count=5) as c:
        await _fill(c, 7)
        r = await c.get("/v1/streams/s/entries")
        assert r.status_code == 200
        assert [e["id"] for e in r.json()["entries"]] == ["1-1", "2-1", "3-1"]
        assert r.json()["next"] == "(3-1"
        link = r.headers["link"]
        assert link.endswith('; rel="next"') and "start=%283-1" in link
        r = await c.get(link[1 : link.index(">")])
        assert [e["id"] for e in r.json()["entries"]] == ["4-1", "5-1", "6-1"]
        r = await c.get("/v1/streams/s/entries", params={"order": "desc", "count": 5})
        assert r.json()["next"] == "(3-1" and "end=%283-1" in r.headers["link"]
        r = await c.get("/v1/streams/s/entries", params={"start": "(6-1"})
        assert r.json()["next"] is None and "link" not in r.headers


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/v1/streams/s/entries", {"count": 6}),
        ("/v1/streams/s/entries", {"after": "0", "count": 0}),
        ("/v1/read", {"stream": "s", "after": "0", "count": 6}),
        ("/v1/streams/s", {"full": "true", "count": 6}),
        ("/v1/streams/s", {"full": "true", "count": 0}),  # everything, past one page
    ],
)
async def test_count_past_the_maximum_is_a_400(path: str, params: dict[str, object]) -> None:
    async with serve(rest_max_count=5) as c:
        await _fill(c, 7)
        r = await c.get(path, params=params)
        assert r.status_code == 400 and r.headers["content-type"] == PROBLEM
        assert "rest_max_count" in r.json()["error"]


@pytest.fixture(params=TARGET_PARAMS)
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Served:
    """The embedded app in process, or a front-end on a Redis target, with the test's limits."""
    return served_on(request, request.param, tmp_path)


async def test_keys_per_read_and_per_event_stream(served: Served) -> None:
    async with served(max_read_keys=2) as c:
        streams = [("stream", k) for k in ("a", "b", "c")]
        r = await c.get("/v1/read", params=[*streams, ("after", "0")])
        assert r.status_code == 400 and "max_read_keys" in r.json()["error"]
        # SSE: the problem comes before any event (the response is not a stream).
        r = await c.get("/v1/events", params=streams)
        assert r.status_code == 400 and r.headers["content-type"] == PROBLEM


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/v1/streams/s/groups", {"name": "g2", "entries_read": 2**64}),
        ("PATCH", "/v1/streams/s/groups/g", {"last_delivered_id": "0", "entries_read": 2**63}),
        ("POST", "/v1/streams/s/groups/g/claims", {"consumer": "c", "min_idle_ms": 0,
                                                  "ids": ["1-1"], "retry_count": 2**64}),
        ("POST", "/v1/streams/s/groups/g/claims", {"consumer": "c", "min_idle_ms": 2**63,
                                                  "ids": ["1-1"]}),
        ("PUT", "/v1/streams/s/last-id", {"last_id": "9-9", "entries_added": 2**63}),
        ("POST", "/v1/streams/s/trim", {"maxlen": 2**63}),
    ],
)  # fmt: skip
async def test_integers_beyond_64_bits_are_refused(
    method: str, path: str, body: dict[str, object]
) -> None:
    store = Store()
    async with serve(store) as c:
        await _fill(c, 1)
        await c.post("/", json=["XGROUP", "CREATE", "s", "g", "0"])
        await c.post("/", json=["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"])
        before = (await c.get("/v1/streams/s", params={"full": "true"})).json()
        r = await c.request(method, path, json=body)
        assert r.status_code == 422 and r.headers["content-type"] == PROBLEM, r.text
        after = (await c.get("/v1/streams/s", params={"full": "true"})).json()
        assert after == before  # nothing stored
        assert (await c.post("/", json=["XPENDING", "s", "g"])).status_code == 200


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/v1/streams/s/entries", {"after": "0", "block_ms": 2**64}),
        ("/v1/read", {"stream": "s", "after": "0", "block_ms": 2**63}),
        ("/v1/streams/s/entries", {"count": "many"}),
        ("/v1/streams/s/entries", {"count": 2**64}),
    ],
)
async def test_bad_numbers_in_queries_are_400s(path: str, params: dict[str, object]) -> None:
    async with serve() as c:
        await _fill(c, 1)
        r = await c.get(path, params={**params, "unknown": "ignored"})
        assert r.status_code == 400 and r.headers["content-type"] == PROBLEM


@pytest.mark.parametrize(
    "body",
    [
        b'{"fields": {"a": "\xff"}}',  # not UTF-8
        b"\xff\xfe",
        b"[" * 100_000 + b"]" * 100_000,  # nested past any parser's limit
        b'{"fields": ' + b"[" * 5000 + b"]" * 5000 + b"}",
        b'{"fields": {"a": NaN}}',
    ],
    ids=["utf8-in-string", "utf8", "deep", "deep-field", "nan"],
)
async def test_a_malformed_json_body_is_a_422(body: bytes) -> None:
    """As the README says: a malformed body is a 422 problem (some were 400s, or 500s)."""
    store = Store()
    async with serve(store) as c:
        r = await c.post(
            "/v1/streams/s/entries", content=body, headers={"content-type": "application/json"}
        )
        assert r.status_code == 422 and r.headers["content-type"] == PROBLEM, r.text[:200]
        assert store.keyspace.get("s") is None
