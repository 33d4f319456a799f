"""Admission by turns: past ``fair_slots`` requests at once, credentials take turns.

A pure ASGI layer just inside the rate gate, so it knows who asks and a request past its rate
never queues. At most ``fair_slots`` requests run at once in the process. Below that nothing
waits and nothing is reordered. Past it a request queues behind its own credential's earlier
ones (FIFO within a credential), and a freed slot goes to the next credential in round-robin
order. One credential flooding the service then delays another by about one request per
turn, not by the whole backlog it sent first (issue 42, "fairness under load";
``python -m bench fairness`` measures it).

The turn is one request, whatever it costs: a 100-entry pipeline and a one-entry XADD weigh
the same. Weighing by cost would need the cost before the request runs; the body is not read
yet here, and the slot bound already keeps every request's own work short (``max_*`` limits).

A request that waits on purpose does not keep its slot while it waits. Which requests those
are is already decided in one place: an event stream, a REST or Durable Streams long poll and
a blocking XREAD / XREADGROUP each take a hold (``app/api/holds.py``) before they park, and
taking a hold gives the slot back (``park``). A response that starts gives it back too: the
work is done, what is left is writing, and an event stream's response starts before it
streams. So a parked reader never stops anyone, and the held-connection cap still bounds
those per credential. The cost: a blocking read that finds entries at once runs its read
without a slot, which the hold cap (and the request rate) bound instead.

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

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.errors import error_body
from app.api.parking import parking, unparked
from app.observe.metrics import FairFigures, Metrics

__all__ = ["FairGate", "QueueFull", "Scheduler", "Slot"]


@dataclass(eq=False, slots=True)
class Slot:
    """One request's claim on a slot; ``give_back`` is safe to call more than once."""

    scheduler: Scheduler
    held: bool = True

    def give_back(self) -> None:
        if self.held:
            self.held = False
            self.scheduler.release()


class QueueFull(Exception):
    """The credential already has ``fair_queue_per_key`` requests queued."""


@dataclass(slots=True)
class Scheduler:
    """Slots and the queues per credential; every method runs on the event loop."""

    slots: int
    max_queued_per_key: int
    running: int = 0
    queued: int = 0
    queues: dict[str, deque[asyncio.Future[None]]] = field(default_factory=dict)
    turns: deque[str] = field(default_factory=deque)  # credentials with a queue, in turn

    async def acquire(self, key: str) -> Slot:
        """A slot for a request of ``key``: at once while one is free and nobody queues,
        else in ``key``'s turn. Raises ``QueueFull`` past the credential's queue bound."""
        if self.running < self.slots and not self.turns:
            self.running += 1
            return Slot(self)
        queue = self.queues.get(key)
        if queue is None:
            queue = self.queues[key] = deque()
            self.turns.append(key)
        elif len(queue) >= self.max_queued_per_key:
            raise QueueFull
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue.append(waiter)
        self.queued += 1
        try:
            await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self.release()  # handed a slot just as it was cancelled: pass it on
            else:
                self._forget(key, waiter)
            raise
        return Slot(self)

    def release(self) -> None:
        """A slot is free: hand it to the next credential in turn (its oldest request)."""
        while self.turns:
            key = self.turns.popleft()
            queue = self.queues[key]
            waiter = queue.popleft()
            self.queued -= 1
            if queue:
                self.turns.append(key)
            else:
                del self.queues[key]
            if not waiter.done():
                waiter.set_result(None)  # the slot passes on: ``running`` stays
                return
        self.running -= 1

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
        return FairFigures(slots=self.slots, running=self.running, queued=self.queued)


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
        if scope["type"] != "http" or principal is None or scope["path"] in self.open_paths:
            await self.app(scope, receive, send)
            return
        scheduler = self.scheduler
        if scheduler.running < scheduler.slots and not scheduler.turns:
            slot = Slot(scheduler)  # the common case, inline: no await, no clock
            scheduler.running += 1
        else:
            started = time.perf_counter()
            try:
                slot = await scheduler.acquire(principal.limit_key)
            except QueueFull:
                self.metrics.fair_refused.add(())
                await _queue_full(scope, send, scheduler.max_queued_per_key)
                return
            self.metrics.fair_wait.observe((), time.perf_counter() - started)
        token = parking(slot.give_back)

        async def starting(message: Message) -> None:
            if message["type"] == "http.response.start":
                slot.give_back()
            await send(message)

        try:
            await self.app(scope, receive, starting)
        finally:
            unparked(token)
            slot.give_back()


async def _queue_full(scope: Scope, send: Send, bound: int) -> None:
    text = (
        f"ERR too many requests queued for this credential (at most {bound},"
        " fair_queue_per_key); retry after 1000 ms"
    )
    media, body = error_body(scope["path"], 429, text)
    await send(
        {
            "type": "http.response.start",
            "status": 429,
            "headers": [
                (b"content-type", media.encode()),
                (b"content-length", str(len(body)).encode()),
                (b"retry-after", b"1"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
