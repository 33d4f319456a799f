"""One webhook's delivery loop: read for its consumer, POST, then XACK or XNACK.

The webhook is a consumer of its group named after it, so what it has taken is in the
group's PEL: that is its crash safety. The loop:

- reads with XREADGROUP ``>`` (``Backend.read``, BLOCK ``block_ms``) at most as many entries
  as it has free slots times ``batch``, so at most ``concurrency`` requests are in flight;
  with a delivery policy on the group, that read also serves the entries due again
  (visibility timeout, back-off after XNACK) and dead-letters the exhausted ones;
- POSTs each entry (or batch) signed (``signing``) through a lane (``http1``: the outbound
  rules of ``outbound``, one kept-alive HTTP/1.1 connection per slot), within ``timeout_ms``
  in all. One connection per slot, not a pool: httpx's pool scanned every connection for
  every request (one pool of 64 sent about 200 requests/s here, 64 pools of one about 900),
  and a lane with one request at a time needs no pool at all;
- 2xx: XACK. Any other status, a timeout, a connection error or a refused destination:
  XNACK FAIL, and the group's policy decides the back-off and the dead-lettering.
  410 Gone: the webhook is paused (``pause`` callback) and the entries released with XNACK
  SILENT (the receiver is gone, not the entry: its count is not charged).
- ``Retry-After`` (seconds or an HTTP date) on a non-2xx answer: this worker starts no new
  request to the webhook until then, bounded by ``retry_after_max_ms``, and the entry stays
  owned by the webhook's consumer until then (XNACK FAIL only at the end of the wait, so the
  policy's back-off counts from there). The wait is per process: another worker serving the
  same webhook does not see it.

Order is per entry, not global: with ``concurrency`` above 1 (or after a retry) a later entry
may arrive before an earlier one.

Delivery count: a ``>`` read does not say it, so with a policy on the group (where a read
may serve entries again) one XPENDING of the read's ID range gives it; without a policy a
``>`` read only serves new entries (count 1).

Entries the consumer already holds (a previous process killed mid-delivery, a worker gone):
at start and every ``refresh_s`` the loop takes back its own pending entries idle longer
than ``timeout_ms`` + ``orphan_grace_ms`` with XCLAIM (min-idle-time, to its own name),
skipping those it has in flight. A request in flight is never older than ``timeout_ms``,
so with several workers on Redis sharing the consumer no entry another live worker is
sending is taken, and XCLAIM's min-idle check is atomic, so two workers starting together
never both take one. (A plain history read with ID 0 would resend, at once, every entry the
other workers have in flight.) When the group's policy has a visibility timeout, the policy
does this for any consumer already, and the loop leaves it to it (it also dead-letters).

Without a delivery policy on the group a failed entry is released (XNACK FAIL) and waits
for a claim, as in Redis: nothing delivers it again by itself. The loop logs this once.

Every attempt's outcome goes to the webhook's health (``health.HealthWriter``): the status,
the error, when, and how many attempts failed in a row.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from enum import StrEnum
from typing import Protocol

from app import __version__
from app.backends.roles import HookRoles
from app.delivery.health import HealthWriter
from app.delivery.http1 import AnswerError, Lane
from app.delivery.outbound import Refused
from app.delivery.signing import Signer, WebhookEntry, body_of, webhook_id
from app.engine.commands.claims import ClaimArgs
from app.engine.commands.groups import PendingArgs
from app.engine.commands.nack import NackArgs, NackMode
from app.engine.commands.reads import ReadRequest
from app.engine.delivery import DeliveryPolicy, Webhook
from app.engine.ids import MAX_ID, MIN_ID, StreamID
from app.engine.replies import ClaimedEntry, MissingEntry
from app.engine.stream import Entry
from app.engine.webhook_health import HealthUpdate

__all__ = ["HookOptions", "HookWorker", "Outcome", "Pause", "Tally"]

log = logging.getLogger("xstreams")


class Outcome(StrEnum):
    OK = "ok"  # 2xx: acknowledged
    FAILED = "failed"  # another status, or the connection failed
    TIMEOUT = "timeout"  # no whole answer within timeout_ms
    REFUSED = "refused"  # the outbound rules refused the destination
    GONE = "gone"  # 410: the webhook is paused


Pause = Callable[[Webhook, str], Awaitable[None]]


class Tally(Protocol):
    """Where the figures go (``app.observe.metrics.Metrics`` is one)."""

    def webhook_delivered(self, hook: Webhook, outcome: str, seconds: float) -> None: ...
    def webhook_in_flight(self, hook: Webhook, delta: int) -> None: ...


class _NoTally:
    def webhook_delivered(self, hook: Webhook, outcome: str, seconds: float) -> None:
        pass

    def webhook_in_flight(self, hook: Webhook, delta: int) -> None:
        pass


@dataclass(frozen=True, slots=True)
class HookOptions:
    """The settings every webhook's loop shares."""

    block_ms: int = 1_000  # how long one read waits for entries
    refresh_s: float = 5.0  # how often the policy is read again and orphans are looked for
    retry_after_max_ms: int = 60_000  # the longest Retry-After honoured
    orphan_grace_ms: int = 1_000  # beyond timeout_ms before an own entry counts as orphaned
    retry_s: float = 1.0  # wait after a backend error before reading again
    drain_s: float = 5.0  # at stop, the longest wait for requests in flight


class HookWorker:
    """Delivers one webhook until cancelled (``run``); ``stop`` ends it cleanly."""

    def __init__(
        self,
        backend: HookRoles,
        hook: Webhook,
        lanes: Sequence[Lane],
        pause: Pause | None = None,
        tally: Tally | None = None,
        options: HookOptions | None = None,
        now_s: Callable[[], float] = time.time,
    ) -> None:
        self.backend, self.hook, self.lanes = backend, hook, list(lanes)
        self.pause, self.tally = pause, tally or _NoTally()
        self.options = options or HookOptions()
        self.now_s = now_s
        self.signer = Signer(hook.secret)
        self.health = HealthWriter(backend, hook)
        self.policy: DeliveryPolicy | None = None
        self.gone = False
        self._lanes = list(lanes)  # the free ones: at most ``concurrency`` in flight
        self._freed = asyncio.Event()
        self._mine: set[StreamID] = set()  # in flight (or held) here
        self._sends: set[asyncio.Task[None]] = set()
        self._acking: list[StreamID] = []  # 2xx answered, for the next XACK
        self._acks: asyncio.Task[None] | None = None  # the XACK that takes them
        self._acks_out: set[asyncio.Task[None]] = set()  # XACKs under way
        self._hold_until = 0.0  # monotonic: Retry-After
        self._checked_at = -1e18
        self._fault: str | None = None  # of the requests: logged once until a 2xx
        self._read_fault: str | None = None  # of the reads: logged once until one succeeds
        self._told_no_policy = False

    # -- the loop ---------------------------------------------------------------------------

    async def run(self) -> None:
        try:
            while not self.gone:
                try:
                    await self._turn()
                    self._read_fault = None
                except asyncio.CancelledError:
                    raise
                except Exception as e:  # Redis away, the group destroyed: try again later
                    text = f"cannot read: {e or type(e).__name__}"
                    if text != self._read_fault:
                        h = self.hook
                        log.warning("webhook %r of %r/%r: %s", h.name, h.stream, h.group, text)
                    self._read_fault = text
                    await asyncio.sleep(self.options.retry_s)
        finally:
            await self._drain()

    async def _turn(self) -> None:
        hook = self.hook
        await self._wait_hold()
        await self._wait_slot()
        if time.monotonic() - self._checked_at >= self.options.refresh_s:
            await self._check()
            if await self._take_orphans():
                return
        read = ReadRequest(
            [hook.stream],
            [">"],
            count=len(self._lanes) * hook.batch,
            block_ms=self.options.block_ms,
            group=hook.group,
            consumer=hook.name,
        )
        parts = await self.backend.read(read)
        entries = [e for part in parts for e in part.entries if not isinstance(e, MissingEntry)]
        if entries:
            await self._dispatch(entries, await self._counts(entries))

    async def _check(self) -> None:
        hook = self.hook
        self.policy = await self.backend.delivery_policy(hook.stream, hook.group)
        self._checked_at = time.monotonic()
        if self.policy is None and not self._told_no_policy:
            self._told_no_policy = True
            log.warning(
                "webhook %r of %r/%r: the group has no delivery policy, so an entry that"
                " fails is released (XNACK FAIL) and waits for a claim; set one for retries"
                " and a dead-letter stream",
                hook.name,
                hook.stream,
                hook.group,
            )

    async def _take_orphans(self) -> bool:
        """XCLAIM the consumer's own entries idle past ``timeout_ms`` + grace (see the
        module's docstring); whether it took any."""
        if self.policy is not None and self.policy.visibility_timeout_ms is not None:
            return False
        hook = self.hook
        min_idle = hook.timeout_ms + self.options.orphan_grace_ms
        want = len(self._lanes) * hook.batch
        rows = await self.backend.pending(
            PendingArgs(
                hook.stream,
                hook.group,
                MIN_ID,
                MAX_ID,
                want + len(self._mine),
                consumer=hook.name,
                min_idle_ms=min_idle,
            )
        )
        counts = {r.id: r.delivery_count + 1 for r in rows if r.id not in self._mine}
        if not counts:
            return False
        ids = list(counts)[:want]
        claimed = await self.backend.claim(
            ClaimArgs(hook.stream, hook.group, hook.name, min_idle, ids)
        )
        entries = [e for e in claimed if isinstance(e, Entry)]
        if entries:
            log.info(
                "webhook %r: sending again %d entries its consumer held (idle > %d ms)",
                hook.name,
                len(entries),
                min_idle,
            )
            await self._dispatch(entries, counts)
            self._checked_at = -1e18  # maybe more of them: look again at the next turn
        return bool(entries)

    async def _counts(self, entries: Sequence[Entry | ClaimedEntry]) -> dict[StreamID, int]:
        """Each entry's delivery count (see the module's docstring)."""
        out: dict[StreamID, int] = {}
        plain: list[StreamID] = []
        for e in entries:
            if isinstance(e, ClaimedEntry):
                out[e.id] = e.delivery_count + 1
            else:
                plain.append(e.id)
        if plain and self.policy is not None:
            hook = self.hook
            rows = await self.backend.pending(
                PendingArgs(
                    hook.stream,
                    hook.group,
                    min(plain),
                    max(plain),
                    len(plain) + len(self._mine),
                    consumer=hook.name,
                )
            )
            out.update((r.id, r.delivery_count) for r in rows if r.id not in out)
        return out

    async def _dispatch(
        self, entries: Sequence[Entry | ClaimedEntry], counts: dict[StreamID, int]
    ) -> None:
        hook, batch = self.hook, self.hook.batch
        if self.gone:  # paused meanwhile: give them back uncharged
            ids = [e.id for e in entries]
            await self.backend.nack(NackArgs(hook.stream, hook.group, NackMode.SILENT, ids))
            return
        deliveries = [WebhookEntry(e.id, e.fields, counts.get(e.id, 1)) for e in entries]
        for i in range(0, len(deliveries), batch):
            await self._wait_slot()
            chunk = deliveries[i : i + batch]
            lane = self._lanes.pop()
            self._mine.update(d.id for d in chunk)
            self.tally.webhook_in_flight(self.hook, 1)
            task = asyncio.create_task(self._send(lane, chunk))
            self._sends.add(task)
            task.add_done_callback(functools.partial(self._done, lane=lane))

    def _done(self, task: asyncio.Task[None], *, lane: Lane) -> None:
        self._sends.discard(task)
        self._lanes.append(lane)
        self._freed.set()
        self.tally.webhook_in_flight(self.hook, -1)
        if not task.cancelled() and task.exception() is not None:
            log.error("webhook %r: a delivery failed: %r", self.hook.name, task.exception())

    async def _wait_slot(self) -> None:
        while not self._lanes:
            self._freed.clear()
            await self._freed.wait()

    async def _wait_hold(self) -> None:
        while (left := self._hold_until - time.monotonic()) > 0:
            await asyncio.sleep(left)

    # -- one request ------------------------------------------------------------------------

    async def _send(self, lane: Lane, chunk: list[WebhookEntry]) -> None:
        hook = self.hook
        ids = [d.id for d in chunk]
        try:
            body = body_of(hook.stream, hook.group, chunk, hook.batch)
            headers = self.signer.headers(
                webhook_id(hook.stream, hook.group, ids), body, self.now_s()
            )
            headers["content-type"] = "application/json"
            headers["user-agent"] = f"xstreams/{__version__}"
            started = time.perf_counter()
            status, retry_after, error = await self._post(lane, body, headers)
            seconds = time.perf_counter() - started
            if isinstance(status, Outcome):
                outcome = status
            elif 200 <= status < 300:
                outcome = Outcome.OK
            elif status == 410:
                outcome = Outcome.GONE
            else:
                outcome = Outcome.FAILED
            self.tally.webhook_delivered(hook, outcome, seconds)
            self._record(outcome, status, error)
            if outcome is Outcome.OK:
                await self._ack(ids)
                return
            if outcome is Outcome.GONE:
                await self._gone(ids)
                return
            if retry_after is not None:
                await self._hold(retry_after)
            await self.backend.nack(NackArgs(hook.stream, hook.group, NackMode.FAIL, ids))
        finally:
            self._mine.difference_update(ids)

    async def _ack(self, ids: list[StreamID]) -> None:
        """XACK ``ids`` together with the others answered 2xx in this turn of the event loop:
        one XACK for them all (the task runs at the next turn), each send waiting for it as
        it waited for its own. An entry answered but not yet acknowledged when the process
        dies is sent again, as before: with the same ``webhook-id``."""
        self._acking.extend(ids)
        task = self._acks
        if task is None:
            task = self._acks = asyncio.create_task(self._flush_acks())
            self._acks_out.add(task)
            task.add_done_callback(self._acked)
        await asyncio.shield(task)  # a send cancelled does not cancel the others' XACK

    def _acked(self, task: asyncio.Task[None]) -> None:
        self._acks_out.discard(task)
        if not task.cancelled():
            task.exception()  # its sends saw it (and log it); none left is no warning

    async def _flush_acks(self) -> None:
        ids, self._acking, self._acks = self._acking, [], None
        await self.backend.ack(self.hook.stream, self.hook.group, ids)

    def _record(self, outcome: Outcome, status: int | Outcome, error: str | None) -> None:
        """The attempt's outcome, to the webhook's health."""
        at_ms = int(self.now_s() * 1000)
        code = None if isinstance(status, Outcome) else status
        if outcome is Outcome.OK:
            update = HealthUpdate(True, 0, code, None, at_ms, at_ms)
        else:
            update = HealthUpdate(False, 1, code, error or outcome.value, at_ms)
        self.health.record(update)

    async def _post(
        self, lane: Lane, body: bytes, headers: dict[str, str]
    ) -> tuple[int | Outcome, float | None, str | None]:
        """The status (or the outcome without one), the Retry-After in seconds, and what
        went wrong (None for a 2xx)."""
        hook = self.hook
        try:
            async with asyncio.timeout(hook.timeout_ms / 1000):
                answer = await lane.post(body, headers)
        except Refused as e:
            return Outcome.REFUSED, None, self._log_fault(f"refused destination: {e}")
        except TimeoutError:
            text = f"no whole answer from {hook.url} within {hook.timeout_ms} ms"
            return Outcome.TIMEOUT, None, self._log_fault(text)
        except (AnswerError, OSError) as e:
            text = f"cannot reach {hook.url}: {e or type(e).__name__}"
            return Outcome.FAILED, None, self._log_fault(text)
        except Exception as e:  # whatever else a request raises is a failed delivery too
            return Outcome.FAILED, None, self._log_fault(f"request to {hook.url} failed: {e!r}")
        status = answer.status
        if 200 <= status < 300:
            self._fault = None
            return status, None, None
        text = self._log_fault(f"{hook.url} answers {status}")
        return status, _retry_after(answer.retry_after, self.now_s()), text

    async def _hold(self, seconds: float) -> None:
        """Start no request until ``seconds`` from now (bounded), holding the entry."""
        wait = min(max(seconds, 0.0), self.options.retry_after_max_ms / 1000)
        self._hold_until = max(self._hold_until, time.monotonic() + wait)
        await self._wait_hold()

    async def _gone(self, ids: list[StreamID]) -> None:
        hook = self.hook
        first = not self.gone
        self.gone = True
        await self.backend.nack(NackArgs(hook.stream, hook.group, NackMode.SILENT, ids))
        if first:
            reason = "the receiver answered 410 Gone"
            log.warning(
                "webhook %r of %r/%r paused: %s", hook.name, hook.stream, hook.group, reason
            )
            if self.pause is not None:
                await self.pause(hook, reason)

    # -- the end ----------------------------------------------------------------------------

    async def _drain(self) -> None:
        """Let requests in flight finish (each is bounded by ``timeout_ms``); what a cancel
        cuts short stays pending for the consumer, and is sent again later."""
        if self._sends:
            with contextlib.suppress(asyncio.CancelledError):
                wait_s = min(self.hook.timeout_ms / 1000, self.options.drain_s)
                await asyncio.wait(set(self._sends), timeout=wait_s)
        for task in list(self._sends):
            task.cancel()
        if self._sends:
            await asyncio.gather(*self._sends, return_exceptions=True)
        if self._acks_out:  # an XACK under way is short: let it end
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait(set(self._acks_out), timeout=self.options.drain_s)
            for task in list(self._acks_out):
                task.cancel()
        await self.health.close(self.options.drain_s)

    def _log_fault(self, text: str) -> str:
        """A fault is logged when it starts or changes, not at every entry; its text."""
        if text != self._fault:
            h = self.hook
            log.warning("webhook %r of %r/%r: %s", h.name, h.stream, h.group, text)
        self._fault = text
        return text


def _retry_after(value: str | None, now_s: float) -> float | None:
    """Retry-After in seconds from now: delta-seconds or an HTTP date; None if absent or
    unreadable."""
    if value is None:
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        at = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    return at.timestamp() - now_s
