"""The webhook runner: one delivery loop (``HookWorker``) per webhook that is not paused.

``WebhookRunner(backend, settings, source)`` reads the webhooks from ``source`` (an async
callable; the service passes ``backend.webhooks``) every ``webhook_refresh_s`` and whenever
``refresh()`` is called (after a PUT, PATCH or DELETE), and starts, stops or restarts the
loops to match: a webhook whose configuration changed (URL, secret, limits, paused) gets a
new loop and new connections. Each process runs one runner; with several workers in front of
Redis each worker runs a loop per webhook, all reading for the one consumer named after it
(``hook`` says why that never sends an entry twice at once).

A 410 Gone pauses the webhook through ``pause`` (the service stores it with
``Backend.set_webhook``; ``store_pause`` builds that callback). Until ``source`` shows the
pause (or the webhook changes) the runner does not start it again, so a failing ``pause``
does not turn into a loop of 410s.

``check`` is the PUT's look at a new URL: the very check each request makes (``outbound``),
DNS included, so a webhook that could never be delivered is refused when it is set. A
webhook whose URL the scheme or host globs refuse here is not run; ``not_run`` says why.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from app.backends.roles import WebhookRunnerRoles, WebhooksRole
from app.delivery.hook import HookOptions, HookWorker, Pause, Tally
from app.delivery.http1 import lanes_for
from app.delivery.outbound import (
    OutboundRules,
    Refused,
    Resolver,
    check_destination,
    system_resolver,
)
from app.engine.delivery import Webhook
from app.settings import Settings

__all__ = ["WebhookRunner", "options_from", "rules_from", "store_pause"]

log = logging.getLogger("xstreams")

Source = Callable[[], Awaitable[list[Webhook]]]
Key = tuple[str, str, str]  # stream, group, name


def rules_from(settings: Settings) -> OutboundRules:
    return OutboundRules(
        tuple(settings.webhook_allow_hosts),
        settings.webhook_allow_http,
        settings.webhook_allow_private,
    )


def options_from(settings: Settings) -> HookOptions:
    return HookOptions(
        block_ms=settings.webhook_block_ms,
        refresh_s=settings.webhook_refresh_s,
        retry_after_max_ms=settings.webhook_retry_after_max_ms,
    )


def store_pause(backend: WebhooksRole) -> Pause:
    """The ``pause`` callback that stores the pause: the webhook, paused, with the reason."""

    async def pause(hook: Webhook, reason: str) -> None:
        await backend.set_webhook(dataclasses.replace(hook, paused=True, paused_reason=reason))

    return pause


@dataclass(slots=True)
class _Running:
    hook: Webhook
    worker: HookWorker
    task: asyncio.Task[None]


class WebhookRunner:
    """Keeps one ``HookWorker`` per active webhook of ``source``; ``run`` is the background
    task (refresh every ``webhook_refresh_s``), ``close`` stops every loop."""

    def __init__(
        self,
        backend: WebhookRunnerRoles,
        settings: Settings,
        source: Source,
        pause: Pause | None = None,
        tally: Tally | None = None,
        ready: Callable[[], bool] = lambda: True,
        resolver: Resolver = system_resolver,
        verify: bool | ssl.SSLContext = True,
        now_s: Callable[[], float] = time.time,
    ) -> None:
        self.backend, self.source = backend, source
        self.rules, self.options = rules_from(settings), options_from(settings)
        self.refresh_s = settings.webhook_refresh_s
        self.pause, self.tally, self.ready = pause, tally, ready
        self.resolver, self.verify, self.now_s = resolver, verify, now_s
        self.running: dict[Key, _Running] = {}
        self._gone: dict[Key, Webhook] = {}  # paused here (410), until the source shows it
        self._lock = asyncio.Lock()
        self._failing: str | None = None
        self._changed = asyncio.Event()
        # Webhooks whose URL the rules refuse outright (scheme, host glob), by key: not run,
        # so the group's entries are not read, failed and dead-lettered for a setting.
        self._refused: dict[Key, str] = {}

    async def run(self) -> None:
        try:
            while True:
                if self.ready():
                    try:
                        await self.refresh()
                    except asyncio.CancelledError:
                        raise
                    except Exception as e:
                        text = f"cannot list the webhooks: {e or type(e).__name__}"
                        if text != self._failing:
                            log.warning("webhooks: %s; retrying every %g s", text, self.refresh_s)
                        self._failing = text
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), self.refresh_s)
                self._changed.clear()
        finally:
            await self.close()

    async def check(self, url: str) -> None:
        """``Refused`` (naming the setting that would allow it) unless a request to ``url``
        would go out now: scheme, host glob, and every address its name resolves to. A
        service without ``--webhook-allow-host`` sends nowhere yet, so it checks nothing:
        its webhooks wait for the setting, and their health says so."""
        if self.rules.allow_hosts:
            await check_destination(self.rules, url, self.resolver)

    def not_run(self, hook: Webhook) -> str | None:
        """Why this process does not run ``hook`` whatever its entries (its URL's scheme or
        host refused: it waits for the setting), or None. A view shows it as its error."""
        try:
            self.rules.check_url(hook.url)
        except Refused as e:
            return f"not run: {e}"
        return None

    def refused_reason(self, hook: Webhook) -> str | None:
        """Why the outbound rules refuse ``hook``'s URL (scheme, host glob; the text names
        the setting that would allow it), or None: its view's ``reason`` when ``refused``."""
        try:
            self.rules.check_url(hook.url)
        except Refused as e:
            return str(e)
        return None

    def changed(self) -> None:
        """A webhook was set, paused or removed through this process: look again now
        instead of at the next ``refresh_s`` (other workers see it by then)."""
        self._changed.set()

    async def refresh(self) -> None:
        """Read the webhooks now and start, stop or restart loops to match."""
        async with self._lock:
            hooks = await self.source()
            self._failing = None
            wanted: dict[Key, Webhook] = {}
            for hook in hooks:
                key = (hook.stream, hook.group, hook.name)
                gone = self._gone.get(key)
                if gone is not None and (hook.paused or hook != gone):
                    del self._gone[key]  # the pause is stored, or the webhook changed
                    gone = None
                if not hook.paused and gone is None and self._allowed(key, hook):
                    wanted[key] = hook
            for key in [k for k in self._gone if k not in {_key(h) for h in hooks}]:
                del self._gone[key]
            for key, r in list(self.running.items()):
                if wanted.get(key) != r.hook or r.task.done():
                    await self._stop(key)
            for key, hook in wanted.items():
                if key not in self.running:
                    self._start(key, hook)

    def _allowed(self, key: Key, hook: Webhook) -> bool:
        """Whether the rules let the webhook's URL through (scheme, host glob); one that
        they refuse outright is not run at all, so its group's entries are not read, failed
        and dead-lettered for a setting. Logged once per URL (``not_run`` shows why)."""
        try:
            self.rules.check_url(hook.url)
        except Refused as e:
            if self._refused.get(key) != hook.url:
                log.warning(
                    "webhook %r of %r / %r not run: %s (see --webhook-allow-host)",
                    hook.name, hook.stream, hook.group, e,
                )  # fmt: skip
                self._refused[key] = hook.url
            return False
        self._refused.pop(key, None)
        return True

    def _start(self, key: Key, hook: Webhook) -> None:
        lanes = lanes_for(self.rules, hook.url, hook.concurrency, self.resolver, self.verify)
        worker = HookWorker(
            self.backend, hook, lanes, self._paused, self.tally, self.options, self.now_s
        )
        task = asyncio.create_task(self._serve(worker), name=f"webhook {hook.name}")
        self.running[key] = _Running(hook, worker, task)

    async def _serve(self, worker: HookWorker) -> None:
        try:
            await worker.run()
        finally:
            for lane in worker.lanes:
                await lane.aclose()

    async def _paused(self, hook: Webhook, reason: str) -> None:
        self._gone[_key(hook)] = hook
        if self.pause is not None:
            try:
                await self.pause(hook, reason)
            except Exception as e:
                log.error("webhook %r: cannot store its pause: %s", hook.name, e)

    async def _stop(self, key: Key) -> None:
        r = self.running.pop(key)
        r.task.cancel()
        # Not ``suppress(CancelledError)``: that would also swallow a cancel of this task
        # arriving meanwhile, and ``run`` would go on refreshing after its own cancel.
        await asyncio.gather(r.task, return_exceptions=True)

    async def close(self) -> None:
        """Stop every loop at once; requests in flight get up to ``drain_s`` to finish."""
        stopping = [r.task for r in self.running.values()]
        self.running.clear()
        for task in stopping:
            task.cancel()
        await asyncio.gather(*stopping, return_exceptions=True)


def _key(hook: Webhook) -> Key:
    return (hook.stream, hook.group, hook.name)
