"""Small fakes of single backend roles (app/backends/roles.py), for tests of code that calls
only those roles: quicker and plainer than a whole backend, in the way httpx's MockTransport
stands in for a network. Each implements just what its consumers call; the rest raise."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from app.access.rates import Decision, Mode, Rate
from app.engine.commands.streams import RangeArgs
from app.engine.delivery import DeliveryPolicy, Retention, Webhook
from app.engine.ids import StreamID
from app.engine.node_reads import Entry
from app.engine.replies import PendingSummary, ScanPage
from app.engine.webhook_health import HealthUpdate, WebhookHealth

__all__ = [
    "FailingCommands",
    "PendingOnlyGroups",
    "PlainLifecycle",
    "PolicyOnlyDelivery",
    "RangeOnlyStreams",
    "RecordingRetention",
    "RecordingWebhooks",
    "ScriptedRates",
]


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


@dataclass
class RecordingRetention:
    """Keyspace and retention roles for the retention worker: ``own`` retentions by name,
    ``keys`` the SCAN listing (one page of ``page`` keys a call), ``backlog`` how many
    entries each stream is over its retention (a step removes up to ``limit``), ``fail``
    keys whose steps raise. ``steps`` records every ``enforce_retention`` call."""

    own: dict[str, Retention] = field(default_factory=dict)
    keys: list[str] = field(default_factory=list)
    backlog: dict[str, int] = field(default_factory=dict)
    fail: dict[str, Exception] = field(default_factory=dict)
    page: int = 2
    steps: list[tuple[str, Retention, int]] = field(default_factory=list)

    async def retentions(self) -> dict[str, Retention]:
        return dict(self.own)

    async def scan(self, cursor: int, match: str | None, count: int | None) -> ScanPage:
        keys = self.keys[cursor : cursor + self.page]
        nxt = cursor + self.page
        return ScanPage(nxt if nxt < len(self.keys) else 0, keys)

    async def enforce_retention(self, key: str, retention: Retention, limit: int) -> int:
        self.steps.append((key, retention, limit))
        if key in self.fail:
            raise self.fail[key]
        n = min(limit, self.backlog.get(key, 0))
        self.backlog[key] = self.backlog.get(key, 0) - n
        return n


@dataclass
class PendingOnlyGroups:
    """XPENDING's summary per (key, group): what an SSE group delivery asks to know how many
    entries its consumer holds."""

    summaries: dict[tuple[str, str], PendingSummary] = field(default_factory=dict)

    async def pending_summary(self, key: str, group: str) -> PendingSummary:
        return self.summaries.get((key, group), PendingSummary(0, None, None, []))


@dataclass
class PlainLifecycle:
    """Lifecycle with nothing to wait for: ``answering`` yields at once; counts its blocks,
    says whether one is open (``inside``); ``fail_on_exit`` is raised leaving a block (the
    durable wait's outcome: ``ClientGone``, ``StorageUnavailable``)."""

    started: bool = False
    closed: bool = False
    blocks: int = 0
    inside: bool = False
    fail_on_exit: Exception | None = None

    async def start(self) -> None:
        self.started = True

    async def close(self) -> None:
        self.closed = True

    @asynccontextmanager
    async def answering(self) -> AsyncIterator[None]:
        self.blocks += 1
        self.inside = True
        try:
            yield
        finally:
            self.inside = False
        if self.fail_on_exit is not None:
            raise self.fail_on_exit


@dataclass
class FailingCommands(PlainLifecycle):
    """The command endpoint's roles for a backend that cannot answer: every command and
    pipeline raises ``error`` (a ``BackendUnavailable``, say); ``argv`` records what ran."""

    error: Exception = field(default_factory=lambda: ConnectionError("down"))
    argv: list[Sequence[str]] = field(default_factory=list)
    name: str = "fake"
    checks_commands: bool = False

    async def command(self, argv: Sequence[str], gone: object = None) -> object:
        self.argv.append(argv)
        raise self.error

    async def pipeline(self, commands: Sequence[Sequence[str]], gone: object = None) -> object:
        self.argv.extend(commands)
        raise self.error

    async def webhooks(self, key: str | None = None, group: str | None = None) -> list[Webhook]:
        return []  # create_app hands it to the webhook runner, which is not started here


@dataclass
class PolicyOnlyDelivery:
    """Delivery policies by (key, group), as a webhook's loop looks them up; ``asked``
    records the lookups."""

    policies: dict[tuple[str, str], DeliveryPolicy] = field(default_factory=dict)
    asked: list[tuple[str, str]] = field(default_factory=list)

    async def delivery_policy(self, key: str, group: str) -> DeliveryPolicy | None:
        self.asked.append((key, group))
        return self.policies.get((key, group))


@dataclass
class ScriptedRates:
    """Credentials' budgets that answer what the test says: ``decisions`` in turn (the last
    one again when they run out), or ``fail`` raised; ``spent`` records (key, rate, cost)."""

    decisions: list[Decision] = field(default_factory=list)
    fail: Exception | None = None
    spent: list[tuple[str, Rate, int]] = field(default_factory=list)

    async def spend_rate(
        self,
        key: str,
        rate: Rate,
        cost: int = 1,
        mode: Mode = Mode.TAKE,
        now_us: int | None = None,
    ) -> Decision:
        self.spent.append((key, rate, cost))
        if self.fail is not None:
            raise self.fail
        return self.decisions.pop(0) if len(self.decisions) > 1 else self.decisions[0]


def entries(n: int) -> list[Entry]:
    """``n`` entries with IDs 1-0 ... n-0."""
    return [Entry(StreamID(i, 0), ("n", str(i))) for i in range(1, n + 1)]
