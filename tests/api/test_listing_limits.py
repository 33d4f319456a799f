"""Every listing of groups and consumers is bounded, and so are their numbers (issue 23, 6).

Before: XINFO GROUPS, XINFO CONSUMERS and XINFO STREAM FULL (whatever its COUNT) listed
every group and consumer, as did REST's group and consumer lists: 70,000 groups held the
event loop 1.1-1.55 s per request, with a read-only key. Now the command endpoint refuses a
listing past ``max_reply_entries`` with that limit's error, REST lists in pages (``Link``),
and ``max_stream_groups`` / ``max_group_consumers`` cap what can be created, on the embedded
engine and in front of Redis alike. Small limits keep the set-up to a few commands.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.engine.limits import LISTING_HINT
from app.engine.store import Store
from tests.engine.helpers import run
from tests.support.targets import TARGET_PARAMS, Served, served_on

GROUPS_CAP = "ERR too many consumer groups: key 's' holds at most 3 (max_stream_groups)"
CONSUMERS_CAP = "ERR too many consumers: group 'g' holds at most 2 (max_group_consumers)"


def too_large(command: str, n: int) -> str:
    return (
        f"ERR {command} reply would hold more than {n} entries (max_reply_entries): " + LISTING_HINT
    )


@pytest.fixture(params=TARGET_PARAMS)
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Served:
    return served_on(request, request.param, tmp_path)


async def cmd(c: httpx.AsyncClient, *argv: str) -> tuple[int, Any]:
    # json.dumps escapes the payload's lone surrogates (\udcNN: bytes that are not UTF-8).
    body = json.dumps(list(argv))
    r = await c.post("/", content=body, headers={"content-type": "application/json"})
    return r.status_code, r.json()


async def ok(c: httpx.AsyncClient, *argv: str) -> Any:
    status, body = await cmd(c, *argv)
    assert status == 200, (argv, body)
    return body["result"]


async def pipeline(c: httpx.AsyncClient, commands: list[list[str]]) -> list[Any]:
    r = await c.post("/pipeline", json=commands)
    assert r.status_code == 200, r.text
    return [item.get("result", item.get("error")) for item in r.json()]


async def walk(c: httpx.AsyncClient, url: str, rows: str) -> tuple[list[str], int]:
    """Follow ``Link: rel="next"`` from ``url`` to the end: every name listed, and pages."""
    names: list[str] = []
    pages = 0
    next_url: str | None = url
    while next_url is not None:
        r = await c.get(next_url)
        assert r.status_code == 200, r.text
        pages += 1
        body = r.json()
        names += [row["name"] for row in body[rows]]
        link = r.headers.get("link")
        if link is None:
            assert body["next"] is None
            next_url = None
        else:
            found = re.fullmatch(r'<([^>]*)>; rel="next"', link)
            assert found is not None, link
            assert body["next"] == names[-1]
            next_url = found.group(1)
    return names, pages


async def test_listings_past_the_reply_limit_are_refused(served: Served) -> None:
    """XINFO GROUPS / CONSUMERS and XINFO STREAM FULL (any COUNT: it bounds entries and
    PELs, not groups and consumers, as in Redis) past ``max_reply_entries``: refused whole,
    alone and in a pipeline; within it, answered as Redis answers."""
    async with served(max_reply_entries=5) as c:
        await pipeline(c, [["XGROUP", "CREATE", "s", f"g{i}", "$", "MKSTREAM"] for i in range(6)])
        await pipeline(c, [["XGROUP", "CREATECONSUMER", "s", "g0", f"c{i}"] for i in range(6)])
        for argv, name in (
            (["XINFO", "GROUPS", "s"], "XINFO GROUPS"),
            (["XINFO", "CONSUMERS", "s", "g0"], "XINFO CONSUMERS"),
            (["XINFO", "STREAM", "s", "FULL"], "XINFO STREAM FULL"),
            (["XINFO", "STREAM", "s", "FULL", "COUNT", "1"], "XINFO STREAM FULL"),
        ):
            assert await cmd(c, *argv) == (400, {"error": too_large(name, 5)}), argv
        got = await pipeline(c, [["XINFO", "GROUPS", "s"], ["XLEN", "s"]])
        assert got == [too_large("XINFO GROUPS", 5), 0]
        # Within the limit: the whole listing, COUNT bounding nothing but entries and PELs.
        await ok(c, "XGROUP", "CREATE", "t", "a", "$", "MKSTREAM")
        await ok(c, "XGROUP", "CREATE", "t", "b", "$")
        await ok(c, "XGROUP", "CREATECONSUMER", "t", "a", "x")
        await ok(c, "XGROUP", "CREATECONSUMER", "t", "a", "y")
        full = await ok(c, "XINFO", "STREAM", "t", "FULL", "COUNT", "1")
        groups = full[full.index("groups") + 1]
        assert [g[1] for g in groups] == ["a", "b"]
        assert [row[1] for row in groups[0][groups[0].index("consumers") + 1]] == ["x", "y"]
        assert [row[1] for row in await ok(c, "XINFO", "GROUPS", "t")] == ["a", "b"]


async def test_rest_lists_groups_and_consumers_in_pages(served: Served) -> None:
    """REST pages through groups and consumers past the reply limit: each page at most
    ``count`` (the default page without it), ``Link: rel="next"`` to the next, every name
    once, in order; a lookup by name does not list."""
    async with served(max_reply_entries=5, rest_default_count=4) as c:
        names = sorted([f"g{i}" for i in range(9)] + ["é", "a b"])
        await pipeline(c, [["XGROUP", "CREATE", "s", n, "$", "MKSTREAM"] for n in names])
        await pipeline(c, [["XGROUP", "CREATECONSUMER", "s", "g0", f"c{i}"] for i in range(7)])
        for url, expected_pages in (
            ("/v1/streams/s/groups", 3),
            ("/v1/streams/s/groups?count=2", 6),
        ):
            listed, pages = await walk(c, url, "groups")
            assert listed == names
            assert pages == expected_pages
        listed, pages = await walk(c, "/v1/streams/s/groups/g0/consumers?count=3", "consumers")
        assert (listed, pages) == ([f"c{i}" for i in range(7)], 3)
        r = await c.get("/v1/streams/s/groups", params={"after": names[-1]})
        assert r.json() == {"groups": [], "next": None} and "link" not in r.headers
        r = await c.get("/v1/streams/s/groups", params={"count": 1001})
        assert r.status_code == 400
        assert (await c.get("/v1/streams/s/groups/g5")).json()["name"] == "g5"
        assert (await c.get("/v1/streams/s/groups/g55")).status_code == 404
        r = await c.put("/v1/streams/s/groups/g0/consumers/c6")
        assert (r.status_code, r.json()["name"]) == (200, "c6")
        r = await c.delete("/v1/streams/s/groups/g0/consumers/c7")
        assert r.status_code == 404
        assert (await c.get("/v1/streams/nope/groups")).status_code == 404
        assert (await c.get("/v1/streams/s/groups/nope/consumers")).status_code == 404


def _payload(groups: int, consumers: int) -> str:
    """DUMP of a stream holding ``groups`` groups, the first with ``consumers`` consumers,
    made by an engine without caps (bytes as lone surrogates, as the JSON carries them)."""
    store = Store()
    run(store, "XADD", "src", "1-1", "f", "v")
    for i in range(groups):
        run(store, "XGROUP", "CREATE", "src", f"g{i}", "0")
    for i in range(consumers):
        run(store, "XGROUP", "CREATECONSUMER", "src", "g0", f"c{i}")
    dumped: str = run(store, "DUMP", "src")
    return dumped


async def test_groups_and_consumers_are_capped(served: Served) -> None:
    """One group past ``max_stream_groups``, one consumer past ``max_group_consumers``:
    refused by every command that would add it, with the same text on both surfaces (409 on
    REST), nothing changed; RESTORE of a stream past either cap likewise."""
    async with served(max_stream_groups=3, max_group_consumers=2, max_reply_entries=5) as c:
        await ok(c, "XADD", "s", "1-1", "f", "v")
        for name in ("g", "h", "i"):
            await ok(c, "XGROUP", "CREATE", "s", name, "0")
        assert await cmd(c, "XGROUP", "CREATE", "s", "j", "0") == (400, {"error": GROUPS_CAP})
        assert (await cmd(c, "XGROUP", "CREATE", "s", "g", "0"))[1] == {
            "error": "BUSYGROUP Consumer Group name already exists"
        }
        assert (await cmd(c, "XGROUP", "CREATE", "s", "j", "bad"))[1]["error"].startswith(
            "ERR Invalid stream ID"
        )
        r = await c.post("/v1/streams/s/groups", json={"name": "j", "id": "0"})
        assert (r.status_code, r.json()["error"]) == (409, GROUPS_CAP)
        assert await pipeline(c, [["XGROUP", "CREATE", "s", "j", "0"]]) == [GROUPS_CAP]

        assert await ok(c, "XGROUP", "CREATECONSUMER", "s", "g", "a") == 1
        assert await ok(c, "XREADGROUP", "GROUP", "g", "b", "COUNT", "1", "STREAMS", "s", ">")
        assert await ok(c, "XGROUP", "CREATECONSUMER", "s", "g", "a") == 0
        refused = (400, {"error": CONSUMERS_CAP})
        for argv in (
            ["XGROUP", "CREATECONSUMER", "s", "g", "c"],
            ["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"],
            ["XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", "0"],
            ["XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "BLOCK", "10", "STREAMS", "s", ">"],
            ["XCLAIM", "s", "g", "c", "0", "1-1"],
            ["XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", "1"],
            ["XAUTOCLAIM", "s", "g", "c", "0", "0"],  # COUNT 100: past the reply limit
        ):
            assert await cmd(c, *argv) == refused, argv
        got = await pipeline(
            c,
            [
                ["XCLAIM", "s", "g", "c", "0", "1-1"],
                ["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0"],
            ],
        )
        assert got == [CONSUMERS_CAP, CONSUMERS_CAP]
        for method, path, body in (
            ("PUT", "/v1/streams/s/groups/g/consumers/c", None),
            ("POST", "/v1/streams/s/groups/g/consumers/c/reads", {"id": ">"}),
            (
                "POST",
                "/v1/streams/s/groups/g/claims",
                {"consumer": "c", "min_idle_ms": 0, "ids": ["1-1"]},
            ),
            ("POST", "/v1/streams/s/groups/g/autoclaims", {"consumer": "c", "min_idle_ms": 0}),
        ):
            r = await c.request(method, path, json=body)
            assert (r.status_code, r.json()["error"]) == (409, CONSUMERS_CAP), path
        # Nothing changed: the same groups, consumers and pending entry.
        assert [row[1] for row in await ok(c, "XINFO", "GROUPS", "s")] == ["g", "h", "i"]
        assert [row[1] for row in await ok(c, "XINFO", "CONSUMERS", "s", "g")] == ["a", "b"]
        assert (await ok(c, "XPENDING", "s", "g"))[3] == [["b", "1"]]
        # A known consumer still reads and claims; another group still takes consumers.
        assert await ok(c, "XCLAIM", "s", "g", "a", "0", "1-1", "JUSTID") == ["1-1"]
        assert await ok(c, "XGROUP", "CREATECONSUMER", "s", "h", "c") == 1

        # RESTORE: a stream with too many groups, or a group with too many consumers.
        for payload, text in (
            (_payload(4, 0), "holds 4 consumer groups: at most 3 are allowed (max_stream_groups)"),
            (_payload(1, 3), "holds a group of 3 consumers: at most 2 are allowed"),
        ):
            error = f"ERR RESTORE payload {text}"
            status, body = await cmd(c, "RESTORE", "r", "0", payload)
            assert (status, body["error"][: len(error)]) == (400, error)
            assert await ok(c, "EXISTS", "r") == 0
            status, body = await cmd(c, "RESTORE", "s", "0", payload, "REPLACE")
            assert (status, body["error"][: len(error)]) == (400, error)
            assert await ok(c, "XLEN", "s") == 1  # the old stream is still there, whole
            assert [row[1] for row in await ok(c, "XINFO", "GROUPS", "s")] == ["g", "h", "i"]
        assert await ok(c, "RESTORE", "r", "0", _payload(3, 2)) == "OK"
