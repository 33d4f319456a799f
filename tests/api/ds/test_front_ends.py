"""Durable Streams behind several front-ends in front of one Redis: a producer's sequence,
Stream-Seq and a close are decided once for the stream, not once per process
(``StreamsRole.append_guarded``; docs/durable-streams.md)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from app.api.ds import offsets
from app.engine.ids import parse_strict_id
from tests.support.targets import REDIS_PARAMS, Served, served_on

S = "/ds/v1/stream/fronts"
TEXT = {"Content-Type": "text/plain"}


@pytest.fixture(params=REDIS_PARAMS)
def served_redis(request: pytest.FixtureRequest, tmp_path: Path) -> Served:
    return served_on(request, request.param, tmp_path)


def producer(seq: int, epoch: int = 0) -> dict[str, str]:
    return {**TEXT, "Producer-Id": "p", "Producer-Epoch": str(epoch), "Producer-Seq": str(seq)}


async def bodies(client: httpx.AsyncClient) -> list[str]:
    read = await client.get(S, params={"offset": "-1"})
    assert read.status_code == 200
    return read.text.split(",") if read.text else []


async def test_a_retried_producer_append_lands_once_through_any_front_end(
    served_redis: Served,
) -> None:
    async with served_redis() as a, served_redis() as b:
        assert (await a.put(S, headers=TEXT)).status_code == 201
        for seq in range(12):
            # The producer sends each message to both front-ends at once (a retry that went
            # elsewhere): exactly one appends, the other is told it is a duplicate.
            body = f"m{seq},"
            sent = await asyncio.gather(
                a.post(S, headers=producer(seq), content=body),
                b.post(S, headers=producer(seq), content=body),
            )
            assert sorted(r.status_code for r in sent) == [200, 204], [r.text for r in sent]
        assert await bodies(a) == [f"m{i}" for i in range(12)] + [""]
        # A stale epoch is refused by the front-end that did not see the new one.
        assert (await a.post(S, headers=producer(0, epoch=1), content="e1,")).status_code == 200
        stale = await b.post(S, headers=producer(12, epoch=0), content="old,")
        assert stale.status_code == 403 and stale.headers["producer-epoch"] == "1"


async def test_stream_seq_is_accepted_once_across_front_ends(served_redis: Served) -> None:
    async with served_redis() as a, served_redis() as b:
        assert (await a.put(S, headers=TEXT)).status_code == 201
        for n in range(8):
            seq = {**TEXT, "Stream-Seq": f"{n:04d}"}
            sent = await asyncio.gather(
                a.post(S, headers=seq, content=f"a{n},"), b.post(S, headers=seq, content=f"b{n},")
            )
            assert sorted(r.status_code for r in sent) == [204, 409]
        assert len(await bodies(a)) == 8 + 1


async def test_nothing_lands_after_a_close_decided_elsewhere(served_redis: Served) -> None:
    async with served_redis() as a, served_redis() as b:
        assert (await a.put(S, headers=TEXT)).status_code == 201

        async def append(client: httpx.AsyncClient, n: int) -> httpx.Response:
            return await client.post(S, headers=TEXT, content=f"x{n},")

        appends = [append(a if n % 2 else b, n) for n in range(40)]
        close = b.post(S, headers={"Stream-Closed": "true"})
        replies = await asyncio.gather(*appends[:20], close, *appends[20:])
        closed = replies[20]
        assert closed.status_code == 204 and closed.headers["stream-closed"] == "true"
        final = closed.headers["stream-next-offset"]
        landed = [n for n, r in enumerate(replies[:20] + replies[21:]) if r.status_code == 204]
        refused = [r for r in replies[:20] + replies[21:] if r.status_code != 204]
        assert all(r.status_code == 409 for r in refused)
        assert sorted(await bodies(a))[1:] == sorted(f"x{n}" for n in landed)
        # The close's offset is the stream's last entry: nothing was appended after it.
        xrange = (
            await a.post("/", json=["XREVRANGE", "v1/stream/fronts", "+", "-", "COUNT", 1])
        ).json()
        last = xrange["result"]
        tail = (
            offsets.token(parse_strict_id(last[0][0]))
            if last
            else offsets.token(parse_strict_id("0-0"))
        )
        assert final == tail
        head = await b.head(S)
        assert head.headers["stream-next-offset"] == final
