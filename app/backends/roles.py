"""The backend's operations, grouped by role.

A surface or a worker declares only the roles it calls (SSE tails with ``StreamsRole``, the
webhook runner takes the group, delivery and webhook roles), so its tests can hand it a small
fake of those roles and a new operation touches only the role it belongs to. ``Backend``
(app/backends/base.py) is the union every implementation provides.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Protocol

from app.access.rates import Decision, Mode, Rate
from app.backends.idempotency import Run, Ticket
from app.engine.commands.claims import AutoClaimArgs, ClaimArgs
from app.engine.commands.groups import PendingArgs
from app.engine.commands.guarded import Guard
from app.engine.commands.nack import NackArgs
from app.engine.commands.reads import ReadRequest
from app.engine.commands.streams import RangeArgs, XAddArgs, XSetIdArgs
from app.engine.commands.xcfgset import XCfgSetArgs
from app.engine.delivery import (
    DeliveryPolicy,
    DeliveryStats,
    RedriveArgs,
    Redriven,
    Retention,
    Webhook,
)
from app.engine.errors import CommandError
from app.engine.ids import StreamID
from app.engine.refs import RefPolicy
from app.engine.replies import (
    AutoClaim,
    CommandReply,
    ConsumerInfo,
    GroupInfo,
    PendingRow,
    PendingSummary,
    ScanPage,
    Storage,
    StreamFullInfo,
    StreamInfo,
    StreamRead,
)
from app.engine.stream import Entry, TrimSpec
from app.engine.webhook_health import HealthUpdate, WebhookHealth

__all__ = [
    "CommandEndpointRoles",
    "CommandsRole",
    "DeliveryRole",
    "ExplainRoles",
    "Gone",
    "GroupReadRoles",
    "GroupsRole",
    "HookRoles",
    "JsonReply",
    "KeyspaceRole",
    "LifecycleRole",
    "RatesRole",
    "RetentionRole",
    "RetentionRoles",
    "StreamsRole",
    "TailRoles",
    "WebhookRunnerRoles",
    "WebhooksRole",
]

# What the command endpoint gets back for one command: the engine's reply objects, or a RESP
# tree (``str`` for bulk strings, ``Status`` for simple strings, ``int``, ``None``, ``list``)
# from a pass-through backend, both of the engine's ``CommandReply``. The endpoint's shaper
# writes either in Upstash's JSON.
JsonReply = CommandReply

# Returns when the caller (an HTTP client) has gone away: a blocking read stops at once,
# raising ``ClientGone`` (the surface answers nobody: REST's 499).
Gone = Callable[[], Awaitable[None]]


class LifecycleRole(Protocol):
    """Starting, stopping, and the blocks that hold answers until they are durable: what the
    app's lifespan and every writing surface need."""

    async def start(self) -> None: ...
    async def close(self) -> None: ...

    def answering(self) -> AbstractAsyncContextManager[None]:
        """A block in which this task's calls answer at once and leaving the block waits
        until everything they answered about is durable, errors included (a ``ClientGone``
        waits for nothing). A surface builds its response inside and sends it after: the
        work overlaps the journal's commit instead of following it. Outside such a block
        every call waits by itself; a backend with nothing to wait for yields at once."""
        ...

    def idempotent(self, ticket: Ticket) -> AbstractAsyncContextManager[Run]:
        """One request under an Idempotency-Key (app/backends/idempotency.py): a ``Run``
        holding the response kept for ``ticket`` to send again, or leave to run; the
        response put in ``Run.keep`` is stored atomically with what the request wrote.
        ``KeyReused`` when the key was kept for another request, ``StillRunning`` while its
        first request runs. The calls inside answer as in ``answering``; a blocking read is
        refused (``BLOCKING_REFUSED``)."""
        ...


class CommandsRole(Protocol):
    """Raw Redis commands as the command endpoint runs them."""

    # --- command endpoint -------------------------------------------------------------
    async def command(self, argv: Sequence[str], gone: Gone | None = None) -> JsonReply:
        """One Redis command as the Upstash protocol answers it (``{"result": ...}``'s value);
        an error reply raises ``CommandError``. BLOCK waits on the server; ``gone`` stops the
        wait at once (``ClientGone``), and the read is handed nothing more."""
        ...

    async def pipeline(
        self, commands: Sequence[Sequence[str]], gone: Gone | None = None
    ) -> list[JsonReply | CommandError]:
        """``/pipeline``: each command's reply or error, in order, not atomic. The backend's
        own trouble with any command (``BackendUnavailable``) is raised for the whole
        request instead of standing as that command's error. A blocking read in it stops
        when ``gone`` returns, failing the whole request (``ClientGone``)."""
        ...

    async def multi_exec(self, commands: Sequence[Sequence[str]]) -> list[JsonReply | CommandError]:
        """``/multi-exec``: all commands atomically (one slot in a cluster)."""
        ...


class KeyspaceRole(Protocol):
    """Whole streams: scan, inspect, delete, trim and configure them."""

    # --- streams ----------------------------------------------------------------------
    async def scan(self, cursor: int, match: str | None, count: int | None) -> ScanPage: ...
    async def stream_info(self, key: str) -> StreamInfo: ...  # NotFound if missing
    async def stream_infos(self, keys: Sequence[str]) -> list[StreamInfo | None]:
        """XINFO STREAM for each key, in one round trip (a page of SCAN listed over REST):
        None where the key is missing (deleted since it was listed) or holds no stream. Not
        atomic across keys: each key's info is of one point, as SCAN's pages are."""
        ...

    async def stream_full_info(self, key: str, count: int) -> StreamFullInfo: ...
    async def storage(self, prefix: str) -> Storage:
        """What the streams whose names begin with ``prefix`` hold; a walk over the keyspace
        (SCAN in Redis), so a caller measures now and then, not per request."""
        ...

    async def delete_stream(self, key: str) -> bool: ...
    async def trim(self, key: str, spec: TrimSpec) -> int: ...
    async def set_id(self, args: XSetIdArgs) -> None: ...
    async def configure_idmp(self, args: XCfgSetArgs) -> None:
        """XCFGSET (Redis 8.6): the stream's IDMP window and size; a change forgets every
        producer's iids. ``NoSuchKey`` for a missing stream; ``NotAvailable`` on a Redis
        server older than 8.6."""
        ...


class StreamsRole(Protocol):
    """Entries of a stream: append, range, delete and (blocking) read; all SSE needs to tail."""

    # --- entries ----------------------------------------------------------------------
    async def append(self, batch: Sequence[XAddArgs]) -> list[StreamID | None]:
        """XADD each, atomically when several (all or none); None where NOMKSTREAM found no
        stream."""
        ...

    async def append_guarded(
        self, batch: Sequence[XAddArgs], guard: Guard, record: XAddArgs | None = None
    ) -> list[StreamID | None] | None:
        """``batch``, then ``record`` onto the guarded stream, in one atomic step, only while
        ``guard`` holds (app/engine/commands/guarded.py); None, nothing written, when it no
        longer does: read again, decide again."""
        ...

    async def range(self, args: RangeArgs, rev: bool = False) -> list[Entry]: ...
    async def delete_entries(self, key: str, ids: Sequence[StreamID]) -> int: ...
    async def delete_with_policy(
        self, key: str, ids: Sequence[StreamID], policy: RefPolicy
    ) -> list[int]:
        """XDELEX (Redis 8.2): one status code per ID (-1, 1, 2)."""
        ...

    async def read(self, request: ReadRequest, gone: Gone | None = None) -> list[StreamRead]:
        """XREAD / XREADGROUP; with ``block_ms`` waits (``gone`` stops it, raising
        ``ClientGone``); [] at timeout."""
        ...


class GroupsRole(Protocol):
    """Consumer groups, their consumers and pending entries."""

    # --- groups and consumers ---------------------------------------------------------
    async def groups(self, key: str, start: str = "", count: int = 0) -> list[GroupInfo]:
        """XINFO GROUPS: every group (``count`` 0), refused past ``max_reply_entries``; or
        one page by name, at most ``count`` groups named ``start`` or after (REST's pages)."""
        ...

    async def group(self, key: str, name: str) -> GroupInfo:
        """One group as XINFO GROUPS shows it; ``NoGroup`` with XPENDING's text ("NOGROUP No
        such key 'k' or consumer group 'g'", ``no_such_group``) when the key or the group is
        missing. What REST answers for a group its path names."""
        ...

    async def create_group(
        self, key: str, name: str, id_text: str, mkstream: bool, entries_read: int | None
    ) -> None: ...
    async def set_group_id(
        self, key: str, name: str, id_text: str, entries_read: int | None
    ) -> None: ...
    async def destroy_group(self, key: str, name: str) -> bool: ...
    async def consumers(
        self, key: str, group: str, start: str = "", count: int = 0
    ) -> list[ConsumerInfo]:
        """XINFO CONSUMERS, whole or one page by name, as ``groups``."""
        ...

    async def create_consumer(self, key: str, group: str, consumer: str) -> bool: ...
    async def delete_consumer(self, key: str, group: str, consumer: str) -> int: ...

    # --- pending entries --------------------------------------------------------------
    async def ack(self, key: str, group: str, ids: Sequence[StreamID]) -> int: ...
    async def ack_delete(
        self, key: str, group: str, ids: Sequence[StreamID], policy: RefPolicy
    ) -> list[int]:
        """XACKDEL (Redis 8.2): one status code per ID (-1, 1, 2)."""
        ...

    async def nack(self, args: NackArgs) -> int:
        """XNACK (Redis 8.8): how many entries were released."""
        ...

    async def pending_summary(self, key: str, group: str) -> PendingSummary: ...
    async def pending(self, args: PendingArgs) -> list[PendingRow]: ...
    async def claim(self, args: ClaimArgs) -> list[Entry | StreamID]: ...
    async def autoclaim(self, args: AutoClaimArgs) -> AutoClaim: ...


class DeliveryRole(Protocol):
    """Delivery policies (retries, dead letters), their counters, and redrive, kept per group."""

    # --- delivery policies and retention (app/engine/delivery.py) ----------------------
    async def delivery_policy(self, key: str, group: str) -> DeliveryPolicy | None:
        """The group's delivery policy (None: the group is plain Redis); ``NoGroup`` (as
        ``group``) when the key or the group is missing."""
        ...

    async def delivery_policies(self, key: str) -> dict[str, DeliveryPolicy]:
        """Every policy of the stream's groups, by group name ({} for a missing stream)."""
        ...

    async def set_delivery_policy(
        self, key: str, group: str, policy: DeliveryPolicy | None
    ) -> bool:
        """Set the group's policy, or remove it (None); whether it had one. ``NoGroup`` when
        the group is missing; ``WrongArgument`` when the policy cannot serve this stream;
        ``Conflict`` when its dead letters would come back to it (app/engine/dead_letters.py).
        The policy goes with the group (XGROUP DESTROY, DEL)."""
        ...

    async def redrive(self, args: RedriveArgs) -> Redriven:
        """Append dead-letter entries of ``args.key`` back as new entries (fields without the
        dead-letter ones) and delete them from the dead-letter stream, each move atomic.
        ``NoSuchKey`` when the dead-letter stream is missing."""
        ...

    async def delivery_stats(self) -> list[DeliveryStats]:
        """The counters of every group with a policy."""
        ...


class RetentionRole(Protocol):
    """Retention kept per stream name, and the bounded steps that enforce it."""

    async def retention(self, key: str) -> Retention | None:
        """The retention set for ``key`` (None: none). Kept by name: it outlives a DEL of
        the stream and applies when the name holds a stream again."""
        ...

    async def set_retention(self, key: str, retention: Retention | None) -> bool:
        """Set or remove (None) the retention of ``key``; whether one was set before."""
        ...

    async def retentions(self) -> dict[str, Retention]:
        """Every retention set by name (what the background task walks, beside the
        settings' glob defaults)."""
        ...

    async def enforce_retention(self, key: str, retention: Retention, limit: int) -> int:
        """One bounded step of trimming ``key`` to ``retention`` by the backend's clock
        (by age exactly, by length and bytes MAXLEN ``~``; at most ``limit`` entries a
        trim): how many entries it removed; 0 when the stream is within it or missing.
        Journaled as any trim."""


class WebhooksRole(Protocol):
    """Webhooks and their health: what the webhook runner reads and records."""

    # --- webhooks (app/engine/delivery.py ``Webhook``; run by app/delivery) -----------
    async def webhooks(self, key: str | None = None, group: str | None = None) -> list[Webhook]:
        """The webhooks set: every one (``key`` None), a stream's, or a group's; in order
        of stream, group, name. Secrets included: the caller never shows them."""
        ...

    async def set_webhook(self, hook: Webhook) -> bool:
        """Create or replace the webhook ``hook.name`` of its group; whether it was new.
        ``NoGroup`` when the group is missing. It goes with the group (XGROUP DESTROY, DEL)."""
        ...

    async def delete_webhook(self, key: str, group: str, name: str) -> bool:
        """Remove a webhook; whether there was one (its consumer and PEL stay)."""
        ...

    async def webhook_health(self, hooks: Sequence[Webhook]) -> list[WebhookHealth | None]:
        """The health of each of ``hooks`` (of its URL), None where none is known. Not
        journaled: an observation (app/engine/webhook_health.py says why)."""
        ...

    async def record_webhook_health(self, hook: Webhook, update: HealthUpdate) -> None:
        """Fold ``update`` into the health of ``hook`` (of its URL), shared by every process
        in front of the same Redis."""
        ...


class RatesRole(Protocol):
    """Credentials' request budgets (app/access/rates.py), kept where every front-end of the
    backend shares them: in process for the engine, in Redis in front of it."""

    async def spend_rate(
        self,
        key: str,
        rate: Rate,
        cost: int = 1,
        mode: Mode = Mode.TAKE,
        now_us: int | None = None,
    ) -> Decision:
        """Spend ``cost`` units of ``rate`` for the budget ``key`` (a credential's, per
        policy) as ``mode`` says (app/access/rates.py): whether they pass, and when the next
        would. ``now_us`` stands in for the backend's clock in tests only."""
        ...


# --- what each consumer takes -------------------------------------------------------------
class CommandEndpointRoles(CommandsRole, Protocol):
    """The command endpoint (app/api/commands/routes.py): raw commands, and what it must know
    of the backend that runs them."""

    name: str  # "embedded" | "redis" | "redis-cluster": named in the refusals it words
    # Whether the backend runs the command table itself (``Backend.checks_commands``).
    checks_commands: bool


class ExplainRoles(KeyspaceRole, GroupsRole, Protocol):
    """REST's wording of a group's errors (app/api/rest/explain.py): a missing stream or a
    missing group, told apart."""


class TailRoles(KeyspaceRole, StreamsRole, Protocol):
    """An SSE tail (app/api/sse/tail.py): a stream's info, its ranges and blocking reads."""


class GroupReadRoles(StreamsRole, GroupsRole, Protocol):
    """An SSE group delivery (app/api/sse/group.py): XREADGROUP and the pending summary."""


class HookRoles(StreamsRole, GroupsRole, DeliveryRole, WebhooksRole, Protocol):
    """One webhook's loop (app/delivery/hook.py): read, ack, nack, claim under its policy,
    and record its URL's health."""


class WebhookRunnerRoles(HookRoles, Protocol):
    """The webhook runner (app/delivery/runner.py): its hooks' loops plus the webhooks set."""


class RetentionRoles(KeyspaceRole, RetentionRole, Protocol):
    """The retention worker (app/delivery/retention.py): scan keys and trim each step."""
