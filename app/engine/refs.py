"""What deleting an entry does to the groups that still refer to it (Redis 8.2's policies).

Every way an entry leaves a stream (XDELEX, XACKDEL, XADD / XTRIM trimming) takes one of
three policies, and this module holds their two rules once for all of them:

- KEEPREF, the default and Redis 7.0's only behaviour: the entry goes, any group PEL that
  holds its ID keeps it (a read of the consumer's history then shows a nil entry).
- DELREF: the entry goes and so does every reference to it in every group's PEL.
- ACKED: the entry goes only when no group needs it any more (``referenced`` is false).
"""

from __future__ import annotations

from collections.abc import Iterable

from app.engine.ids import StreamID
from app.engine.pel import key_of
from app.engine.stream import RefPolicy, Stream, TrimOutcome, TrimSpec

__all__ = ["RefPolicy", "drop_refs", "ref_policy", "referenced", "trim_stream"]


def ref_policy(text: str) -> RefPolicy | None:
    """The policy an option names (any case), or None when it names none."""
    upper = text.upper()
    return RefPolicy(upper) if upper in RefPolicy.__members__ else None


def referenced(stream: Stream, sid: StreamID) -> bool:
    """Whether a group still needs ``sid``: some group has not delivered it yet (it lies
    after that group's last-delivered ID), or holds it pending. A stream without groups
    needs nothing, so ACKED deletes there as KEEPREF does."""
    key = key_of(sid)
    for group in stream.groups.values():
        if sid > group.last_id or group.pel.lookup(key) is not None:
            return True
    return False


def drop_refs(stream: Stream, ids: Iterable[StreamID]) -> bool:
    """DELREF: take ``ids`` out of every group's PEL (and their owners'); True when one was
    there. Replay applies the same function, so it removes the same references."""
    dropped = False
    groups = [g for g in stream.groups.values() if g.pel]
    if not groups:
        return False
    for sid in ids:
        for group in groups:
            if group.ack(sid):
                dropped = True
    return dropped


def trim_stream(stream: Stream, spec: TrimSpec) -> TrimOutcome:
    """XTRIM / XADD's trim clause under its policy; replay runs the same function, so it
    removes the same entries and references. ACKED keeps what a group still needs."""
    if spec.policy is RefPolicy.KEEPREF or (spec.policy is RefPolicy.DELREF and not stream.groups):
        return stream.trim(spec)
    if spec.policy is RefPolicy.DELREF:
        removed: list[StreamID] = []
        outcome = stream.trim(spec, removed=removed)
        drop_refs(stream, removed)
        return outcome
    return stream.trim(spec, keep=lambda sid: referenced(stream, sid))
