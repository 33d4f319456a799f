"""Admission by turns (app/api/fairness.py): past ``fair_slots`` requests a turn of the event
loop, requests queue per credential (FIFO within one) and the next turns take credentials
round-robin; a parked request holds nothing; a credential's full queue is refused with 429.

The order is checked on the gate itself: every request of a case is sent in the same loop
turn, so which ones are admitted, queued and woken is decided by the gate alone, not by
timing. The end-to-end tests run the real app on the three targets."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.types import Receive, Scope, Send

from app.access.principal import OPEN, Kind, Principal
from app.api.fairness import FairGate, Scheduler
from app.observe.metrics import Metrics
from tests.conftest import Server
from tests.storage.conftest import pg_schema, pg_url  # noqa: F401  (pg_schema: a fixture)
from tests.support.access import EventTail
from tests.support.targets import SERVED_BY, TARGET_PARAMS, Served, served_on
from tests.support.waiting import parked_async, until_async

ALICE = Principal("alice", OPEN.grant, Kind.KEY, key_id="k-alice")
BOB = Principal("bob", OPEN.grant, Kind.KEY, key_id="k-bob")


class Inner:
    """An app that notes the order requests reach it in; ``/park...`` then waits until
    ``release`` (an event stream or a long poll, parked)."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.parked = asyncio.Event()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"]
        self.started.append(path)
        if path.startswith("/park"):
            await self.parked.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})


class Sent:
    """What the gate sent for one request."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    async def __call__(self, message: Any) -> None:
        self.messages.append(message)

    @property
    def status(self) -> int:
        return int(self.messages[0]["status"])

    @property
    def headers(self) -> dict[bytes, bytes]:
        return dict(self.messages[0]["headers"])


def gate_of(slots: int, queue: int = 100) -> tuple[FairGate, Inner, Scheduler, Metrics]:
    inner, scheduler, metrics = Inner(), Scheduler(slots, queue), Metrics()
    return FairGate(inner, scheduler, metrics, frozenset({"/healthz"})), inner, scheduler, metrics


async def _nothing() -> dict[str, Any]:
    return {"type": "http.request", "body": b"", "more_body": False}


def request(gate: FairGate, principal: Principal, path: str) -> tuple[asyncio.Task[None], Sent]:
    """One request, started in the coming loop turn (with every other one made before it)."""
    scope = {"type": "http", "path": path, "method": "POST", "state": {"principal": principal}}
    sent = Sent()
    return asyncio.create_task(gate(scope, _nothing, sent)), sent


def together(gate: FairGate, *sent: tuple[Principal, str]) -> list[asyncio.Task[None]]:
    return [request(gate, who, path)[0] for who, path in sent]


async def test_credentials_take_turns_past_the_slots_fifo_within_one() -> None:
    gate, inner, scheduler, metrics = gate_of(slots=1)
    # Alice's three reach the gate before Bob's two: first come would serve hers first.
    tasks = together(
        gate, (ALICE, "/a1"), (ALICE, "/a2"), (ALICE, "/a3"), (BOB, "/b1"), (BOB, "/b2")
    )
    await asyncio.gather(*tasks)
    assert inner.started == ["/a1", "/a2", "/b1", "/a3", "/b2"]
    assert (scheduler.queued, scheduler.queues, list(scheduler.turns)) == (0, {}, [])
    assert sum(h.count for _, h in metrics.fair_wait) == 4  # all but the first waited


async def test_below_the_slots_nothing_waits_or_moves() -> None:
    gate, inner, _scheduler, metrics = gate_of(slots=3)
    await asyncio.gather(*together(gate, (ALICE, "/a1"), (BOB, "/b1"), (ALICE, "/a2")))
    assert inner.started == ["/a1", "/b1", "/a2"]  # first come, as without the gate
    assert not metrics.fair_wait.by_labels


async def test_a_parked_request_holds_no_slot() -> None:
    gate, inner, _scheduler, _ = gate_of(slots=1)
    poll, _ = request(gate, ALICE, "/park")  # a long poll or an event stream, parked
    await until_async(lambda: "/park" in inner.started, what="the long poll parked")
    later = together(gate, (BOB, "/b1"), (ALICE, "/a1"))
    await asyncio.gather(*later)  # served while the long poll waits
    assert inner.started == ["/park", "/b1", "/a1"] and not poll.done()
    inner.parked.set()
    await poll


async def test_a_full_queue_is_refused_with_429_and_retry_after() -> None:
    gate, inner, _scheduler, metrics = gate_of(slots=1, queue=2)
    tasks = together(gate, (ALICE, "/a0"), (ALICE, "/a1"), (ALICE, "/a2"))
    refused, sent = request(gate, ALICE, "/a-too-many")
    bobs = together(gate, (BOB, "/b"))  # the bound is Alice's: Bob still queues
    await asyncio.gather(refused, *tasks, *bobs)
    assert sent.status == 429 and sent.headers[b"retry-after"] == b"1"
    body = sent.messages[1]["body"]
    assert b"ERR too many requests queued for this credential (at most 2" in body
    assert metrics.fair_refused.by_labels == {(): 1}
    assert inner.started == ["/a0", "/a1", "/b", "/a2"]


async def test_a_request_cancelled_in_the_queue_leaves_it() -> None:
    gate, inner, scheduler, _ = gate_of(slots=1)
    first, gone, kept = together(gate, (ALICE, "/a0"), (BOB, "/gone"), (BOB, "/kept"))
    asyncio.get_running_loop().call_soon(gone.cancel)  # in the same turn, once it queued
    await asyncio.gather(first, kept)
    assert gone.cancelled()
    assert inner.started == ["/a0", "/kept"]
    assert (scheduler.queued, scheduler.queues, list(scheduler.turns)) == (0, {}, [])


async def test_the_probes_pass_untouched() -> None:
    gate, inner, _scheduler, metrics = gate_of(slots=1)
    tasks = together(gate, (ALICE, "/a0"), (ALICE, "/healthz"), (ALICE, "/a1"))
    await asyncio.gather(*tasks)
    assert inner.started == ["/a0", "/healthz", "/a1"]  # the probe never queued
    assert sum(h.count for _, h in metrics.fair_wait) == 1


# End to end, on the three targets: one slot, yet parked readers never hold it.


@pytest.fixture(params=TARGET_PARAMS)
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Served:
    return served_on(request, request.param, tmp_path)


async def test_parked_reads_hold_no_slot_through_the_real_app(served: Served) -> None:
    async with served(fair_slots=1) as c:
        where = SERVED_BY[c]
        created = await c.put("/ds/fair-ds", headers={"Content-Type": "text/plain"})
        assert created.status_code in (200, 201), created.text
        tail = created.headers["stream-next-offset"]
        reads: list[Callable[[], Awaitable[httpx.Response]]] = [
            lambda: c.post("/", json=["XREAD", "BLOCK", "20000", "STREAMS", "fair-x", "$"]),
            lambda: c.get(
                "/v1/streams/fair-rest/entries", params={"after": "$", "block_ms": 20000}
            ),
            lambda: c.get("/ds/fair-ds", params={"offset": tail, "live": "long-poll"}),
        ]
        waiting = []
        for n, read in enumerate(reads, 1):
            waiting.append(asyncio.create_task(read()))
            await parked_async(where, n)  # parked, slot given back: the next one runs
        metrics = (await c.get("/metrics")).text
        assert "xstreams_fair_slots 1.0" in metrics
        assert "xstreams_fair_queued_requests 0.0" in metrics
        # One slot, three parked readers: writes still run, and wake them.
        woke = [
            await c.post("/", json=["XADD", "fair-x", "*", "n", "1"]),
            await c.post("/v1/streams/fair-rest/entries", json={"fields": {"n": "1"}}),
            await c.post("/ds/fair-ds", headers={"Content-Type": "text/plain"}, content=b"n"),
        ]
        assert [r.status_code for r in woke] == [200, 201, 204], [r.text for r in woke]
        got = await asyncio.wait_for(asyncio.gather(*waiting), 10)
        assert [r.status_code for r in got] == [200, 200, 200], [r.text for r in got]
        assert "xstreams_fair_queued_requests 0.0" in (await c.get("/metrics")).text


# End to end on the journaled embedded engine (SQLite, PostgreSQL) under ``xstreams serve``:
# API keys made as an operator makes them, an event stream that detaches from its request,
# a long poll, and one slot between them and a second credential's writes.


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'xstreams.db'}"
    schema: str = request.getfixturevalue("pg_schema")
    return pg_url(schema)


def _key(url: str, name: str) -> str:
    args = ("create", "--name", name, "--read", "*", "--write", "*", "--database-url", url)
    made = subprocess.run(
        [sys.executable, "-m", "app.cli", "keys", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    return made.stdout.strip()


async def test_a_journaled_service_with_one_slot_serves_a_second_key_past_parked_readers(
    tmp_path: Path, database_url: str
) -> None:
    alice, bob = _key(database_url, "alice"), _key(database_url, "bob")
    srv = Server(
        tmp_path, "--database-url", database_url, "--token", "admin",
        env={"XSTREAMS_FAIR_SLOTS": "1"},
    )  # fmt: skip
    try:
        tail = EventTail(f"{srv.url}/v1/streams/s/events?last_id=$&access_token={alice}")
        await until_async(lambda: tail.status is not None, what="the event stream open")
        assert tail.status == 200
        await parked_async(srv, 1)  # the event stream's subscriber counts as a blocked reader
        as_alice = {"Authorization": f"Bearer {alice}"}
        as_bob = {"Authorization": f"Bearer {bob}"}
        async with httpx.AsyncClient(base_url=srv.url, timeout=30) as c:
            poll = asyncio.create_task(
                c.post("/", json=["XREAD", "BLOCK", "20000", "STREAMS", "s", "$"], headers=as_alice)
            )
            await parked_async(srv, 2)
            added = await c.post("/", json=["XADD", "s", "1-1", "n", "1"], headers=as_bob)
            assert added.json() == {"result": "1-1"}
            got = await asyncio.wait_for(poll, 10)
            assert got.json()["result"][0][0] == "s", got.text
            await until_async(lambda: "id: 1-1" in tail.lines, what="the event streamed")
            metrics = (await c.get("/metrics", headers={"Authorization": "Bearer admin"})).text
        assert "xstreams_fair_slots 1.0" in metrics
        assert "xstreams_fair_queued_requests 0.0" in metrics
    finally:
        srv.stop()
