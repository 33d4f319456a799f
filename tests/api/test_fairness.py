"""Admission by turns (app/api/fairness.py): past ``fair_slots`` requests at once, credentials
take turns for a freed slot, FIFO within one; a request parked on purpose (a hold) or whose
response has started gives its slot back; a credential's full queue is refused with 429.

The gate's order is checked on the gate itself, with requests parked on events, so nothing
depends on timing; the end-to-end tests run the real app on the three targets."""

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
from app.api.parking import park
from app.observe.metrics import Metrics
from tests.conftest import Server
from tests.storage.conftest import pg_schema, pg_url  # noqa: F401  (pg_schema: a fixture)
from tests.support.access import EventTail
from tests.support.targets import SERVED_BY, TARGET_PARAMS, Served, served_on
from tests.support.waiting import parked_async, until_async

ALICE = Principal("alice", OPEN.grant, Kind.KEY, key_id="k-alice")
BOB = Principal("bob", OPEN.grant, Kind.KEY, key_id="k-bob")


class Inner:
    """An app whose request for ``path`` runs until ``release(path)``; it notes the order
    requests start in. ``/park`` parks first (as a hold does); ``/stream`` starts its
    response first (as an event stream does)."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.gates: dict[str, asyncio.Event] = {}

    def gate(self, path: str) -> asyncio.Event:
        return self.gates.setdefault(path, asyncio.Event())

    def release(self, *paths: str) -> None:
        for path in paths:
            self.gate(path).set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"]
        self.started.append(path)
        if path.startswith("/park"):
            park()
        if path.startswith("/stream"):
            await send({"type": "http.response.start", "status": 200, "headers": []})
        await self.gate(path).wait()
        if not path.startswith("/stream"):
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
    scope = {"type": "http", "path": path, "method": "POST", "state": {"principal": principal}}
    sent = Sent()
    return asyncio.create_task(gate(scope, _nothing, sent)), sent


async def queued(scheduler: Scheduler, n: int) -> None:
    await until_async(lambda: scheduler.queued == n, what=f"{n} requests queued")


async def started(inner: Inner, path: str) -> None:
    await until_async(lambda: path in inner.started, what=f"{path} running")


async def test_credentials_take_turns_for_a_freed_slot_fifo_within_one() -> None:
    gate, inner, scheduler, _ = gate_of(slots=1)
    holder, _ = request(gate, ALICE, "/hold")
    await started(inner, "/hold")
    tasks = []
    # Alice queues three before Bob's two arrive: first come would serve her three first.
    for n, (who, path) in enumerate(
        [(ALICE, "/a1"), (ALICE, "/a2"), (ALICE, "/a3"), (BOB, "/b1"), (BOB, "/b2")], 1
    ):
        tasks.append(request(gate, who, path)[0])
        await queued(scheduler, n)
    assert inner.started == ["/hold"]  # one slot, taken: the rest wait
    inner.release("/a1", "/a2", "/a3", "/b1", "/b2", "/hold")
    await asyncio.gather(holder, *tasks)
    assert inner.started == ["/hold", "/a1", "/b1", "/a2", "/b2", "/a3"]
    assert (scheduler.running, scheduler.queued, scheduler.queues) == (0, 0, {})


async def test_below_the_slots_nothing_waits() -> None:
    gate, inner, scheduler, metrics = gate_of(slots=3)
    tasks = [request(gate, ALICE, f"/r{n}")[0] for n in range(3)]
    await until_async(lambda: len(inner.started) == 3, what="three running")
    assert (scheduler.running, scheduler.queued) == (3, 0)
    inner.release("/r0", "/r1", "/r2")
    await asyncio.gather(*tasks)
    assert scheduler.running == 0 and not metrics.fair_wait.by_labels  # nobody waited


async def test_a_parked_request_gives_its_slot_back() -> None:
    gate, inner, scheduler, _ = gate_of(slots=1)
    poll, _ = request(gate, ALICE, "/park")  # a long poll: takes a hold, then waits
    await started(inner, "/park")
    other, _ = request(gate, BOB, "/xadd")
    await started(inner, "/xadd")  # ran while the long poll is parked
    assert (scheduler.running, scheduler.queued) == (1, 0)
    inner.release("/xadd", "/park")
    await asyncio.gather(poll, other)
    assert scheduler.running == 0  # the parked one's slot was given back once, not twice


async def test_a_started_response_gives_its_slot_back() -> None:
    gate, inner, scheduler, _ = gate_of(slots=1)
    stream, sent = request(gate, ALICE, "/stream")  # an event stream: streams after its head
    await until_async(lambda: bool(sent.messages), what="the stream's head sent")
    other, _ = request(gate, ALICE, "/xadd")
    await started(inner, "/xadd")
    inner.release("/xadd", "/stream")
    await asyncio.gather(stream, other)
    assert scheduler.running == 0


async def test_a_full_queue_is_refused_with_429_and_retry_after() -> None:
    gate, inner, scheduler, metrics = gate_of(slots=1, queue=2)
    holder, _ = request(gate, ALICE, "/hold")
    await started(inner, "/hold")
    waiting = [request(gate, ALICE, f"/a{n}")[0] for n in range(2)]
    await queued(scheduler, 2)
    refused, sent = request(gate, ALICE, "/a-too-many")
    await refused
    assert sent.status == 429 and sent.headers[b"retry-after"] == b"1"
    body = sent.messages[1]["body"]
    assert b"ERR too many requests queued for this credential (at most 2" in body
    assert metrics.fair_refused.by_labels == {(): 1}
    bobs, _ = request(gate, BOB, "/b")  # the bound is Alice's: Bob still queues
    await queued(scheduler, 3)
    inner.release("/hold", "/a0", "/a1", "/b")
    await asyncio.gather(holder, bobs, *waiting)
    assert "/a-too-many" not in inner.started
    assert sum(h.count for _, h in metrics.fair_wait) == 3  # the three that queued


async def test_a_request_cancelled_in_the_queue_leaves_it() -> None:
    gate, inner, scheduler, _ = gate_of(slots=1)
    holder, _ = request(gate, ALICE, "/hold")
    await started(inner, "/hold")
    gone, _ = request(gate, BOB, "/gone")
    await queued(scheduler, 1)
    kept, _ = request(gate, BOB, "/kept")
    await queued(scheduler, 2)
    gone.cancel()
    await queued(scheduler, 1)
    inner.release("/hold", "/kept")
    await asyncio.gather(holder, kept)
    assert inner.started == ["/hold", "/kept"] and scheduler.running == 0


async def test_open_paths_and_requests_without_a_principal_pass_untouched() -> None:
    gate, inner, scheduler, _ = gate_of(slots=1)
    holder, _ = request(gate, ALICE, "/hold")
    await started(inner, "/hold")
    probe, _ = request(gate, ALICE, "/healthz")
    await started(inner, "/healthz")
    inner.release("/healthz", "/hold")
    await asyncio.gather(holder, probe)
    assert scheduler.running == 0


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
        assert "xstreams_fair_running_requests" in (await c.get("/metrics")).text


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
        assert "xstreams_fair_running_requests 1.0" in metrics  # the scrape itself, no other
    finally:
        srv.stop()
