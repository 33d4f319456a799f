"""SSE group delivery (app/api/sse/group.py) against a fake of the groups role."""

from __future__ import annotations

from typing import cast

from app.api.sse.group import GroupDelivery, held
from app.backends.roles import GroupReadRoles
from app.engine.ids import StreamID
from app.engine.replies import PendingSummary
from tests.support.fakes import PendingOnlyGroups


def delivery(consumer: str) -> GroupDelivery:
    return GroupDelivery("s", "g", consumer, StreamID(0, 0), max_unacked=5)


async def test_held_counts_only_this_consumers_pending_entries() -> None:
    fake = PendingOnlyGroups(
        {("s", "g"): PendingSummary(7, StreamID(1, 0), StreamID(7, 0), [("a", 3), ("b", 4)])}
    )
    assert await held(cast(GroupReadRoles, fake), delivery("b")) == 4
    assert await held(cast(GroupReadRoles, fake), delivery("a")) == 3
    assert await held(cast(GroupReadRoles, fake), delivery("new")) == 0
