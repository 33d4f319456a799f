"""Admission by turns: past ``fair_slots`` requests a loop turn, credentials take turns.

A pure ASGI layer just inside the rate gate, so it knows who asks and a request past its rate
never queues. Issue 42 asks that when the loop is saturated, requests be served round-robin
per credential rather than first come; ``python -m bench --only fairness`` measures it.

What the slots count. A request does its work in steps between awaits, and most of ours do it
in one step: a 100-entry pipeline runs from the gate to its reply without yielding (without
``--fsync always``; with it, it yields once, for the group commit). So a bound on requests
*running at once* never fills: each is done before the next starts, and the first-come order
lives in the event loop's ready queue, where every connection's request was put in the turn
its bytes arrived. Measured: at 64 flooding connections a bound of 8 at once held one
request at a time and changed nothing. What the loop shares out is its turns; so at most
``fair_slots`` requests are *admitted per turn of the event loop*. Below that nothing waits
and nothing is reordered. Past it a request queues behind its own credential's earlier ones
(FIFO within a credential), and each following turn admits ``fair_slots`` more, taking
credentials in round-robin order. A flood of 64 pipelines then costs another credential's
XADD about one turn of ``fair_slots`` pipelines, not the whole backlog.

Nothing is held after admission, so a request that waits on purpose (an event stream, a REST
or Durable Streams long poll, a blocking XREAD) holds nothing while parked: its wait is
bounded by the held-connection cap (``app/api/holds.py``) as before, and the request that
wakes it is admitted like any other.

The turn is one request, whatever it costs: a 100-entry pipeline and a one-entry XADD weigh
the same. Weighing by cost would need the cost before the request runs; the body is not read
yet here, and each request's own work is bounded (``max_*`` limits).

The admin token and an open service are one credential here (``Principal.limit_key``): they
take turns like any API key, which is what keeps an admin flood from starving the keys.

Past ``fair_queue_per_key`` requests queued for one credential the next one is refused with
429 and ``Retry-After: 1``, not 503: the credential's own backlog is full, not the service
(the other credentials are still served in their turn), and 429 is the answer every other
per-credential limit gives (rates, holds), so one client retry rule covers them all.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass, field

from starlette.types import ASGIApp, Receive, Scope, Send

from app.api.errors import send_error
from app.observe.metrics import FairFigures, Metrics

__all__ = ["FairGate", "QueueFull", "Scheduler"]


class QueueFull(Exception):
    """The credential already has ``fair_queue_per_key`` requests queued."""


@dataclass(slots=True)
class Scheduler:
    """Admissions per loop turn and the queues per credential; every method runs on the
    event loop."""

    slots: int  # admissions per turn of the event loop
    max_queued_per_key: int
    admitted: int = 0  # admissions in the current turn
    queued: int = 0
    queues: dict[str, deque[asyncio.Future[None]]] = field(default_factory=dict)
    turns: deque[str] = field(default_factory=deque)  # credentials with a queue, in turn
    _next_turn: asyncio.Handle | None = None

    def admit_now(self) -> bool:
        """Admit a request at once if this turn has room and nobody queues."""
        if self.admitted < self.slots and not self.turns:
            self._count()
            return True
        return False

    async def acquire(self, key: str) -> None:
        """Admission for a request of ``key`` in its credential's turn. Raises ``QueueFull``
        past the credential's queue bound."""
        queue = self.queues.get(key)
        if queue is None:
            queue = self.queues[key] = deque()
            self.turns.append(key)
        elif len(queue) >= self.max_queued_per_key:
            raise QueueFull
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue.append(waiter)
        self.queued += 1
        self._count(0)  # a turn is coming that admits it
        try:
            await waiter
        except BaseException:
            self._forget(key, waiter)
            raise

    def _count(self, n: int = 1) -> None:
        self.admitted += n
        if self._next_turn is None:
            self._next_turn = asyncio.get_running_loop().call_soon(self._turn)

    def _turn(self) -> None:
        """A new turn of the loop: admit up to ``slots`` queued requests, credentials in
        round-robin order (each credential's oldest first)."""
        self._next_turn = None
        self.admitted = 0
        while self.turns and self.admitted < self.slots:
            key = self.turns.popleft()
            queue = self.queues[key]
            waiter = queue.popleft()
            self.queued -= 1
            if queue:
                self.turns.append(key)
            else:
                del self.queues[key]
            if not waiter.done():  # a cancelled one leaves its turn to the next
                waiter.set_result(None)
                self._count()
        if self.turns:
            self._count(0)

    def _forget(self, key: str, waiter: asyncio.Future[None]) -> None:
        queue = self.queues.get(key)
        if queue is None or waiter not in queue:
            return
        queue.remove(waiter)
        self.queued -= 1
        if not queue:
            del self.queues[key]
            self.turns.remove(key)

    def figures(self) -> FairFigures:
        return FairFigures(slots=self.slots, queued=self.queued)


class FairGate:
    def __init__(
        self,
        app: ASGIApp,
        scheduler: Scheduler,
        metrics: Metrics,
        open_paths: frozenset[str],
    ) -> None:
        self.app = app
        self.scheduler = scheduler
        self.metrics = metrics
        self.open_paths = open_paths
        metrics.fair = scheduler.figures

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        principal = scope.get("state", {}).get("principal")
        if (
            scope["type"] != "http"
            or principal is None
            or scope["path"] in self.open_paths
            or self.scheduler.admit_now()  # the common case: no await, no clock
        ):
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        try:
            await self.scheduler.acquire(principal.limit_key)
        except QueueFull:
            self.metrics.fair_refused.add(())
            await _queue_full(scope, send, self.scheduler.max_queued_per_key)
            return
        self.metrics.fair_wait.observe((), time.perf_counter() - started)
        await self.app(scope, receive, send)


async def _queue_full(scope: Scope, send: Send, bound: int) -> None:
    text = (
        f"ERR too many requests queued for this credential (at most {bound},"
        " fair_queue_per_key); retry after 1000 ms"
    )
    await send_error(scope, send, 429, text, [(b"retry-after", b"1")])
