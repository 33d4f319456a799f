"""Redis 8.2's reference policies, on their own: trims, deletes and retention all name one,
and the rules they stand for live in ``refs``."""

from __future__ import annotations

from enum import StrEnum


class RefPolicy(StrEnum):
    """What deleting or trimming an entry does to the consumer groups' references to it
    (Redis 8.2): KEEPREF leaves them, DELREF removes them, ACKED deletes only entries that
    no group still needs."""

    KEEPREF = "KEEPREF"
    DELREF = "DELREF"
    ACKED = "ACKED"
