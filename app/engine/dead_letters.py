"""Dead letters: the fields a dead-lettered entry carries, and the chain of dead-letter streams.

A dead letter keeps its entry's fields and gains ``DEAD_LETTER_FIELDS`` after them: where it
came from. An entry that is a dead letter already (a group on a dead-letter stream gave up on
it too) is not wrapped again. It keeps its first origin, and ``xs-dl-hops`` after it counts
the moves: absent after the first, 2 after the second. So an entry never grows with its
hops. Redrive strips the whole tail. The Redis backend's Lua (``DL_TAIL`` in
app/backends/redis/policy_scripts.py) mirrors ``dead_letter_tail`` word for word.

Dead letters follow policies: a group's ``dead_letter_stream`` may have groups whose policies
name further dead-letter streams. ``leads_back`` walks that chain. A policy whose chain comes
back to its own stream is refused: entries would circle for ever, each lap a new entry.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

from app.engine.errors import Conflict, WrongArgument
from app.engine.ids import StreamID, parse_strict_id

__all__ = [
    "DEAD_LETTER_FIELDS",
    "DEAD_LETTER_HOPS",
    "DEAD_LETTER_PREFIX",
    "MAX_DEAD_LETTER_HOPS",
    "DeadLetter",
    "dead_letter_cycle",
    "dead_letter_fields",
    "dead_letter_tail",
    "leads_back",
    "split_dead_letter",
]

# The fields a dead-lettered entry gains, after its own, in this order. The prefix is
# reserved: docs/concepts/delivery-policies.md names it, and redrive removes exactly these
# trailing fields.
DEAD_LETTER_PREFIX: Final = "xs-dl-"
DEAD_LETTER_FIELDS: Final = tuple(
    DEAD_LETTER_PREFIX + name
    for name in ("stream", "id", "group", "consumer", "deliveries", "reason")
)
# After the origin, from the second move on: how many times the entry was dead-lettered.
DEAD_LETTER_HOPS: Final = DEAD_LETTER_PREFIX + "hops"
# Fifteen digits at most: exact in Lua's numbers too, and a bounded field.
MAX_DEAD_LETTER_HOPS: Final = 10**15 - 1
_HOPS_TEXT: Final = re.compile(r"[1-9][0-9]{0,14}")


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """Where a dead-lettered entry came from first (its ``DEAD_LETTER_FIELDS``), and how
    many times it was dead-lettered (``hops``)."""

    stream: str
    id: StreamID
    group: str
    consumer: str
    deliveries: int
    reason: str
    hops: int = 1


def dead_letter_tail(fields: tuple[str, ...]) -> tuple[int, int] | None:
    """How many of ``fields`` come before a dead letter's tail, and its hop count; None
    when the entry does not end with one. Names only: the origin's values are not checked."""
    n, hops = len(fields), 1
    if n >= 2 and fields[n - 2] == DEAD_LETTER_HOPS and _HOPS_TEXT.fullmatch(fields[n - 1]):
        hops = int(fields[n - 1])
        n -= 2
    m = n - 2 * len(DEAD_LETTER_FIELDS)
    if m < 0 or fields[m:n:2] != DEAD_LETTER_FIELDS:
        return None
    return m, hops


def dead_letter_fields(fields: tuple[str, ...], origin: DeadLetter) -> tuple[str, ...]:
    """The dead-letter entry's fields: the original ones, then the origin's. An entry that
    is a dead letter already keeps its fields and first origin, and counts one hop more."""
    tail = dead_letter_tail(fields)
    if tail is not None:
        m, hops = tail
        kept = fields[: m + 2 * len(DEAD_LETTER_FIELDS)]
        return (*kept, DEAD_LETTER_HOPS, str(min(hops + 1, MAX_DEAD_LETTER_HOPS)))
    values = (
        origin.stream,
        str(origin.id),
        origin.group,
        origin.consumer,
        str(origin.deliveries),
        origin.reason,
    )
    out: list[str] = []
    for name, value in zip(DEAD_LETTER_FIELDS, values, strict=True):
        out += (name, value)
    return (*fields, *out)


def split_dead_letter(fields: tuple[str, ...]) -> tuple[tuple[str, ...], DeadLetter] | None:
    """The original fields and the origin of a dead-letter entry; None for an entry that
    does not end with ``DEAD_LETTER_FIELDS`` (and maybe ``DEAD_LETTER_HOPS``), or whose
    origin does not parse (not one this service dead-lettered)."""
    tail = dead_letter_tail(fields)
    if tail is None:
        return None
    m, hops = tail
    stream, id_text, group, consumer, deliveries, reason = fields[m + 1 : m + 12 : 2]
    try:
        sid = parse_strict_id(id_text)
        count = int(deliveries)
    except (WrongArgument, ValueError):
        return None
    return fields[:m], DeadLetter(stream, sid, group, consumer, count, reason, hops)


def leads_back(key: str, dead: str, dead_letter_streams: Callable[[str], Iterable[str]]) -> bool:
    """Whether dead letters sent from ``key`` to ``dead`` can reach ``key`` again: from
    ``dead``, through the dead-letter streams the policies of each stream's groups name
    (``dead_letter_streams``), each stream looked at once."""
    seen = {dead}
    queue = deque([dead])
    while queue:
        name = queue.popleft()
        if name == key:
            return True
        for nxt in dead_letter_streams(name):
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return False


def dead_letter_cycle(key: str, dead: str) -> Conflict:
    """The refusal of a policy whose dead letters would come back (a conflict with the
    policies already set, which the policy that closes the cycle meets)."""
    return Conflict(
        f"ERR dead_letter_stream '{dead}' leads back to '{key}' through the policies of its "
        "groups: dead letters would go round for ever"
    )
