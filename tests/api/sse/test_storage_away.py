"""While the database is away, event streams wait instead of ending, and lose nothing.

The backend refuses to answer what is not durable (``StorageUnavailable``); an event source
asks again until the database is back (app/api/sse/settled.py). A group read of new entries
may have made them pending for the consumer before its answer failed: delivery goes back to
the consumer's history, which holds them. In process, over the embedded engine, with a
``Durability`` the test switches off and on.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable

import orjson

from app.api.rest.schemas.entries import FieldsForm
from app.api.sse.flush import Flusher
from app.api.sse.group import GroupDelivery, deliver
from app.api.sse.outbox import CloseReason, Outbox
from app.api.sse.subscriber import Subscriber
from app.api.sse.tail import Tails, follow
from app.backends.embedded import EmbeddedBackend
from app.backends.errors import StorageUnavailable
from app.engine.commands.bulk import xadd_batch
from app.engine.commands.streams import XAddArgs
from app.engine.ids import MIN_ID, format_id
from app.engine.store import Store
from tests.support.waiting import until_async


class Away:
    """Writes are taken; while ``down``, nothing can be made durable (the commit fails)."""

    def __init__(self) -> None:
        self.down = False
        self.refused = 0  # answers refused while down

    def check_writable(self) -> None:
        return None

    async def wait_visible(self, keys: Iterable[str] | None) -> None:
        if self.down:
            self.refused += 1
            raise StorageUnavailable("the database is down")


class Sent:
    """The entry IDs an outbox sends, in order."""

    def __init__(self, outbox: Outbox) -> None:
        self.outbox = outbox
        self.raw = bytearray()
        self.writer = asyncio.create_task(self._write())

    async def _write(self) -> None:
        while (chunk := await self.outbox.take()) is not None:
            self.raw += chunk

    def ids(self) -> list[str]:
        out = []
        for block in bytes(self.raw).split(b"\n\n"):
            fields = dict(line.split(b": ", 1) for line in block.split(b"\n") if line)
            if fields.get(b"event") == b"entry":
                out.append(orjson.loads(fields[b"data"])["id"])
        return out


async def _append(backend: EmbeddedBackend, n: int) -> list[str]:
    """Another client's XADDs, run in the engine (while down, that client's own answer would
    fail; the entries are there all the same)."""
    batch = [XAddArgs("s", ("n", str(i))) for i in range(n)]
    return [format_id(i) for i in backend.store.run(xadd_batch, batch) if i is not None]


async def _stop(outbox: Outbox, task: asyncio.Task[None], sent: Sent) -> None:
    outbox.close(CloseReason.DISCONNECTED)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await sent.writer


async def test_group_delivery_waits_and_then_sends_what_the_failed_read_delivered() -> None:
    away = Away()
    backend = EmbeddedBackend(Store(), durability=away)
    await backend.create_group("s", "g", "$", True, None)
    outbox = Outbox(1 << 20, Flusher())
    sent = Sent(outbox)
    task = asyncio.create_task(deliver(backend, GroupDelivery("s", "g", "c", MIN_ID), outbox))
    await until_async(lambda: backend.store.keyspace.blocked.count() == 1, what="parked")
    away.down = True
    ids = await _append(backend, 3)  # served to the parked read, whose answer then fails
    await until_async(lambda: away.refused >= 3, what="answers refused while down")
    assert _pending_ids(backend) == ids  # the failed read did deliver them
    assert sent.ids() == []  # nothing that is not durable was sent
    away.down = False
    await until_async(lambda: sent.ids() == ids, what="the delivered entries sent once durable")
    await _stop(outbox, task, sent)
    assert sent.ids() == ids  # each once


def _pending_ids(backend: EmbeddedBackend) -> list[str]:
    """The group's pending IDs, read in the engine past the durability wait."""
    stream = backend.store.keyspace.get("s")
    assert stream is not None
    return [format_id(sid) for sid, _ in stream.groups["g"].pel.items()]


async def test_a_tail_waits_and_then_sends_everything_in_order() -> None:
    away = Away()
    backend = EmbeddedBackend(Store(), durability=away)
    first = await _append(backend, 2)
    tails = Tails(backend)
    outbox = Outbox(1 << 20, Flusher())
    sent = Sent(outbox)
    sub = Subscriber(outbox, {"s": MIN_ID}, FieldsForm.object, multi=False)
    task = asyncio.create_task(follow(tails, sub))
    await until_async(lambda: sent.ids() == first, what="the history sent")
    away.down = True
    later = await _append(backend, 3)
    await until_async(lambda: away.refused >= 2, what="answers refused while down")
    assert sent.ids() == first
    away.down = False
    await until_async(lambda: sent.ids() == first + later, what="the rest sent once durable")
    await _stop(outbox, task, sent)
