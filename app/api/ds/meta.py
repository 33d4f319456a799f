"""A Durable Stream's metadata record, kept with the stream on either backend.

The record (content type, TTL or expiry, closed, last ``Stream-Seq``, producer state, fork
links) is the one entry of a companion stream, ``{path}:ds-meta`` (``meta_key``), rewritten
with ``MAXLEN 1`` on each change through the Backend's typed operations. Its existence is the
Durable Stream's: a stream created empty has a record and no entries yet.

Every decision taken on the record (a producer's sequence, Stream-Seq, closed) is written with
the entries it admits in one guarded step (``guard``, ``record``): if another request or
another front-end changed the record meanwhile, nothing is written and the request decides
again on the new record. The record's entry ID is its version.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import orjson

from app.api.meter import unmetered
from app.backends import Backend
from app.engine.commands.guarded import Guard
from app.engine.commands.streams import RangeArgs, XAddArgs
from app.engine.ids import MAX_ID, MIN_ID, StreamID
from app.engine.stream import TrimSpec, TrimStrategy

from . import headers

__all__ = [
    "Meta",
    "RecordBusy",
    "UnreadableRecord",
    "delete",
    "guard",
    "load",
    "meta_key",
    "record",
    "save",
    "save_if",
    "tail",
    "update",
]

SUFFIX = ":ds-meta"
_KEEP_ONE = TrimSpec(TrimStrategy.MAXLEN, maxlen=1)


def _has_tag(key: str) -> bool:
    """Whether Redis Cluster hashes ``key`` by a hash tag (its first non-empty ``{...}``)."""
    start = key.find("{")
    return start != -1 and key.find("}", start + 1) > start + 1


def meta_key(key: str) -> str:
    """The record's stream, in the data stream's cluster slot so that one XREAD can wait on
    both (a long poll wakes on an append or a close): ``{key}:ds-meta``, or ``key:ds-meta``
    when the key has a hash tag of its own (then the tag is kept). A key with a ``}`` and no
    tag gets ``key:ds-meta``, in another slot: its live reads fail on Redis Cluster."""
    if _has_tag(key) or "}" in key:
        return key + SUFFIX
    return "{" + key + "}" + SUFFIX


class UnreadableRecord(Exception):
    """The record's stream holds an entry this surface did not write (another surface wrote
    to ``{path}:ds-meta``): the stream is refused with the reason, never guessed at."""


@dataclass(frozen=True, slots=True)
class Meta:
    content_type: str
    ttl: int | None = None
    expires_at: str | None = None
    closed: bool = False
    seq: str | None = None  # the last Stream-Seq accepted
    # Producer-Id -> [epoch, last seq]
    producers: dict[str, list[int]] = field(default_factory=dict)
    closer: list[object] | None = None  # [id, epoch, seq] of the producer that closed it
    forked_from: str | None = None  # the source's key, for a fork
    fork_offset: str | None = None  # where it diverged (an offset token)
    fork_sub: int = 0  # Stream-Fork-Sub-Offset past fork_offset
    refs: int = 0  # forks that name this stream as their source
    deleted: bool = False  # soft-deleted: gone for clients, kept while forks name it
    written: StreamID = MIN_ID  # the record's entry ID: when it last changed

    def fields(self) -> tuple[str, ...]:
        return (
            "content-type", self.content_type,
            "ttl", "" if self.ttl is None else str(self.ttl),
            "expires-at", self.expires_at or "",
            "closed", "1" if self.closed else "0",
            "seq", "" if self.seq is None else self.seq,
            "producers", orjson.dumps(self.producers).decode(),
            "closer", "" if self.closer is None else orjson.dumps(self.closer).decode(),
            "forked-from", self.forked_from or "",
            "fork-offset", self.fork_offset or "",
            "fork-sub", str(self.fork_sub),
            "refs", str(self.refs),
            "deleted", "1" if self.deleted else "0",
        )  # fmt: skip

    def expired(self, touched_ms: int, now_ms: int | None = None) -> bool:
        now = int(time.time() * 1000) if now_ms is None else now_ms
        if self.expires_at is not None and now >= headers.expires_ms(self.expires_at):
            return True
        return self.ttl is not None and now >= max(touched_ms, self.written.ms) + self.ttl * 1000


def _from(entry_id: StreamID, flat: tuple[str, ...]) -> Meta:
    got = dict(zip(flat[::2], flat[1::2], strict=True))
    ttl = got.get("ttl", "")
    return Meta(
        content_type=got.get("content-type", headers.DEFAULT_TYPE),
        ttl=int(ttl) if ttl else None,
        expires_at=got.get("expires-at") or None,
        closed=got.get("closed") == "1",
        seq=got.get("seq") or None,
        producers=orjson.loads(got.get("producers") or "{}"),
        closer=orjson.loads(got["closer"]) if got.get("closer") else None,
        forked_from=got.get("forked-from") or None,
        fork_offset=got.get("fork-offset") or None,
        fork_sub=int(got.get("fork-sub") or 0),
        refs=int(got.get("refs") or 0),
        deleted=got.get("deleted") == "1",
        written=entry_id,
    )


async def load(backend: Backend, key: str) -> Meta | None:
    """The stream's record, or None when no Durable Stream is at ``key``."""
    with unmetered():  # the service's bookkeeping, not the caller's read
        last = await backend.range(RangeArgs(meta_key(key), MIN_ID, MAX_ID, 1), rev=True)
    if not last:
        return None
    try:
        return _from(last[0].id, last[0].fields)
    except (ValueError, TypeError) as e:  # orjson's decode error is a ValueError
        raise UnreadableRecord(
            f"the Durable Streams record of this stream ({meta_key(key)}) was written by"
            " something else and cannot be read; delete it with DEL to start over"
        ) from e


def record(key: str, meta: Meta) -> XAddArgs:
    """The entry that replaces the record (the stream keeps the newest one only)."""
    return XAddArgs(meta_key(key), meta.fields(), trim=_KEEP_ONE)


def guard(key: str, read: Meta | None) -> Guard:
    """A write decided on ``read`` (None: no record was there) lands only while the record
    is still that one (``StreamsRole.append_guarded``)."""
    return Guard(meta_key(key), None if read is None else read.written)


async def save(backend: Backend, key: str, meta: Meta) -> Meta:
    with unmetered():
        (entry_id,) = await backend.append([record(key, meta)])
    assert entry_id is not None
    return replace(meta, written=entry_id)


async def save_if(backend: Backend, key: str, meta: Meta, read: Meta | None) -> bool:
    """``meta`` written only if the record is still ``read``; False, nothing written, if it
    changed since: read it again and decide again."""
    return await backend.append_guarded([], guard(key, read), record(key, meta)) is not None


UPDATE_ATTEMPTS = 32


async def update(backend: Backend, key: str, change: Callable[[Meta], Meta]) -> Meta | None:
    """The record read, changed and written back guarded, again while another writer gets
    there first (a fork's count of forks naming its source); None when there is no record."""
    for _ in range(UPDATE_ATTEMPTS):
        read = await load(backend, key)
        if read is None:
            return None
        changed = change(read)
        if await save_if(backend, key, changed, read):
            return changed
    raise RecordBusy(f"the Durable Streams record of {key} kept changing")


class RecordBusy(Exception):
    """A record changed under every one of a write's attempts: the client should try again."""


async def delete(backend: Backend, key: str) -> bool:
    """Both streams; True when there was a Durable Stream."""
    existed = await backend.delete_stream(meta_key(key))
    await backend.delete_stream(key)
    return existed


async def tail(backend: Backend, key: str) -> StreamID:
    """The ID of the stream's last entry (0-0 when it has none)."""
    with unmetered():
        last = await backend.range(RangeArgs(key, MIN_ID, MAX_ID, 1), rev=True)
    return last[0].id if last else MIN_ID
