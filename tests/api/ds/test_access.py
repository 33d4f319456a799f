"""/ds takes the credentials and grants of the other surfaces: each method is checked as the
Redis command it models (PUT/POST as XADD, GET/HEAD as XRANGE, a long poll as XREAD too,
DELETE as DEL) on the stream its path names."""

from __future__ import annotations

import time

import jwt

from app.engine.store import Store
from tests.api.inproc import serve

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
