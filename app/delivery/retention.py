"""Stream retention, enforced in the background: trim by age, length or bytes, in small steps.

Every ``interval_s`` one sweep walks the streams with a retention of their own
(``Backend.retentions``) and, when the settings name glob-wide defaults, every key (SCAN
through the backend) whose name one of the globs matches: the first such glob applies, and a
stream's own retention wins over any. Each stream is trimmed by ``enforce_retention`` steps
of at most ``step`` entries (XTRIM ... LIMIT), until a step removes nothing; between two
steps the loop lets every other task run, so a stream millions of entries over its bound
never holds the event loop for longer than one step (embedded: a few milliseconds).

A failure (Redis away, a key of another type) is logged once per kind of fault until a
sweep succeeds again, counted, and never ends the task: the next sweep tries again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from app.backends.roles import RetentionRoles
from app.engine.delivery import Retention
from app.engine.errors import WrongType
from app.engine.glob import glob_match

__all__ = ["Retainer"]

log = logging.getLogger("xstreams")

SCAN_COUNT = 100  # keys asked per SCAN page (a hint, as SCAN's COUNT)


@dataclass(slots=True)
class Retainer:
    """The retention sweeps of one service. ``run`` is the background task; ``sweep`` one
    pass (tests call it directly). ``ready`` says whether the backend may be used now
    (recovered, connected); a sweep waits for it. ``trimmed`` and ``failed`` are where the
    figures go (``Metrics``)."""

    backend: RetentionRoles
    defaults: Sequence[tuple[str, Retention]] = ()
    interval_s: float = 1.0
    step: int = 1_000
    ready: Callable[[], bool] = lambda: True
    trimmed: Callable[[int], None] = lambda n: None
    failed: Callable[[], None] = lambda: None
    _failing: str | None = field(default=None, init=False)  # logged, until a clean sweep
    _failed_now: bool = field(default=False, init=False)

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            if not self.ready():
                continue
            try:
                await self.sweep()
            except asyncio.CancelledError:
                raise
            except Exception as e:  # the listing itself failed (Redis away): next time
                self.failed()
                self._fault(f"cannot list the streams to trim: {e or type(e).__name__}")

    async def sweep(self) -> int:
        """One pass over every stream with a retention; the entries it removed."""
        self._failed_now = False
        own = await self.backend.retentions()
        removed = 0
        for key, retention in own.items():
            removed += await self.enforce(key, retention)
        if self.defaults:
            cursor = 0
            while True:
                page = await self.backend.scan(cursor, None, SCAN_COUNT)
                for key in page.keys:
                    default = None if key in own else self.default_for(key)
                    if default is not None:
                        removed += await self.enforce(key, default)
                cursor = page.cursor
                if cursor == 0:
                    break
        if not self._failed_now:
            self._failing = None
        return removed

    def default_for(self, key: str) -> Retention | None:
        """The first glob-wide default whose glob matches ``key``."""
        return next((r for glob, r in self.defaults if glob_match(glob, key)), None)

    async def enforce(self, key: str, retention: Retention) -> int:
        """Trim ``key`` in steps until one removes nothing; the entries removed. A failing
        step ends this stream's turn (counted and logged), not the sweep."""
        removed = 0
        while True:
            try:
                n = await self.backend.enforce_retention(key, retention, self.step)
            except asyncio.CancelledError:
                raise
            except WrongType:
                return removed  # a key of another type (Redis): no stream to trim
            except Exception as e:
                self.failed()
                self._fault(f"cannot trim {key!r} to its retention: {e or type(e).__name__}")
                return removed
            if n <= 0:
                return removed
            removed += n
            self.trimmed(n)
            await asyncio.sleep(0)  # one step at a time: let the other tasks run

    def _fault(self, text: str) -> None:
        """Log a fault once until a sweep succeeds again (not once a second)."""
        self._failed_now = True
        if self._failing is None:
            log.warning("retention: %s; retrying every %g s", text, self.interval_s)
        self._failing = text
