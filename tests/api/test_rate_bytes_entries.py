"""Bytes appended and entries read per credential on the three targets (app/api/meter.py,
spent by app/api/metered.py): every surface spends one budget, an append past it is refused
whole, a read past it is refused until its debt is repaid, front-ends in front of one Redis
share it, and the admin is not held unless the settings say."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.api.test_rates import ADMIN, SECRET, bearer
from tests.support.targets import REDIS_PARAMS, TARGET_PARAMS, Served, served_on

TEXT = {"Content-Type": "text/plain"}


@pytest.fixture(params=TARGET_PARAMS)
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Served:
    return served_on(request, request.param, tmp_path)


async def _length(c: object, key: str) -> int:
    r = await c.post("/", json=["XLEN", key], headers=ADMIN)  # type: ignore[attr-defined]
    assert r.status_code == 200, r.text
    n: int = r.json()["result"]
    return n


async def test_an_append_past_the_bytes_budget_is_refused_whole(served: Served) -> None:
    alice = bearer("alice", {"bytes": "100/min"})  # 100 bytes, then 100 a minute
    async with served(token="admin", jwt_secret=SECRET) as c:
        ok = await c.post("/", json=["XADD", "s", "*", "name", "0123456789"], headers=alice)
        assert ok.status_code == 200, ok.text  # 4 + 10 bytes
        assert ok.headers["ratelimit-policy"] == '"bytes";q=100;w=60'
        assert ok.headers["ratelimit"].startswith('"bytes";r=86;t=')
        # A REST batch of 3 x 30 bytes does not fit the 86 left: none of it is written.
        batch = {"entries": [{"fields": {"f": "v" * 29}} for _ in range(3)]}
        refused = await c.post("/v1/streams/s/entries", json=batch, headers=alice)
        assert refused.status_code == 429, refused.text
        assert refused.json()["error"].startswith("ERR too many bytes appended")
        assert int(refused.headers["retry-after"]) >= 1
        assert refused.headers["ratelimit"].startswith('"bytes";r=86;')
        assert await _length(c, "s") == 1
        # A pipeline and a transaction are spent whole before any line runs.
        lines = [["XADD", "s", "*", "f", "v" * 44]] * 2  # 90: within the burst, not the 86
        for path in ("/pipeline", "/multi-exec"):
            r = await c.post(path, json=lines, headers=alice)
            assert r.status_code == 429, r.text
            assert r.json()["error"].startswith("ERR too many bytes appended")
        assert await _length(c, "s") == 1
        # What fits passes: XADD with options counts its fields only.
        fits = ["XADD", "s", "MAXLEN", "~", "1000", "*", "f", "v" * 80]
        assert (await c.post("/", json=fits, headers=alice)).status_code == 200
        assert await _length(c, "s") == 2
        # More than the whole burst can never pass: a plain error, no Retry-After.
        never = await c.post("/", json=["XADD", "s", "*", "f", "v" * 100], headers=alice)
        assert never.status_code == 400 and "retry-after" not in never.headers
        assert "larger than this credential's burst" in never.json()["error"]
        # Another credential and the admin are not held by alice's budget.
        big = ["XADD", "s", "*", "f", "v" * 500]
        assert (await c.post("/", json=big, headers=bearer("bob"))).status_code == 200
        assert (await c.post("/", json=big, headers=ADMIN)).status_code == 200


async def test_a_durable_streams_append_spends_the_same_budget(served: Served) -> None:
    alice = bearer("alice", {"bytes": "200/min"})
    async with served(token="admin", jwt_secret=SECRET) as c:
        assert (await c.put("/ds/d", headers={**TEXT, **alice})).status_code == 201
        small = await c.post("/ds/d", headers={**TEXT, **alice}, content=b"x" * 10)
        assert small.status_code == 204, small.text
        # Each record is its body under field names: 26 bytes and the body's.
        big = await c.post("/ds/d", headers={**TEXT, **alice}, content=b"x" * 150)
        assert big.status_code == 429, big.text
        assert big.text.startswith("ERR too many bytes appended")
        assert "retry-after" in big.headers
        read = await c.get("/ds/d", headers=ADMIN)
        assert read.content == b"x" * 10  # the refused body is not there


async def test_a_read_past_the_entries_budget_is_served_then_the_next_refused(
    served: Served,
) -> None:
    alice = bearer("alice", {"entries": "5/min"})
    async with served(token="admin", jwt_secret=SECRET) as c:
        adds = [["XADD", "s", "*", "n", str(i)] for i in range(8)]
        assert (await c.post("/pipeline", json=adds, headers=ADMIN)).status_code == 200
        # A page of 8 is served whole (5 in the burst, 3 owed) ...
        page = await c.post("/", json=["XRANGE", "s", "-", "+"], headers=alice)
        assert page.status_code == 200 and len(page.json()["result"]) == 8
        assert page.headers["ratelimit"].startswith('"entries";r=0;')
        # ... and every read after it is refused before it runs, on every surface.
        for r in (
            await c.post("/", json=["XREVRANGE", "s", "+", "-", "COUNT", "1"], headers=alice),
            await c.post("/pipeline", json=[["XREAD", "STREAMS", "s", "0"]], headers=alice),
            await c.get("/v1/streams/s/entries", headers=alice),
        ):
            assert r.status_code == 429, r.text
            assert int(r.headers["retry-after"]) >= 36  # 3 owed and one more, 12 s each
        refused = await c.post("/", json=["XRANGE", "s", "-", "+"], headers=alice)
        assert refused.json()["error"].startswith("ERR too many entries read")
        # Writing is not reading: alice may still append.
        assert (await c.post("/", json=adds[0], headers=alice)).status_code == 200
        # The admin is not held by it.
        assert (await c.get("/v1/streams/s/entries", headers=ADMIN)).status_code == 200


async def test_rest_pages_and_durable_streams_reads_spend_entries(served: Served) -> None:
    alice = bearer("alice", {"entries": "3/min"})
    async with served(token="admin", jwt_secret=SECRET) as c:
        adds = [["XADD", "s", "*", "n", str(i)] for i in range(3)]
        assert (await c.post("/pipeline", json=adds, headers=ADMIN)).status_code == 200
        page = await c.get("/v1/streams/s/entries", params={"count": 2}, headers=alice)
        assert page.status_code == 200, page.text
        assert page.headers["ratelimit"].startswith('"entries";r=1;')
        assert (await c.put("/ds/d", headers={**TEXT, **ADMIN})).status_code == 201
        for body in (b"a", b"b"):
            await c.post("/ds/d", headers={**TEXT, **ADMIN}, content=body)
        first = await c.get("/ds/d", headers=alice)  # 2 records: 1 left, then owes 1
        assert first.status_code == 200 and first.content == b"ab"
        again = await c.get("/ds/d", headers=alice)
        assert again.status_code == 429, again.text
        assert again.text.startswith("ERR too many entries read")


async def test_settings_hold_keys_and_tokens_and_the_admin_only_when_told(
    served: Served,
) -> None:
    settings = {
        "token": "admin",
        "jwt_secret": SECRET,
        "rate_bytes": "20/min",
        "rate_entries_admin": "1/min",
    }
    async with served(**settings) as c:
        add = ["XADD", "s", "*", "field", "value-past-10"]
        bob = [(await c.post("/", json=add, headers=bearer("bob"))).status_code for _ in "ab"]
        assert bob == [200, 429]  # 18 bytes each
        own = bearer("carol", {"bytes": "1000/min"})  # her own rate over the default
        assert (await c.post("/", json=add, headers=own)).status_code == 200
        assert (await c.post("/", json=add, headers=ADMIN)).status_code == 200
        reads = [
            (await c.post("/", json=["XRANGE", "s", "-", "+"], headers=ADMIN)).status_code
            for _ in range(3)
        ]
        assert reads == [200, 429, 429]
        text = (await c.get("/metrics", headers={"Authorization": "Bearer admin"})).text
        assert 'credential="jwt:bob",limit="bytes"} 1.0' in text


async def test_whoami_tells_each_limit_and_what_is_left(served: Served) -> None:
    limits = {"requests": "100/min", "bytes": "1k/min", "entries": "10/min"}
    alice = bearer("alice", limits)
    async with served(token="admin", jwt_secret=SECRET, rate_entries="50/min") as c:
        await c.post("/", json=["XADD", "s", "*", "ab", "cdefgh"], headers=alice)  # 8 bytes
        await c.post("/", json=["XRANGE", "s", "-", "+"], headers=alice)  # 1 entry
        me = (await c.get("/v1/whoami", headers=alice)).json()
        told = {row["policy"]: (row["rate"], row["remaining"]) for row in me["limits"]}
        assert told == {
            "requests": ("100/min", 97),
            "bytes": ("1000/min", 992),
            "entries": ("10/min", 9),
        }
        assert me["rate"] == "100/min"
        bob = (await c.get("/v1/whoami", headers=bearer("bob"))).json()
        assert [(r["policy"], r["remaining"]) for r in bob["limits"]] == [("entries", 50)]
        assert (await c.get("/v1/whoami", headers=ADMIN)).json()["limits"] == []


@pytest.fixture(params=REDIS_PARAMS)
def served_redis(request: pytest.FixtureRequest, tmp_path: Path) -> Served:
    return served_on(request, request.param, tmp_path)


async def test_front_ends_in_front_of_one_redis_share_bytes_and_entries(
    served_redis: Served,
) -> None:
    alice = bearer("alice", {"bytes": "40/min", "entries": "2/min"})
    settings = {"token": "admin", "jwt_secret": SECRET}
    async with served_redis(**settings) as a, served_redis(**settings) as b:
        add = ["XADD", "s", "*", "f", "v" * 14]  # 15 bytes
        codes = [(await c.post("/", json=add, headers=alice)).status_code for c in (a, b, a)]
        assert codes == [200, 200, 429]
        read = ["XRANGE", "s", "-", "+"]  # 2 entries: the whole burst
        assert (await a.post("/", json=read, headers=alice)).status_code == 200
        assert (await b.post("/", json=read, headers=alice)).status_code == 429


async def test_the_admin_lists_every_key_held_to_a_limit_with_what_is_left() -> None:
    """What the dashboard's usage panel shows the admin (GET /v1/whoami/keys)."""
    import httpx

    from app.access import Grant
    from app.access.rates import CredentialLimits, Rate
    from app.engine.store import Store
    from app.main import create_app
    from app.settings import Settings
    from tests.access.test_credentials import key_record

    limits = CredentialLimits(bytes=Rate.parse("1k/h"))
    metered, text = key_record("metered", grant=Grant.of(write=["*"]), limits=limits)
    plain, _ = key_record("plain", grant=Grant.of(read=["*"]))
    app = create_app(Settings(token="admin", rate_entries="50/h"), store=Store())
    app.state.services.access.keys.replace([metered, plain])
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://xs") as c:
        key = {"Authorization": f"Bearer {text}"}
        added = await c.post("/", json=["XADD", "s", "*", "ab", "cdefgh"], headers=key)
        assert added.status_code == 200, added.text
        listed = await c.get("/v1/whoami/keys", headers=ADMIN)
        assert listed.status_code == 200, listed.text
        got = {
            k["name"]: [(u["policy"], u["rate"], u["remaining"]) for u in k["limits"]]
            for k in listed.json()["keys"]
        }
        assert got == {
            "metered": [("bytes", "1000/h", 992), ("entries", "50/h", 50)],
            "plain": [("entries", "50/h", 50)],  # the settings' default holds it
        }
        refused = await c.get("/v1/whoami/keys", headers=key)
        assert refused.status_code == 403
