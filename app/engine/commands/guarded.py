"""An append that lands only on the state it was decided on: compare, then append, in one step.

A surface that keeps a record of its own beside a stream (the Durable Streams producer state,
Stream-Seq and closed flag: ``app/api/ds``) decides an append by reading that record first.
Two front-ends, or two requests in one, may decide on the same record; a lock in one process
cannot stop the other. So the decision travels with the write: ``Guard`` names the record's
stream and the ID its last entry had when it was read, and ``append_guarded`` appends (and
rewrites the record) only if that is still so. Otherwise nothing is written and the caller
reads the record again and decides again: optimistic concurrency, as a version column would
give in SQL. The Redis backend runs the same check and writes in one script.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.engine.commands.bulk import xadd_batch
from app.engine.commands.streams import XADD_EXHAUSTED, XAddArgs, xadd
from app.engine.errors import Conflict
from app.engine.ids import MAX_ID, StreamID
from app.engine.keyspace import Keyspace
from app.engine.refs import RefPolicy

__all__ = ["Guard", "append_guarded", "check"]


@dataclass(frozen=True, slots=True)
class Guard:
    """The condition: the last entry of the stream at ``key`` is still ``last_id`` (None: it
    has no entry, or there is no stream). Entry IDs only grow, so a rewrite of a record
    (``MAXLEN 1``) always changes it."""

    key: str
    last_id: StreamID | None


def append_guarded(
    ks: Keyspace, batch: Sequence[XAddArgs], guard: Guard, record: XAddArgs | None = None
) -> list[StreamID | None] | None:
    """``batch`` (one stream, all or none, as ``xadd_batch``) then ``record`` (an entry
    appended to the guarded stream, typically with ``MAXLEN 1``), only while ``guard`` holds;
    None, with nothing written, when it no longer does.

    Everything that could refuse the record is checked before the batch is written, so the
    two land together or not at all."""
    check(batch, guard, record)
    stream = ks.get(guard.key)
    last = stream.last_valid_id() if stream is not None and stream.length else None
    if last != guard.last_id:
        return None
    if record is not None and stream is not None and stream.last_id == MAX_ID:
        raise Conflict.err(XADD_EXHAUSTED)
    ids = xadd_batch(ks, list(batch))
    if record is not None:
        xadd(ks, record)
    return ids


def check(batch: Sequence[XAddArgs], guard: Guard, record: XAddArgs | None) -> None:
    """What every backend refuses before it looks at a key: a call that could write half, or
    whose entries could land as anything but appended (NOMKSTREAM, an IDMP repeat, a trim
    that takes a reference policy)."""
    if batch and any(a.key != batch[0].key for a in batch):
        raise ValueError("a batch appends to one stream")
    for a in batch:
        if a.nomkstream or a.idmp is not None:
            raise ValueError("a guarded append takes no NOMKSTREAM and no IDMP")
        if a.trim is not None and a.trim.policy is not RefPolicy.KEEPREF:
            raise ValueError("a guarded append's trim keeps references (KEEPREF)")
    if record is None:
        return
    if record.key != guard.key:
        raise ValueError("the record goes to the guarded stream")
    if record.id is not None or record.nomkstream or record.idmp is not None:
        raise ValueError("the record is a plain `*` entry: nothing may refuse it")
    if batch and batch[0].key == guard.key:
        raise ValueError("the batch goes to another stream than the record")
