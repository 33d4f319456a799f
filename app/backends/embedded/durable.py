"""Answers that wait for durability, once per request: the embedded backend's request protocol.

A write is refused before it runs while storage cannot make it durable (``_writable``), and
an answer about some keys leaves once the journal records behind them are as durable as the
fsync mode promises (``_visible``). Inside ``answering`` (and ``idempotent``) the calls the
request's task makes wait for nothing: the keys they answered about are noted on the
block's ``Deferred``, found through a context variable (``DEFERRED``), and the block's end
waits once for all of them, so the response is built while the journal commits.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from contextlib import AbstractAsyncContextManager, AbstractContextManager, asynccontextmanager
from contextvars import ContextVar, Token

from app.backends.idempotency import KeyReused, Run, StillRunning, Ticket, blocking_refused
from app.durability import Durability
from app.engine.responses import RESPONSES_KEY
from app.engine.store import Store
from app.engine.waiting import ClientGone


class DurableAnswers:
    """The durability half of ``EmbeddedBackend``: what every operation calls around its
    engine step."""

    store: Store
    durability: Durability | None
    _running: set[str]

    def _writable(self) -> None:
        """Refuse a write before it runs (``StorageUnavailable``): nothing is applied."""
        if self.durability is not None:
            self.durability.check_writable()

    async def _visible(self, keys: Iterable[str] | None) -> None:
        """Return once what an answer about ``keys`` (None: any key) shows is durable; inside
        ``answering``, note the keys for its end instead."""
        if self.durability is None:
            return
        deferred = DEFERRED.get()
        if deferred is not None and deferred.task is asyncio.current_task():
            deferred.add(keys)
            return
        await self.durability.wait_visible(keys)

    @asynccontextmanager
    async def answering(self) -> AsyncIterator[None]:
        """See ``Backend.answering``: the calls made inside, by this task, wait for nothing;
        leaving waits once for every key they answered about (errors included), so the
        caller builds its response while the journal commits. Inside ``idempotent`` it is
        that block's: its end waits."""
        outer = DEFERRED.get()
        if self.durability is None or (outer is not None and outer.task is asyncio.current_task()):
            yield
            return
        deferred = Deferred(asyncio.current_task())
        token = DEFERRED.set(deferred)
        try:
            yield
        except ClientGone:
            raise  # nobody reads the answer: nothing to wait for
        except Exception:
            await deferred.wait(self.durability)  # a 404 or a 409 shows state too
            raise
        finally:
            DEFERRED.reset(token)
        await deferred.wait(self.durability)

    def idempotent(self, ticket: Ticket) -> AbstractAsyncContextManager[Run]:
        """See ``Backend.idempotent``. The kept response is an engine step
        (``responses.remember``) of its own, appended while the journal is held from the
        request's start (``Durability.holding``), so it commits with what the request wrote
        or neither commits: after a crash a retry replays the response or runs for the first
        time, never both. Like ``answering``, the calls inside wait for nothing; leaving
        waits once for every key they answered about and for the kept response."""
        return IdempotentBlock(self, ticket)

    def _refuse_blocking(self, blocks: bool) -> None:
        """Inside ``idempotent`` a read that may block is refused (``BLOCKING_REFUSED``)."""
        if blocks:
            deferred = DEFERRED.get()
            if deferred is not None and deferred.idempotent:
                raise blocking_refused()


class IdempotentBlock:
    """``DurableAnswers.idempotent``: a class, not a generator, on the path of every keyed
    request."""

    __slots__ = ("backend", "deferred", "hold", "run", "ticket", "token")

    def __init__(self, backend: DurableAnswers, ticket: Ticket) -> None:
        self.backend = backend
        self.ticket = ticket
        self.run = Run()
        self.deferred: Deferred | None = None
        self.hold: AbstractContextManager[None] | None = None
        self.token: Token[Deferred | None] | None = None

    async def __aenter__(self) -> Run:
        backend, ticket = self.backend, self.ticket
        store = backend.store
        found = store.keyspace.responses.get(ticket.name, store.clock.now_ms())
        if found is not None:
            if found.fingerprint != ticket.fingerprint:
                raise KeyReused
            if backend.durability is not None:  # kept a moment ago: replay it once durable
                await backend.durability.wait_visible((RESPONSES_KEY,))
            self.run.stored = found.response
            return self.run
        if ticket.name in backend._running:
            raise StillRunning
        backend._running.add(ticket.name)
        self.deferred = Deferred(asyncio.current_task(), idempotent=True)
        self.token = DEFERRED.set(self.deferred)
        if backend.durability is not None:
            self.hold = backend.durability.holding()
            self.hold.__enter__()
        return self.run

    async def __aexit__(self, *exc: object) -> None:
        deferred, token = self.deferred, self.token
        if deferred is None or token is None:
            return  # a replay: nothing ran
        backend, run = self.backend, self.run
        try:
            DEFERRED.reset(token)
            if run.kept is not None:
                ticket = self.ticket
                backend.store.remember(ticket.name, ticket.fingerprint, run.kept)
                deferred.add((RESPONSES_KEY,))
        finally:
            if self.hold is not None:
                self.hold.__exit__(None, None, None)
            backend._running.discard(self.ticket.name)
        if backend.durability is not None and exc[0] is None:
            await deferred.wait(backend.durability)


class Deferred:
    """The keys answered about inside one ``answering`` block, by the task that opened it
    (a task it starts, which outlives it, waits for itself)."""

    __slots__ = ("every", "idempotent", "keys", "task")

    def __init__(self, task: asyncio.Task[object] | None, *, idempotent: bool = False) -> None:
        self.task = task
        self.keys: set[str] = set()
        self.every = False
        self.idempotent = idempotent  # a block of ``EmbeddedBackend.idempotent``

    def add(self, keys: Iterable[str] | None) -> None:
        if keys is None:
            self.every = True
        else:
            self.keys.update(keys)

    async def wait(self, durability: Durability) -> None:
        if self.every:
            await durability.wait_visible(None)
        elif self.keys:
            await durability.wait_visible(self.keys)


DEFERRED: ContextVar[Deferred | None] = ContextVar("xstreams_deferred_wait", default=None)
