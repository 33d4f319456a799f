"""A webhook's health: how its last delivery attempts went, as the runner saw them.

Health belongs to a webhook *and its URL*: a webhook replaced with another URL starts with
none, so an old receiver's failures never show against a new one.

The runner does not send each attempt on its own: it folds the attempts since its last write
into one ``HealthUpdate`` and writes that (one write in flight per webhook and process), and
``merged`` applies an update to the stored health. Updates compose, so several processes
delivering one webhook (front-ends in front of Redis) add up: their failures are counted
together, and a success anywhere resets the count. The Redis backend applies the same rule
in Lua (app/backends/redis/webhooks.py), on the layout ``HEALTH_LAYOUT`` describes.

Health is an observation, not state: it is not journaled (a write per attempt would double
the journal's work for a figure the next attempt renews), so on the embedded backend it
starts empty at each start.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["HealthUpdate", "WebhookHealth", "health_from_text", "health_text", "merged"]


@dataclass(frozen=True, slots=True)
class WebhookHealth:
    """What a webhook's resource shows of its deliveries."""

    last_status: int | None = None  # the HTTP status of the last answer; None without one
    last_error: str | None = None  # why the last attempt failed; None after a success
    last_attempt_at_ms: int | None = None  # when the last attempt ended (Unix ms)
    last_success_at_ms: int | None = None  # when the last 2xx came (Unix ms)
    consecutive_failures: int = 0  # attempts failed since the last success


@dataclass(frozen=True, slots=True)
class HealthUpdate:
    """Attempts since the last write, folded: the last one's outcome, how many failed after
    the last success among them (``reset``: there was a success), and when."""

    reset: bool = False
    failures: int = 0
    last_status: int | None = None
    last_error: str | None = None
    attempt_at_ms: int | None = None  # None: no attempt (a note, such as "not run")
    success_at_ms: int | None = None

    def then(self, later: HealthUpdate) -> HealthUpdate:
        """This update followed by ``later``, as one."""
        return HealthUpdate(
            reset=self.reset or later.reset,
            failures=later.failures if later.reset else self.failures + later.failures,
            last_status=later.last_status,
            last_error=later.last_error,
            attempt_at_ms=later.attempt_at_ms
            if later.attempt_at_ms is not None
            else self.attempt_at_ms,
            success_at_ms=later.success_at_ms
            if later.success_at_ms is not None
            else self.success_at_ms,
        )


def merged(old: WebhookHealth | None, update: HealthUpdate) -> WebhookHealth:
    """The stored health after ``update``."""
    old = old or WebhookHealth()
    failures = update.failures if update.reset else old.consecutive_failures + update.failures
    return WebhookHealth(
        last_status=update.last_status,
        last_error=update.last_error,
        last_attempt_at_ms=update.attempt_at_ms
        if update.attempt_at_ms is not None
        else old.last_attempt_at_ms,
        last_success_at_ms=update.success_at_ms
        if update.success_at_ms is not None
        else old.last_success_at_ms,
        consecutive_failures=failures,
    )


# How a health is kept as one string (the Redis backend's hash values): the failures, the
# last attempt's time, the last success's time, the last status (empty: none), then the
# error after a ``!`` (nothing at all: none). Plain text, so Lua merges it without a JSON
# library (an error text may hold any character).
HEALTH_LAYOUT = re.compile(r"(\d*)\|(\d*)\|(\d*)\|(\d*)\|(.*)", re.DOTALL)


def health_text(health: WebhookHealth) -> str:
    def n(v: int | None) -> str:
        return "" if v is None else str(v)

    error = "" if health.last_error is None else "!" + health.last_error
    return (
        f"{health.consecutive_failures}|{n(health.last_attempt_at_ms)}|"
        f"{n(health.last_success_at_ms)}|{n(health.last_status)}|{error}"
    )


def health_from_text(text: str) -> WebhookHealth | None:
    """The health ``health_text`` wrote; None for anything else."""
    m = HEALTH_LAYOUT.fullmatch(text)
    if m is None:
        return None
    failures, attempt, success, status, error = m.groups()

    def n(v: str) -> int | None:
        return int(v) if v else None

    return WebhookHealth(
        last_status=n(status),
        last_error=error[1:] if error.startswith("!") else None,
        last_attempt_at_ms=n(attempt),
        last_success_at_ms=n(success),
        consecutive_failures=int(failures or 0),
    )
