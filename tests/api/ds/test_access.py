"""/ds takes the credentials and grants of the other surfaces: each method is checked as the
Redis command it models (PUT/POST as XADD, GET/HEAD as XRANGE, a long poll as XREAD too,
DELETE as DEL) on the stream its path names."""

from __future__ import annotations

import asyncio
import time

import jwt

from app.engine.store import Store
from tests.api.inproc import serve
from tests.support.waiting import parked_async

SECRET = "a secret shared with the application, long enough"
TEXT = {"Content-Type": "text/plain"}


def bearer(**grants: list[str]) -> dict[str, str]:
    claims = {"sub": "u", "exp": int(time.time()) + 300, "xstreams": grants}
    return {"Authorization": "Bearer " + jwt.encode(claims, SECRET, algorithm="HS256")}


async def test_each_method_needs_its_verb_on_the_stream() -> None:
    writer = bearer(write=["orders*"], read=["orders*"])
    reader = bearer(read=["orders*"])
    elsewhere = bearer(write=["payments*"], read=["payments*"])
    async with serve(Store(), jwt_secret=SECRET) as ds:
        assert (await ds.put("/ds/orders", headers=TEXT)).status_code == 401
        assert (await ds.put("/ds/orders", headers={**TEXT, **elsewhere})).status_code == 403
        assert (await ds.put("/ds/orders", headers={**TEXT, **writer})).status_code == 201
        assert (
            await ds.post("/ds/orders", headers={**TEXT, **reader}, content=b"x")
        ).status_code == 403
        assert (
            await ds.post("/ds/orders", headers={**TEXT, **writer}, content=b"x")
        ).status_code == 204
        read = await ds.get("/ds/orders", headers=reader)
        assert (read.status_code, read.content) == (200, b"x")
        assert (await ds.head("/ds/orders", headers=elsewhere)).status_code == 403
        assert (await ds.delete("/ds/orders", headers=reader)).status_code == 403
        assert (await ds.get("/ds/orders", headers=writer)).status_code == 200


async def test_live_reads_count_against_the_credential_cap() -> None:
    writer = bearer(write=["orders*"], read=["orders*"])
    store = Store()
    async with serve(store, jwt_secret=SECRET, sse_max_connections_per_key=1) as ds:
        created = await ds.put("/ds/orders", headers={**TEXT, **writer})
        tail = created.headers["stream-next-offset"]
        poll = asyncio.create_task(
            ds.get("/ds/orders", params={"offset": tail, "live": "long-poll"}, headers=writer)
        )
        await parked_async(store, 1)  # the long poll holds its place under the cap
        for live in ("long-poll", "sse"):
            params = {"offset": tail, "live": live}
            refused = await ds.get("/ds/orders", params=params, headers=writer)
            assert (refused.status_code, refused.headers["retry-after"]) == (429, "1")
        await ds.post("/ds/orders", headers={"Stream-Closed": "true", **writer})
        assert (await asyncio.wait_for(poll, 5)).status_code == 204
        closed = await ds.get("/ds/orders", params={"offset": tail, "live": "sse"}, headers=writer)
        assert closed.status_code == 200  # the hold was given back
