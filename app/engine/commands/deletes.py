"""XDELEX and XACKDEL (Redis 8.2): delete entries, or acknowledge and delete them, with a
reference policy (``refs``) and one status code per ID.

The codes, as the command pages give them: -1 the ID is not there (not in the stream for
XDELEX, not pending in the group for XACKDEL), 1 deleted, 2 kept because a group still needs
it (ACKED). A missing key answers -1 for every ID. Under ACKED a group's need is looked at
before the stream: an ID not in the stream that a group still refers to (pending, or after
its last-delivered ID) is 2, as redis-server 8.6 answers.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.engine.commands.args import int_arg
from app.engine.commands.table import Access, Flag, command, key_at
from app.engine.effects import Acked, EntriesDeleted, RefsDropped
from app.engine.errors import CommandError, SyntaxError_, WrongArgument
from app.engine.ids import StreamID, parse_strict_id
from app.engine.keyspace import Keyspace
from app.engine.refs import RefPolicy, drop_refs, ref_policy, referenced
from app.engine.stream import Stream

NOT_FOUND, DELETED, KEPT = -1, 1, 2

W = Flag.WRITE


@dataclass(frozen=True, slots=True)
class IdsBlock:
    """What ``[KEEPREF | DELREF | ACKED] IDS numids id ...`` parsed to. The IDs stay text
    until the key is found: redis-server answers -1 for each on a missing key, valid or not."""

    policy: RefPolicy
    texts: list[str]

    def ids(self) -> list[StreamID]:
        return [parse_strict_id(t) for t in self.texts]


def numids_error() -> CommandError:
    return WrongArgument.err("Number of IDs must be a positive integer")


def mismatch_error() -> CommandError:
    return WrongArgument.err("The `numids` parameter must match the number of arguments")


def parse_ids_block(argv: list[str], start: int) -> IdsBlock:
    """The policy and the IDS block from ``argv[start]`` on, in any order (as redis-server
    8.6 reads them: one policy at most, a later IDS block replaces an earlier one)."""
    policy: RefPolicy | None = None
    texts: list[str] | None = None
    i, n = start, len(argv)
    while i < n:
        option = argv[i]
        named = ref_policy(option)
        if named is not None and policy is None:
            policy = named
            i += 1
        elif option.lower() == "ids" and i + 1 < n:
            numids = int_arg(argv[i + 1], "Number of IDs must be a positive integer")
            if numids <= 0:
                raise numids_error()
            if numids > n - i - 2:
                raise mismatch_error()
            texts = argv[i + 2 : i + 2 + numids]
            i += 2 + numids
        else:
            raise SyntaxError_()
    if texts is None:
        raise SyntaxError_()
    return IdsBlock(policy or RefPolicy.KEEPREF, texts)


def remove_entry(ks: Keyspace, key: str, stream: Stream, sid: StreamID, policy: RefPolicy) -> int:
    """Delete one entry under ``policy``: its status code. DELREF drops the references
    even when the entry itself is gone already (dangling ones). ACKED asks about the
    references first, so an ID a group still holds or has not reached answers 2 (kept)
    whether or not the stream holds it, as redis-server 8.6 answers."""
    if policy is RefPolicy.ACKED and referenced(stream, sid):
        return KEPT
    deleted = stream.delete(sid)
    if deleted:
        if sid > stream.max_deleted_id:
            stream.max_deleted_id = sid
        ks.record(EntriesDeleted(key=key, ids=(sid,)))
    if policy is RefPolicy.DELREF and drop_refs(stream, (sid,)):
        ks.record(RefsDropped(key=key, ids=(sid,)))
    return DELETED if deleted else NOT_FOUND


def xdelex(ks: Keyspace, key: str, ids: list[StreamID], policy: RefPolicy) -> list[int]:
    stream = ks.get(key)
    if stream is None:
        return [NOT_FOUND] * len(ids)
    return [remove_entry(ks, key, stream, sid, policy) for sid in ids]


def xackdel(
    ks: Keyspace, key: str, group_name: str, ids: list[StreamID], policy: RefPolicy
) -> list[int]:
    """Acknowledge each ID in the group, then delete it under the policy. An ID the group
    does not hold pending is -1 and stays; ACKED keeps (2) what another group still needs."""
    stream = ks.get(key)
    group = stream.groups.get(group_name) if stream is not None else None
    if stream is None or group is None:
        return [NOT_FOUND] * len(ids)
    out: list[int] = []
    for sid in ids:
        if not group.ack(sid):
            out.append(NOT_FOUND)
            continue
        ks.record(Acked(key=key, group=group_name, ids=(sid,)))
        ks.blocked.signal(key)  # as XACK: readers waiting on a consumer's pending count
        code = remove_entry(ks, key, stream, sid, policy)
        out.append(DELETED if code == NOT_FOUND else code)
    return out


def _ids(
    ks: Keyspace, key: str, block: IdsBlock, group: str | None = None
) -> list[StreamID] | None:
    """The block's IDs, each checked before the first is deleted (so a bad one changes
    nothing); None on a missing key (or, for XACKDEL, a missing group), which
    redis-server 8.6 answers -1 for whatever they are."""
    stream = ks.get(key)
    if stream is None or (group is not None and group not in stream.groups):
        return None
    return block.ids()


@command("xdelex", -5, W, keys=key_at(1))
def _xdelex(ks: Keyspace, argv: list[str]) -> list[int]:
    block = parse_ids_block(argv, 2)
    ids = _ids(ks, argv[1], block)
    if ids is None:
        return [NOT_FOUND] * len(block.texts)
    return xdelex(ks, argv[1], ids, block.policy)


@command("xackdel", -6, W, keys=key_at(1), access=Access.CONSUME_WRITE)
def _xackdel(ks: Keyspace, argv: list[str]) -> list[int]:
    block = parse_ids_block(argv, 3)
    ids = _ids(ks, argv[1], block, argv[2])
    if ids is None:
        return [NOT_FOUND] * len(block.texts)
    return xackdel(ks, argv[1], argv[2], ids, block.policy)
