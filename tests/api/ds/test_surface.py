"""The /ds surface on the embedded app in process: create, append, catch-up reads, HEAD,
DELETE, closure, long poll, idempotent producers, JSON mode (PROTOCOL.md section 5)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest

from app.engine.store import Store
from tests.api.inproc import serve
from tests.support.targets import SERVED_BY
from tests.support.waiting import parked_async

S = "/ds/v1/stream/orders"
TEXT = {"Content-Type": "text/plain"}


@pytest.fixture
async def ds() -> AsyncIterator[httpx.AsyncClient]:
    store = Store()
    async with serve(store) as client:
        SERVED_BY[client] = store  # parked_async counts the long polls parked in it
        yield client


async def test_create_append_read_head_delete(ds: httpx.AsyncClient) -> None:
    created = await ds.put(S, headers=TEXT, content=b"hello ")
    assert created.status_code == 201
    assert created.headers["content-type"] == "text/plain"
    assert created.headers["x-content-type-options"] == "nosniff"
    first = created.headers["stream-next-offset"]
    assert (await ds.put(S, headers=TEXT)).status_code == 200  # same configuration
    assert (await ds.put(S, headers={"Content-Type": "application/json"})).status_code == 409
    appended = await ds.post(S, headers=TEXT, content=b"world")
    assert appended.status_code == 204
    tail = appended.headers["stream-next-offset"]
    assert first < tail

    read = await ds.get(S)
    assert read.status_code == 200
    assert read.content == b"hello world"
    assert read.headers["stream-next-offset"] == tail
    assert read.headers["stream-up-to-date"] == "true"
    assert (await ds.get(S, params={"offset": first})).content == b"world"
    assert (await ds.get(S, params={"offset": tail})).content == b""
    again = await ds.get(S, headers={"If-None-Match": read.headers["etag"]})
    assert again.status_code == 304

    head = await ds.head(S)
    assert head.status_code == 200
    assert head.headers["stream-next-offset"] == tail
    assert head.headers["cache-control"] == "no-store"

    assert (await ds.delete(S)).status_code == 204
    assert (await ds.get(S)).status_code == 404
    assert (await ds.delete(S)).status_code == 404


async def test_refusals(ds: httpx.AsyncClient) -> None:
    assert (await ds.post(S, headers=TEXT, content=b"x")).status_code == 404
    headers = {**TEXT, "Stream-TTL": "60", "Stream-Expires-At": "2099-01-01T00:00:00Z"}
    assert (await ds.put(S, headers=headers)).status_code == 400
    assert (await ds.put(S, headers={**TEXT, "Stream-TTL": "060"})).status_code == 400
    await ds.put(S, headers=TEXT)
    assert (await ds.post(S, headers=TEXT)).status_code == 400  # empty body
    assert (await ds.post(S, headers={"Content-Type": "a/b"}, content=b"x")).status_code == 409
    assert (await ds.get(S, params={"offset": "1-0"})).status_code == 400
    assert (
        await ds.post(S, headers={**TEXT, "Stream-Seq": "002"}, content=b"a")
    ).status_code == 204
    assert (
        await ds.post(S, headers={**TEXT, "Stream-Seq": "001"}, content=b"b")
    ).status_code == 409


async def test_close(ds: httpx.AsyncClient) -> None:
    await ds.put(S, headers=TEXT, content=b"a")
    closed = await ds.post(S, headers={**TEXT, "Stream-Closed": "true"}, content=b"b")
    assert closed.status_code == 204
    assert closed.headers["stream-closed"] == "true"
    again = await ds.post(S, headers={"Stream-Closed": "true"})
    assert (again.status_code, again.headers["stream-closed"]) == (204, "true")
    refused = await ds.post(S, headers=TEXT, content=b"c")
    assert refused.status_code == 409
    assert refused.headers["stream-next-offset"] == closed.headers["stream-next-offset"]
    read = await ds.get(S)
    assert (read.content, read.headers["stream-closed"]) == (b"ab", "true")
    tail = read.headers["stream-next-offset"]
    poll = await ds.get(S, params={"offset": tail, "live": "long-poll"})
    assert (poll.status_code, poll.headers["stream-closed"]) == (204, "true")


async def test_long_poll_wakes_on_an_append_and_on_a_close(ds: httpx.AsyncClient) -> None:
    created = await ds.put(S, headers=TEXT)
    tail = created.headers["stream-next-offset"]
    params = {"offset": tail, "live": "long-poll"}
    waiting = asyncio.create_task(ds.get(S, params=params))
    await parked_async(ds, 1)
    await ds.post(S, headers=TEXT, content=b"news")
    got = await asyncio.wait_for(waiting, 5)
    assert (got.status_code, got.content) == (200, b"news")
    assert "stream-cursor" in got.headers

    params["offset"] = got.headers["stream-next-offset"]
    waiting = asyncio.create_task(ds.get(S, params=params))
    await parked_async(ds, 1)
    await ds.post(S, headers={"Stream-Closed": "true"})
    got = await asyncio.wait_for(waiting, 5)
    assert (got.status_code, got.headers["stream-closed"]) == (204, "true")


async def test_idempotent_producers(ds: httpx.AsyncClient) -> None:
    await ds.put(S, headers=TEXT)

    def producer(epoch: int, seq: int) -> dict[str, str]:
        return {**TEXT, "Producer-Id": "p", "Producer-Epoch": str(epoch), "Producer-Seq": str(seq)}

    assert (await ds.post(S, headers=producer(0, 0), content=b"a")).status_code == 200
    assert (await ds.post(S, headers=producer(0, 0), content=b"a")).status_code == 204  # retry
    gap = await ds.post(S, headers=producer(0, 2), content=b"c")
    assert gap.status_code == 409
    assert (gap.headers["producer-expected-seq"], gap.headers["producer-received-seq"]) == (
        "1",
        "2",
    )
    assert (await ds.post(S, headers=producer(1, 0), content=b"b")).status_code == 200
    stale = await ds.post(S, headers=producer(0, 1), content=b"zombie")
    assert (stale.status_code, stale.headers["producer-epoch"]) == (403, "1")
    partial = {**TEXT, "Producer-Id": "p"}
    assert (await ds.post(S, headers=partial, content=b"x")).status_code == 400
    assert (await ds.get(S)).content == b"ab"


async def test_json_mode_keeps_message_boundaries(ds: httpx.AsyncClient) -> None:
    json_type = {"Content-Type": "application/json"}
    await ds.put(S, headers=json_type, content=b"[]")
    assert (await ds.get(S)).content == b"[]"
    await ds.post(S, headers=json_type, content=b'[{"a":1},[2,3]]')
    await ds.post(S, headers=json_type, content=b'"x"')
    assert (await ds.get(S)).json() == [{"a": 1}, [2, 3], "x"]
    assert (await ds.post(S, headers=json_type, content=b"[]")).status_code == 400
    assert (await ds.post(S, headers=json_type, content=b"{nope")).status_code == 400


async def test_sse_sends_data_then_control_and_ends_on_close(ds: httpx.AsyncClient) -> None:
    await ds.put(S, headers=TEXT, content=b"one\ntwo")
    await ds.post(S, headers={"Stream-Closed": "true"})
    got = await ds.get(S, params={"offset": "-1", "live": "sse"})
    assert got.headers["content-type"] == "text/event-stream"
    assert got.text.startswith("event: data\ndata:one\ndata:two\n\nevent: control\n")
    assert '"streamClosed":true' in got.text


async def test_a_fork_shares_the_source_offsets_and_outlives_it(ds: httpx.AsyncClient) -> None:
    src, fork = "/ds/src", "/ds/fork"
    first = await ds.put(src, headers=TEXT, content=b"a")
    await ds.post(src, headers=TEXT, content=b"b")
    at = first.headers["stream-next-offset"]
    made = await ds.put(fork, headers={"Stream-Forked-From": "/src", "Stream-Fork-Offset": at})
    assert (made.status_code, made.headers["stream-next-offset"]) == (201, at)
    await ds.post(fork, headers=TEXT, content=b"c")
    assert (await ds.get(fork)).content == b"ac"
    assert (await ds.get(src)).content == b"ab"
    assert (await ds.delete(src)).status_code == 204  # soft: the fork names it
    assert (await ds.get(src)).status_code == 410
    assert (await ds.put(src, headers=TEXT)).status_code == 409
    assert (await ds.delete(fork)).status_code == 204  # the last fork: the source goes too
    assert (await ds.get(src)).status_code == 404


async def test_a_body_past_the_limit_is_413() -> None:
    async with serve(Store(), max_body_bytes=10) as ds:
        assert (await ds.put(S, headers=TEXT, content=b"x" * 11)).status_code == 413
        await ds.put(S, headers=TEXT)
        assert (await ds.post(S, headers=TEXT, content=b"x" * 11)).status_code == 413
        assert (await ds.post(S, headers=TEXT, content=b"x" * 10)).status_code == 204


async def test_an_entry_without_a_body_reads_as_null_in_a_json_stream(
    ds: httpx.AsyncClient,
) -> None:
    await ds.put(S, headers={"Content-Type": "application/json"}, content=b"[1]")
    r = await ds.post("/", json=["XADD", "v1/stream/orders", "*", "other", "field"])
    assert r.status_code == 200, r.text
    assert (await ds.get(S)).json() == [1, None]
