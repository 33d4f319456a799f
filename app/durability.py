"""The contract between the embedded backend and storage: what an answer waits for.

Storage implements it (``app.storage.Storage``); ``app/main.py`` hands it to the embedded
backend, which calls ``check_writable()`` before a write and awaits ``wait_visible(keys)``
before any answer about those keys, reads and errors included, so no answer shows state a
crash could take back (docs/architecture.md, "The request protocol"). The API never calls
either: it takes only ``Readiness`` from here. ``InMemory`` is the no-storage stand-in.

Errors: ``StorageUnavailable`` (the state cannot be made durable now: 503) is the only one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from enum import StrEnum
from typing import Protocol

__all__ = ["Durability", "InMemory", "Readiness", "ReadyState", "StorageUnavailable"]


class StorageUnavailable(Exception):
    """The database does not accept writes: a write is refused (or, if it was already in
    flight, its reply fails) with 503 until the database is back, and so is a read of a key
    whose newest records are not committed."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        self.text = (
            f"ERR storage unavailable: {reason}. Writes, and reads of what is not durable yet,"
            " are refused until the database is back"
        )
        super().__init__(self.text)


class Durability(Protocol):
    def check_writable(self) -> None:
        """Raise ``StorageUnavailable`` if a write must not run now."""

    async def wait_visible(self, keys: Iterable[str] | None) -> None:
        """Return once the records that changed ``keys`` (None: any key) are as durable as
        the mode promises, so a reply showing those keys shows nothing a crash can take back;
        raise ``StorageUnavailable`` when they cannot be made durable now."""

    def holding(self) -> AbstractContextManager[None]:
        """A block during which nothing appended from its start on is committed: what a
        request writes and the response kept for it (Idempotency-Key) commit together or not
        at all. Held only while a request runs, never across a wait for a client."""
        ...


class InMemory:
    """No storage: every write is accepted and nothing is waited for."""

    def check_writable(self) -> None:
        return None

    async def wait_visible(self, keys: Iterable[str] | None) -> None:
        return None

    @contextmanager
    def holding(self) -> Iterator[None]:
        yield


class ReadyState(StrEnum):
    STARTING = "starting"  # the app exists; recovery has not started (no lifespan yet)
    RECOVERING = "recovering"  # migrations and snapshot + journal replay are running
    READY = "ready"  # serving
    FAILED = "failed"  # recovery stopped on an error; the process is shutting down


class Readiness:
    """Whether the keyspace is loaded. ``/readyz`` reports it; requests wait on it."""

    def __init__(self, state: ReadyState = ReadyState.STARTING) -> None:
        self.state = state
        self.error: str | None = None
        # Why recovery is waiting instead of loading (a database that cannot be reached or
        # written); requests are then refused at once with it instead of held.
        self.waiting: str | None = None
        self._event = asyncio.Event()
        if state is ReadyState.READY:
            self._event.set()

    def set_ready(self) -> None:
        self.state = ReadyState.READY
        self._event.set()

    def set_waiting(self, reason: str | None) -> None:
        self.waiting = reason

    def set_failed(self, error: str) -> None:
        self.state = ReadyState.FAILED
        self.error = error

    async def wait(self, timeout_s: float) -> bool:
        """Whether the keyspace became ready within ``timeout_s``."""
        if self._event.is_set():
            return True
        try:
            await asyncio.wait_for(self._event.wait(), timeout_s)
        except TimeoutError:
            return False
        return True
