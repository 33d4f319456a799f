"""How REST handlers call the engine: one helper per kind of call.

``apply`` runs a typed engine operation through ``Store.run``, as ``Store.execute`` does for
commands: one atomic step whose effects reach the journal as one record, with the blocked
readers it made ready served inside it — so an entry appended over REST goes to exactly one
waiting consumer. (``RestRoute`` makes the reply of a write wait until it is durable.)

``read`` runs XREAD / XREADGROUP and parks the request when it must wait, stopping at once
when the client goes away (``ClientGone``; the handler answers 499, nobody reads it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeVar

from fastapi import Request

from app.api.deps import wait_for_disconnect
from app.api.errors import NotFound, no_such_stream
from app.engine.blocking import Block
from app.engine.commands.groups import find_group
from app.engine.commands.reads import parse_read, xread
from app.engine.groups import ConsumerGroup
from app.engine.keyspace import Keyspace
from app.engine.replies import StreamRead
from app.engine.store import Store
from app.engine.stream import Stream
from app.engine.waiting import wait

P = ParamSpec("P")
T = TypeVar("T")


def apply(
    store: Store, op: Callable[Concatenate[Keyspace, P], T], *args: P.args, **kwargs: P.kwargs
) -> T:
    """Run one engine operation atomically (journaled), then serve the readers it woke."""
    return store.run(op, *args, **kwargs)


async def read(store: Store, argv: list[str], request: Request) -> list[StreamRead]:
    """XREAD / XREADGROUP from Redis arguments (the engine parses them: ``$``, ``>``, BLOCK
    limits, NOGROUP), waiting on the server when BLOCK says so; [] at timeout."""
    reply = apply(store, _xread, argv)
    if isinstance(reply, Block):
        reply = await wait(store, reply, lambda: wait_for_disconnect(request))
    result: list[StreamRead] = reply or []
    return result


def _xread(ks: Keyspace, argv: list[str]) -> list[StreamRead] | Block | None:
    return xread(ks, parse_read(ks, argv))


def stream_of(store: Store, key: str) -> Stream:
    """The stream a path names, or 404."""
    stream = store.keyspace.get(key)
    if stream is None:
        raise no_such_stream()
    return stream


def group_of(store: Store, key: str, group: str) -> ConsumerGroup:
    """The group a path names, or 404 with Redis's NOGROUP text."""
    return find_group(store.keyspace, key, group)[1]


def require_consumer(store: Store, key: str, group: str, consumer: str) -> None:
    if consumer not in group_of(store, key, group).consumers:
        raise NotFound(f"ERR no such consumer '{consumer}' in group '{group}'")
