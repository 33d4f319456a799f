"""Small fakes of single backend roles (app/backends/roles.py), for tests of code that calls
only those roles: quicker and plainer than a whole backend, in the way httpx's MockTransport
stands in for a network. Each implements just what its consumers call; the rest raise."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from app.engine.commands.streams import RangeArgs
from app.engine.delivery import Webhook
from app.engine.ids import StreamID
from app.engine.node_reads import Entry
from app.engine.webhook_health import HealthUpdate, WebhookHealth

__all__ = ["RangeOnlyStreams", "RecordingWebhooks"]


@dataclass
class RangeOnlyStreams:
    """In-memory entries of streams, answering XRANGE pages; ``calls`` counts the pages asked
    for, so a test sees how a caller pages."""

    entries: dict[str, list[Entry]] = field(default_factory=dict)
    calls: list[RangeArgs] = field(default_factory=list)

    async def range(self, args: RangeArgs, rev: bool = False) -> list[Entry]:
        self.calls.append(args)
        found = [e for e in self.entries.get(args.key, []) if args.start <= e.id <= args.end]
        found = found[::-1] if rev else found
        return found if args.count is None else found[: args.count]


@dataclass
class RecordingWebhooks:
    """Records every health write; ``fail`` makes the next writes raise it."""

    writes: list[tuple[Webhook, HealthUpdate]] = field(default_factory=list)
    fail: Exception | None = None

    async def record_webhook_health(self, hook: Webhook, update: HealthUpdate) -> None:
        if self.fail is not None:
            raise self.fail
        self.writes.append((hook, update))

    async def webhook_health(self, hooks: Sequence[Webhook]) -> list[WebhookHealth | None]:
        return [None for _ in hooks]


def entries(n: int) -> list[Entry]:
    """``n`` entries with IDs 1-0 ... n-0."""
    return [Entry(StreamID(i, 0), ["n", str(i)]) for i in range(1, n + 1)]
