"""The command endpoint's limits: each refused whole with an ``ERR`` naming the limit.

Before them, a 16 MB pipeline of PINGs held the event loop for 10.8 s, an unbounded XRANGE on
200k entries 2.4 s, and 20 blocked XREADs naming 100k keys each made one XADD take 2.6 s.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest

from app.engine.store import Store
from tests.api.inproc import serve
from tests.engine.payloads import tombstones
from tests.support.targets import TARGET_PARAMS, Served, served_on
from tests.support.waiting import parked_async


@pytest.fixture(params=TARGET_PARAMS)
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Served:
    """The embedded app in process, or a front-end on a Redis target, with the test's limits:
    the same refusals either way (RedisBackend enforces the engine's limits)."""
    return served_on(request, request.param, tmp_path)


async def _post(client: httpx.AsyncClient, path: str, body: object) -> tuple[int, object]:
    r = await client.post(path, json=body)
    return r.status_code, r.json()


async def test_pipeline_and_transaction_length() -> None:
    """More commands than ``max_pipeline_commands`` is a 400 before any runs."""
    async with serve(max_pipeline_commands=3) as c:
        ok = [["XADD", "s", "*", "f", "v"]] * 3
        assert (await c.post("/pipeline", json=ok)).status_code == 200
        for path in ("/pipeline", "/multi-exec"):
            status, body = await _post(c, path, [*ok, ["PING"]])
            assert status == 400
            assert body == {
                "error": "ERR too many commands: 4, at most 3 per request "
                "(max_pipeline_commands); send them in several requests"
            }
        assert (await _post(c, "/", ["XLEN", "s"]))[1] == {"result": 3}  # nothing else ran


async def test_arguments_per_command() -> None:
    async with serve(max_command_args=4) as c:
        assert (await _post(c, "/", ["XADD", "s", "*", "f"]))[0] == 400  # arity, Redis's error
        status, body = await _post(c, "/", ["XADD", "s", "*", "f", "v"])
        assert status == 400
        assert body == {
            "error": "ERR too many arguments: 5, at most 4 per command (max_command_args)"
        }
        status, body = await _post(c, "/pipeline", [["PING"], ["XADD", "s", "*", "f", "v"]])
        assert status == 400 and "max_command_args" in body["error"]  # type: ignore[index]


async def test_keys_per_read(served: Served) -> None:
    """XREAD / XREADGROUP naming more streams than ``max_read_keys``: refused, nothing parked."""
    async with served(max_read_keys=3) as c:
        keys = ["a", "b", "c", "d"]
        for argv in (
            ["XREAD", "BLOCK", "0", "STREAMS", *keys, *["$"] * 4],
            ["XREADGROUP", "GROUP", "g", "c", "STREAMS", *keys, *[">"] * 4],
        ):
            status, body = await _post(c, "/", argv)
            assert status == 400
            assert body == {
                "error": f"ERR too many keys: {argv[0]} names 4 streams, at most 3 are "
                "allowed (max_read_keys)"
            }
        status, body = await _post(c, "/", ["XREAD", "STREAMS", *keys[:3], "0", "0", "0"])
        assert (status, body) == (200, {"result": None})


async def test_reply_entries(served: Served) -> None:
    """A range or read that would answer more than ``max_reply_entries`` asks for COUNT."""
    async with served(max_reply_entries=5) as c:
        await _post(c, "/pipeline", [["XADD", "s", f"{i}-1", "f", "v"] for i in range(1, 7)])
        await _post(c, "/", ["XGROUP", "CREATE", "s", "g", "0"])
        too_large = (
            "reply would hold more than 5 entries (max_reply_entries): read it in pages "
            "with COUNT 5 or less"
        )
        for argv in (
            ["XRANGE", "s", "-", "+"],
            ["XREVRANGE", "s", "+", "-", "COUNT", "100"],
            ["XREAD", "STREAMS", "s", "0"],
            ["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">"],
        ):
            status, body = await _post(c, "/", argv)
            assert (status, body) == (400, {"error": f"ERR {argv[0]} {too_large}"})
        # Nothing was delivered by the refused XREADGROUP.
        assert (await _post(c, "/", ["XPENDING", "s", "g"]))[1] == {"result": [0, None, None, None]}
        for argv in (
            ["XRANGE", "s", "-", "+", "COUNT", "5"],
            ["XRANGE", "s", "(1-1", "+"],
            ["XREAD", "COUNT", "5", "STREAMS", "s", "0"],
            ["XREADGROUP", "GROUP", "g", "alice", "COUNT", "5", "STREAMS", "s", ">"],
        ):
            status, body = await _post(c, "/", argv)
            assert status == 200, body


async def test_a_pipeline_lets_other_requests_run() -> None:
    """A long pipeline (not atomic) yields: a request sent while it runs is answered before
    it ends, seeing part of its writes."""
    store = Store()
    async with serve(store, pipeline_slice_ms=1) as c:
        n = 5000
        woken = asyncio.create_task(c.post("/", json=["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]))
        await parked_async(store, 1)  # the first XADD will serve it
        pipeline = asyncio.create_task(c.post("/pipeline", json=[["XADD", "s", "*", "f", "v"]] * n))
        await woken  # served by the pipeline's first XADD, while the pipeline runs
        status, body = await _post(c, "/", ["XLEN", "s"])
        assert status == 200
        assert 0 < body["result"] < n  # type: ignore[index]
        assert (await pipeline).status_code == 200


async def test_reply_entries_of_pending_claims_and_full_info(served: Served) -> None:
    """XPENDING, XAUTOCLAIM and XINFO STREAM FULL are bounded too, refused before claiming."""
    async with served(max_reply_entries=5) as c:
        await _post(c, "/pipeline", [["XADD", "s", f"{i}-1", "f", "v"] for i in range(1, 8)])
        await _post(c, "/", ["XGROUP", "CREATE", "s", "g", "0"])
        await _post(c, "/", ["XREADGROUP", "GROUP", "g", "a", "COUNT", "5", "STREAMS", "s", ">"])
        await _post(c, "/", ["XREADGROUP", "GROUP", "g", "a", "COUNT", "5", "STREAMS", "s", ">"])
        for argv, name in (
            (["XPENDING", "s", "g", "-", "+", "100"], "XPENDING"),
            (["XAUTOCLAIM", "s", "g", "b", "0", "0", "COUNT", "100"], "XAUTOCLAIM"),
            (["XINFO", "STREAM", "s", "FULL", "COUNT", "0"], "XINFO STREAM FULL"),
            (["XINFO", "STREAM", "s", "FULL", "COUNT", "6"], "XINFO STREAM FULL"),
        ):
            status, body = await _post(c, "/", argv)
            assert status == 400, body
            assert body["error"].startswith(f"ERR {name} reply would hold more than 5")  # type: ignore[index]
        # Nothing was claimed by the refused XAUTOCLAIM.
        status, body = await _post(c, "/", ["XINFO", "CONSUMERS", "s", "g"])
        assert [row[1] for row in body["result"]] == ["a"]  # type: ignore[index]
        for argv in (
            ["XPENDING", "s", "g", "-", "+", "5"],
            ["XPENDING", "s", "g", "(5-1", "+", "100"],
            ["XAUTOCLAIM", "s", "g", "b", "0", "3-1", "COUNT", "100"],
            ["XINFO", "STREAM", "s", "FULL", "COUNT", "5"],
        ):
            status, body = await _post(c, "/", argv)
            assert status == 200, (argv, body)


TOO_LARGE_5 = (
    "reply would hold more than 5 entries (max_reply_entries): read it in pages with COUNT 5 "
    "or less"
)


async def _pending(c: httpx.AsyncClient, key: str = "s") -> list[list[object]]:
    """XPENDING's rows for group ``g``: ID, consumer, idle, deliveries (idle dropped)."""
    _, body = await _post(c, "/", ["XPENDING", key, "g", "-", "+", "100"])
    return [[r[0], r[1], r[3]] for r in body["result"]]  # type: ignore[index]


async def test_reply_entries_in_pipelines_and_transactions(served: Served) -> None:
    """In a pipeline or a transaction, a refused command is that command's error alone; the
    others run, and a refused XREADGROUP delivers nothing."""
    async with served(max_reply_entries=5, max_read_keys=3) as c:
        await _post(c, "/pipeline", [["XADD", "s", f"{i}-1", "f", "v"] for i in range(1, 7)])
        await _post(c, "/", ["XGROUP", "CREATE", "s", "g", "0"])
        for path in ("/pipeline", "/multi-exec"):
            status, body = await _post(
                c,
                path,
                [
                    ["XRANGE", "s", "-", "+"],
                    ["XLEN", "s"],
                    ["XREAD", "STREAMS", "s", "0"],
                    ["XREADGROUP", "GROUP", "g", "a", "STREAMS", "s", ">"],
                    ["XPENDING", "s", "g", "-", "+", "10"],
                    ["XREAD", "STREAMS", "s", "s", "s", "s", "0", "0", "0", "0"],
                    ["XRANGE", "s", "-", "+", "COUNT", "2"],
                ],
            )
            assert status == 200, body
            assert body == [  # nothing was delivered, so nothing is pending
                {"error": f"ERR XRANGE {TOO_LARGE_5}"},
                {"result": 6},
                {"error": f"ERR XREAD {TOO_LARGE_5}"},
                {"error": f"ERR XREADGROUP {TOO_LARGE_5}"},
                {"result": []},
                {
                    "error": "ERR too many keys: XREAD names 4 streams, at most 3 are allowed "
                    "(max_read_keys)"
                },
                {"result": [["1-1", ["f", "v"]], ["2-1", ["f", "v"]]]},
            ], path
        # Within the limit, XREADGROUP delivers as it always does (through the check).
        status, body = await _post(
            c,
            "/multi-exec",
            [["XDEL", "s", "1-1"], ["XREADGROUP", "GROUP", "g", "a", "STREAMS", "s", ">"]],
        )
        assert status == 200 and len(body[1]["result"][0][1]) == 5, body  # type: ignore[index]


async def test_group_history_and_several_streams_count_together(served: Served) -> None:
    """A history read (an ID, not ``>``) past the limit is refused before it counts a
    delivery; several streams' parts add up, also over cluster slots."""
    async with served(max_reply_entries=5) as c:
        adds = [["XADD", k, f"{i}-1", "f", "v"] for k in ("s", "t") for i in range(1, 4)]
        await _post(c, "/pipeline", adds)
        for k in ("s", "t"):
            await _post(c, "/", ["XGROUP", "CREATE", k, "g", "0"])
        both = ["STREAMS", "s", "t"]
        for argv in (
            ["XREAD", *both, "0", "0"],
            ["XREAD", "COUNT", "3", *both, "0", "0"],
            ["XREADGROUP", "GROUP", "g", "a", *both, ">", ">"],
        ):
            status, body = await _post(c, "/", argv)
            assert (status, body) == (400, {"error": f"ERR {argv[0]} {TOO_LARGE_5}"}), argv
        assert await _pending(c, "s") == [] and await _pending(c, "t") == []
        status, body = await _post(
            c, "/", ["XREADGROUP", "GROUP", "g", "a", "COUNT", "2", *both, ">", ">"]
        )
        assert status == 200 and [len(r[1]) for r in body["result"]] == [2, 2]  # type: ignore[index]
        await _post(c, "/", ["XREADGROUP", "GROUP", "g", "a", "COUNT", "1", *both, ">", ">"])
        before = await _pending(c, "s") + await _pending(c, "t")
        assert [row[2] for row in before] == [1] * 6
        argv = ["XREADGROUP", "GROUP", "g", "a", *both, "0", "0"]
        status, body = await _post(c, "/", argv)
        assert (status, body) == (400, {"error": f"ERR XREADGROUP {TOO_LARGE_5}"})
        assert await _pending(c, "s") + await _pending(c, "t") == before  # not counted
        status, body = await _post(c, "/", ["XREADGROUP", "GROUP", "g", "a", *both, "1-1", "0"])
        assert status == 200 and [len(r[1]) for r in body["result"]] == [2, 3]  # type: ignore[index]


async def test_reply_entries_of_rest_reads(served: Served) -> None:
    """The REST read (XREAD under it) is bounded as the command is, with the same problem."""
    async with served(max_reply_entries=5) as c:
        await _post(
            c, "/pipeline", [["XADD", k, f"{i}-1", "f", "v"] for k in "st" for i in (1, 2, 3)]
        )
        params = [("stream", "s"), ("stream", "t"), ("after", "0"), ("count", "3")]
        r = await c.get("/v1/read", params=params)
        assert r.status_code == 400, r.text
        assert r.json()["error"] == f"ERR XREAD {TOO_LARGE_5}"
        r = await c.get("/v1/read", params=[*params[:3], ("count", "2")])
        assert r.status_code == 200
        assert [len(s["entries"]) for s in r.json()["streams"]] == [2, 2]


async def test_a_blocked_group_read_is_served_within_the_limit(served: Served) -> None:
    """XREADGROUP ``>`` BLOCK with nothing to serve waits; what wakes it is at most the
    limit (the embedded refuses past it, Redis is asked for no more)."""
    async with served(max_reply_entries=5) as c:
        await _post(c, "/", ["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"])
        argv = ["XREADGROUP", "GROUP", "g", "a", "BLOCK", "5000", "STREAMS", "s", ">"]
        woken = asyncio.create_task(_post(c, "/", argv))
        await parked_async(c, 1)
        await _post(c, "/", ["XADD", "s", "1-1", "f", "v"])
        status, body = await woken
        assert (status, body) == (200, {"result": [["s", [["1-1", ["f", "v"]]]]]})


async def test_restore_and_dump_within_their_limits() -> None:
    """The settings reach RESTORE and DUMP: the issue's payload (800,000 tombstones in
    ~100 KB of LZF) and a node past ``max_restore_node_entries`` are 400s naming the limit,
    nothing restored; DUMP past ``max_restore_bytes`` too."""

    async def restore(c: httpx.AsyncClient, key: str, payload: bytes) -> tuple[int, object]:
        argv = ["RESTORE", key, "0", payload.decode("utf-8", "surrogateescape")]
        r = await c.post("/", content=json.dumps(argv).encode())  # \udcNN for raw bytes
        return r.status_code, r.json()

    async with serve(max_restore_bytes=200_000, max_restore_node_entries=100) as c:
        assert await restore(c, "s", tombstones(800_000, compressed=True)) == (
            400,
            {"error": "ERR Bad data format: the payload expands past 200000 bytes "
             "(max_restore_bytes)"},
        )  # fmt: skip
        assert await restore(c, "s", tombstones(100, compressed=True)) == (
            400,
            {"error": "ERR Bad data format: a node holds more than 100 entries, deleted ones "
             "included (max_restore_node_entries)"},
        )  # fmt: skip
        assert (await _post(c, "/", ["EXISTS", "s"]))[1] == {"result": 0}
        assert await restore(c, "s", tombstones(99, compressed=True)) == (200, {"result": "OK"})
        await _post(c, "/pipeline", [["XADD", "big", "*", "f", "v" * 100]] * 2500)
        assert await _post(c, "/", ["DUMP", "big"]) == (
            400,
            {"error": "ERR DUMP payload would be larger than 200000 bytes (max_restore_bytes)"},
        )
