"""The permission matrix: every operation of the three surfaces against every kind of caller.

Callers: none (401); a key that holds every verb but the one needed (403, the command is
refused); a key holding the verb on another glob (403, the key is refused); a key holding it
(served); an expired key and a revoked key (401); a JWT holding the verb (served) and one
holding it elsewhere (403). Refusals come in each surface's own shape — Redis's NOPERM text on
the command endpoint, a problem document on REST and SSE — and never change anything: the
state after a refused operation is exactly the state before it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import httpx
import jwt
import pytest

from app.access import Grant, KeyRecord, Verb, hash_secret, new_key
from app.engine.delivery import DeadLetter, DeliveryPolicy, Retention, Webhook, dead_letter_fields
from app.engine.ids import StreamID
from app.engine.store import Store
from app.main import create_app
from app.settings import Settings

SECRET = "a secret shared with the application, long enough"
HOOK_SECRET = "whsec_MDEyMzQ1Njc4OWFiY2RlZg=="
VERBS = ("read", "consume", "write")
NO_CMD = "NOPERM this user has no permissions to run the '{}' command"
NO_KEY = "NOPERM this user has no permissions to access one of the keys used as arguments"


@dataclass
class Op:
    """One operation: the surface, the request, the verb it needs."""

    name: str
    verb: str  # read / consume / write / consume+write / admin, or list (SCAN: narrowed)
    method: str
    path: str
    json: Any = None
    params: dict[str, Any] = field(default_factory=dict)
    command: str | None = None  # the command endpoint's command name, for NOPERM's text

    @property
    def surface(self) -> str:
        return "commands" if self.command else ("sse" if "events" in self.path else "rest")


def cmd(verb: str, *argv: str, name: str | None = None) -> Op:
    full = name or argv[0].lower()
    return Op(f"/ {' '.join(argv[:3])}", verb, "POST", "/", json=list(argv), command=full)


OPS = [
    # The command endpoint: every command that touches a stream, and the keyspace ones.
    cmd("read", "XRANGE", "orders", "-", "+"),
    cmd("read", "XREVRANGE", "orders", "+", "-"),
    cmd("read", "XLEN", "orders"),
    cmd("read", "XREAD", "STREAMS", "orders", "0"),
    cmd("read", "XINFO", "STREAM", "orders", name="xinfo|stream"),
    cmd("read", "XINFO", "GROUPS", "orders", name="xinfo|groups"),
    cmd("read", "XINFO", "CONSUMERS", "orders", "g", name="xinfo|consumers"),
    cmd("read", "EXISTS", "orders"),
    cmd("read", "TYPE", "orders"),
    cmd("consume", "XREADGROUP", "GROUP", "g", "c", "STREAMS", "orders", ">"),
    cmd("consume", "XACK", "orders", "g", "1-1"),
    cmd("consume", "XPENDING", "orders", "g"),
    cmd("consume", "XCLAIM", "orders", "g", "bob", "0", "1-1"),
    cmd("consume", "XAUTOCLAIM", "orders", "g", "bob", "0", "0"),
    cmd("consume", "XNACK", "orders", "g", "FAIL", "IDS", "1", "1-1"),
    cmd("consume+write", "XACKDEL", "orders", "g", "IDS", "1", "1-1"),
    cmd("write", "XADD", "orders", "*", "f", "v"),
    cmd("write", "XADD", "orders", "IDMP", "p", "i", "*", "f", "v"),
    cmd("write", "XCFGSET", "orders", "IDMP-MAXSIZE", "5"),
    cmd("write", "XDEL", "orders", "2-2"),
    cmd("write", "XDELEX", "orders", "ACKED", "IDS", "1", "2-2"),
    cmd("write", "XTRIM", "orders", "MAXLEN", "100"),
    cmd("write", "XSETID", "orders", "9-9"),
    cmd("write", "DEL", "orders"),
    cmd("write", "XGROUP", "CREATE", "orders", "g2", "$", name="xgroup|create"),
    cmd("write", "XGROUP", "SETID", "orders", "g", "0", name="xgroup|setid"),
    cmd("write", "XGROUP", "DESTROY", "orders", "g", name="xgroup|destroy"),
    cmd("write", "XGROUP", "CREATECONSUMER", "orders", "g", "c2", name="xgroup|createconsumer"),
    cmd("write", "XGROUP", "DELCONSUMER", "orders", "g", "c", name="xgroup|delconsumer"),
    cmd("list", "SCAN", "0"),
    cmd("admin", "KEYS", "*"),
    cmd("admin", "DBSIZE"),
    cmd("admin", "FLUSHALL"),
    # REST.
    Op("list_streams", "list", "GET", "/v1/streams"),
    Op("get_stream", "read", "GET", "/v1/streams/orders"),
    Op("delete_stream", "write", "DELETE", "/v1/streams/orders"),
    Op("trim_stream", "write", "POST", "/v1/streams/orders/trim", {"maxlen": 100}),
    Op("set_last_id", "write", "PUT", "/v1/streams/orders/last-id", {"last_id": "9-9"}),
    Op("configure_stream", "write", "PUT", "/v1/streams/orders/config", {"idmp_maxsize": 5}),
    Op("append_entries", "write", "POST", "/v1/streams/orders/entries", {"fields": {"f": "v"}}),
    Op(
        "append_entries",
        "write",
        "POST",
        "/v1/streams/orders/entries",
        {"fields": {"f": "v"}, "producer": "p", "idempotent_id": "i"},
    ),
    Op("list_entries", "read", "GET", "/v1/streams/orders/entries"),
    Op("get_entry", "read", "GET", "/v1/streams/orders/entries/1-1"),
    Op("delete_entry", "write", "DELETE", "/v1/streams/orders/entries/2-2"),
    Op("delete_entries", "write", "DELETE", "/v1/streams/orders/entries", params={"id": "2-2"}),
    Op(
        "delete_entries",
        "write",
        "DELETE",
        "/v1/streams/orders/entries",
        params={"id": "2-2", "policy": "DELREF"},
    ),
    Op("read_streams", "read", "GET", "/v1/read", params={"stream": "orders", "after": "0"}),
    Op("list_groups", "read", "GET", "/v1/streams/orders/groups"),
    Op("create_group", "write", "POST", "/v1/streams/orders/groups", {"name": "g2", "id": "$"}),
    Op("get_group", "read", "GET", "/v1/streams/orders/groups/g"),
    Op(
        "set_group_id",
        "write",
        "PATCH",
        "/v1/streams/orders/groups/g",
        {"last_delivered_id": "0"},
    ),
    Op("delete_group", "write", "DELETE", "/v1/streams/orders/groups/g"),
    Op("list_consumers", "read", "GET", "/v1/streams/orders/groups/g/consumers"),
    Op("create_consumer", "write", "PUT", "/v1/streams/orders/groups/g/consumers/c2"),
    Op("delete_consumer", "write", "DELETE", "/v1/streams/orders/groups/g/consumers/c"),
    Op(
        "read_group",
        "consume",
        "POST",
        "/v1/streams/orders/groups/g/consumers/c/reads",
        {"count": 1},
    ),
    Op("ack_entries", "consume", "POST", "/v1/streams/orders/groups/g/acks", {"ids": ["1-1"]}),
    Op(
        "ack_delete_entries",
        "consume+write",
        "POST",
        "/v1/streams/orders/groups/g/ackdels",
        {"ids": ["1-1"], "policy": "DELREF"},
    ),
    Op(
        "nack_entries",
        "consume",
        "POST",
        "/v1/streams/orders/groups/g/nacks",
        {"ids": ["1-1"], "mode": "FAIL"},
    ),
    Op("get_pending", "consume", "GET", "/v1/streams/orders/groups/g/pending"),
    # Delivery policies, retention, redrive (``prepare`` sets a policy and a retention, and
    # fills orders:dead with a dead letter from orders).
    Op("get_policy", "read", "GET", "/v1/streams/orders/groups/g/policy"),
    Op(
        "set_policy",
        "admin",
        "PUT",
        "/v1/streams/orders/groups/g/policy",
        {"max_deliveries": 2, "dead_letter_stream": "orders:dead"},
    ),
    Op("delete_policy", "admin", "DELETE", "/v1/streams/orders/groups/g/policy"),
    Op("get_retention", "read", "GET", "/v1/streams/orders/retention"),
    Op("set_retention", "admin", "PUT", "/v1/streams/orders/retention", {"max_len": 5}),
    Op("delete_retention", "admin", "DELETE", "/v1/streams/orders/retention"),
    Op("redrive_entries", "write", "POST", "/v1/streams/orders:dead/redrive", {}),
    # Webhooks (``prepare`` sets "hook" on orders' group g).
    Op("list_webhooks", "read", "GET", "/v1/streams/orders/groups/g/webhooks"),
    Op("get_webhook", "read", "GET", "/v1/streams/orders/groups/g/webhooks/hook"),
    Op(
        "set_webhook",
        "admin",
        "PUT",
        "/v1/streams/orders/groups/g/webhooks/other",
        {"url": "https://example.com/", "secret": HOOK_SECRET},
    ),
    Op(
        "pause_webhook",
        "admin",
        "PATCH",
        "/v1/streams/orders/groups/g/webhooks/hook",
        {"paused": True},
    ),
    Op("delete_webhook", "admin", "DELETE", "/v1/streams/orders/groups/g/webhooks/hook"),
    Op(
        "claim_entries",
        "consume",
        "POST",
        "/v1/streams/orders/groups/g/claims",
        {"consumer": "bob", "min_idle_ms": 0, "ids": ["1-1"]},
    ),
    Op(
        "autoclaim_entries",
        "consume",
        "POST",
        "/v1/streams/orders/groups/g/autoclaims",
        {"consumer": "bob", "min_idle_ms": 0, "start": "0-0"},
    ),
    # SSE (each stream ends by itself after sse_max_lifetime_ms, so a served one returns).
    Op("tail_stream_events", "read", "GET", "/v1/streams/orders/events", params={"last_id": "0"}),
    Op("tail_streams_events", "read", "GET", "/v1/events", params={"stream": "orders"}),
    Op("consume_group_events", "consume", "GET", "/v1/streams/orders/groups/g/consumers/c/events"),
]


def key(grant: Grant, **kw: Any) -> tuple[KeyRecord, str]:
    key_id, secret, text = new_key()
    record = KeyRecord(
        key_id=key_id,
        name=f"k-{key_id}",
        secret_hash=hash_secret(secret),
        grant=grant,
        created_at_ms=0,
        **kw,
    )
    return record, text


def verbs_of(verb: str) -> list[str]:
    """The grant verbs an operation needs: XACKDEL's ``consume+write`` is two."""
    return verb.split("+")


def grant_of(verb: str, glob: str) -> Grant:
    if verb == "admin":
        return Grant(admin=True)
    return Grant.of(**{v: [glob] for v in verbs_of(verb)})


def mint(verb: str, glob: str) -> str:
    claim: dict[str, Any] = (
        {"admin": True} if verb == "admin" else {v: [glob] for v in verbs_of(verb)}
    )
    return jwt.encode(
        {"sub": "app-user", "exp": int(time.time()) + 300, "xstreams": claim},
        SECRET,
        algorithm="HS256",
    )


def callers(verb: str) -> dict[str, tuple[str | None, int | None, str | None]]:
    """name -> (credential, expected status for a refusal or None when served, NOPERM kind)."""
    now = time.time_ns() // 1_000_000
    listing = verb == "list"  # SCAN, GET /v1/streams: for readers, narrowed to what they read
    verb = "read" if listing else verb
    # Every verb but one needed (for consume+write: all but write, so consume alone is
    # not enough).
    missing = verbs_of(verb)[-1]
    others = [v for v in VERBS if v != missing]
    without, t_without = key(Grant.of(**{v: ["orders*"] for v in others}))
    # Admin has no glob: "elsewhere" is then every other verb on every stream, not admin.
    every = {v: ["*"] for v in VERBS}
    elsewhere, t_elsewhere = key(
        Grant.of(**every) if verb == "admin" else grant_of(verb, "payments*")
    )
    jwt_elsewhere = (
        jwt.encode(
            {"sub": "app-user", "exp": int(time.time()) + 300, "xstreams": every},
            SECRET,
            algorithm="HS256",
        )
        if verb == "admin"
        else mint(verb, "payments*")
    )
    refused_elsewhere: int | None = None if listing else 403
    where_refused = "command" if verb == "admin" else "key"
    holding, t_holding = key(grant_of(verb, "orders*"))
    expired, t_expired = key(grant_of(verb, "orders*"), expires_at_ms=now - 1)
    revoked, t_revoked = key(grant_of(verb, "orders*"), revoked_at_ms=now - 1)
    RING.extend([without, elsewhere, holding, expired, revoked])
    return {
        "no credentials": (None, 401, None),
        "key without the verb": (t_without, 403, "command"),
        "key with the verb on another glob": (t_elsewhere, refused_elsewhere, where_refused),
        "expired key": (t_expired, 401, None),
        "revoked key": (t_revoked, 401, None),
        "jwt with the verb elsewhere": (jwt_elsewhere, refused_elsewhere, where_refused),
        "key with the verb": (t_holding, None, None),
        "jwt with the verb": (mint(verb, "orders*"), None, None),
    }


RING: list[KeyRecord] = []


def fresh_app() -> Any:
    store = Store()
    for argv in (
        ["XADD", "orders", "1-1", "f", "v"],
        ["XADD", "orders", "2-2", "f", "v"],
        ["XADD", "payments", "1-1", "f", "v"],
        ["XGROUP", "CREATE", "orders", "g", "0"],
        ["XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "orders", ">"],
    ):
        store.execute(argv)
    settings = Settings(jwt_secret=SECRET, sse_max_lifetime_ms=50, sse_heartbeat_ms=10)
    app = create_app(settings, store=store)
    return app, store


DEAD_LETTER = dead_letter_fields(
    ("f", "v"), DeadLetter("orders", StreamID(1, 1), "g", "c", 3, "max_deliveries")
)


async def prepare(app: Any, store: Store) -> None:
    """What the delivery operations act on: a policy, a retention, a dead letter, a webhook."""
    backend = app.state.services.backend
    policy = DeliveryPolicy(max_deliveries=3, dead_letter_stream="orders:dead")
    await backend.set_delivery_policy("orders", "g", policy)
    await backend.set_retention("orders", Retention(max_len=100))
    await backend.set_webhook(Webhook("orders", "g", "hook", "https://example.com/", HOOK_SECRET))
    store.execute(["XADD", "orders:dead", "5-5", *DEAD_LETTER])


def snapshot(store: Store) -> Any:
    view = store.snapshot_view()
    return repr(view)


@pytest.mark.parametrize("op", OPS, ids=lambda op: f"{op.surface}:{op.name}")
async def test_matrix(op: Op) -> None:
    RING.clear()
    cases = callers(op.verb)
    for caller, (credential, refused, noperm) in cases.items():
        app, store = fresh_app()
        await prepare(app, store)
        app.state.services.access.keys.replace(RING)
        headers = {"Authorization": f"Bearer {credential}"} if credential else {}
        before = snapshot(store)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://xs") as client:
            r = await client.request(
                op.method, op.path, json=op.json, params=op.params, headers=headers, timeout=10
            )
        where = f"{op.surface} {op.name} as {caller}: {r.status_code} {r.text[:200]}"
        if refused is None:
            assert r.status_code < 400, where
            if "elsewhere" in caller or "another glob" in caller:  # a listing, narrowed
                assert "payments" in r.text and "orders" not in r.text, where
            continue
        assert r.status_code == refused, where
        assert snapshot(store) == before, f"{where}: a refused operation changed the state"
        body = r.json()
        if refused == 401:
            assert body["error"] == "Unauthorized", where
            assert r.headers["www-authenticate"] == "Bearer", where
            continue
        text = NO_CMD.format(op.command) if noperm == "command" else NO_KEY
        if op.surface == "commands":
            assert body == {"error": text}, where
        else:
            assert r.headers["content-type"] == "application/problem+json", where
            assert body["status"] == 403 and body["code"] == "NOPERM", where
            if noperm == "key":
                assert body["error"] == NO_KEY, where


async def test_listing_streams_shows_only_what_may_be_read() -> None:
    app, _ = fresh_app()
    reader, text = key(Grant.of(read=["orders*"]))
    app.state.services.access.keys.replace([reader])
    headers = {"Authorization": f"Bearer {text}"}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://xs") as client:
        page = (await client.get("/v1/streams", headers=headers)).json()
        assert [s["name"] for s in page["streams"]] == ["orders"]
        scan = (await client.post("/", json=["SCAN", "0", "COUNT", "100"], headers=headers)).json()
        assert scan["result"][1] == ["orders"]
        r = await client.post("/", json=["KEYS", "*"], headers=headers)
        assert r.status_code == 403


async def test_a_pipeline_refuses_only_the_commands_not_granted() -> None:
    app, store = fresh_app()
    reader, text = key(Grant.of(read=["orders*"]))
    app.state.services.access.keys.replace([reader])
    headers = {"Authorization": f"Bearer {text}"}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://xs") as client:
        rows = [["XLEN", "orders"], ["XADD", "orders", "*", "f", "v"], ["XLEN", "payments"]]
        r = await client.post("/pipeline", json=rows, headers=headers)
        assert r.json() == [{"result": 2}, {"error": NO_CMD.format("xadd")}, {"error": NO_KEY}]
        before = snapshot(store)
        r = await client.post("/multi-exec", json=rows, headers=headers)
        assert r.status_code == 403 and r.json() == {"error": NO_CMD.format("xadd")}
        assert snapshot(store) == before  # one refused: none ran


def test_every_operation_is_in_the_matrix() -> None:
    from app.api.rest.models import CALLER, MODELS

    # Operations about credentials name no stream: whoami needs no verb
    # (tests/access/test_whoami.py), the keys' usage is the admin's
    # (tests/api/test_rate_bytes_entries.py).
    on_streams = {op for op, name in MODELS.items() if name not in CALLER}
    assert on_streams == set(MODELS) - {"whoami", "list_key_usage"}
    assert {op.name for op in OPS if op.surface != "commands"} == on_streams
    assert all(op.verb in (*VERBS, "consume+write", "admin", "list") for op in OPS)
    assert Verb.READ.value in VERBS
