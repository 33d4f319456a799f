"""Rates per credential: requests spent before anything runs, on every surface alike; bytes
and entries left to the request's meter (app/api/meter.py), spent where the work is.

A pure ASGI layer just inside the access gate: it knows who asks (the gate's principal) and
nothing of routes, so REST, event streams, the command endpoint and the dashboard's calls
spend the same budget, one request each (an event stream or a long poll when it opens).
The budget lives in the backend (``spend_rate``): in process for the embedded engine, in
Redis in front of it, so front-ends share it and a limit is the sum over workers.

Which rate applies, per policy (requests, bytes, entries): the credential's own (an API
key's ``--rate``, ``--rate-bytes``, ``--rate-entries``, a JWT's ``xstreams_limits`` claim),
else ``rate_<policy>`` for API keys and JWTs, else ``rate_<policy>_admin`` for the admin
token and an open service; none, and nothing is spent. The health probes and the
dashboard's files are never limited.

Every response to a limited credential says where it stands, in the IETF draft's fields
(draft-ietf-httpapi-ratelimit-headers): ``RateLimit-Policy: "requests";q=100;w=1`` and
``RateLimit: "requests";r=42;t=1`` (requests left now, seconds until the burst is whole),
one item per policy: every policy held to in ``RateLimit-Policy``, and in ``RateLimit``
those the request spent (bytes when it appended, entries when it read).
Past a limit the answer is 429 with ``Retry-After`` (whole seconds, at least 1: the
header has no finer unit) and the wait in milliseconds in the error's text, in the shape of
the surface addressed. When the backend cannot be asked (Redis away), the request goes on
unlimited rather than failing for the limiter's sake: it meets the backend's own error next.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.access import Principal
from app.access.quotas import StorageQuota
from app.access.rates import UNLIMITED, CredentialLimits, Decision, Mode, Policy, Rate
from app.api.errors import send_error
from app.api.meter import METER, Meter, budget_key
from app.api.quotas import StorageBook
from app.backends.roles import RatesRole
from app.observe.metrics import Metrics
from app.settings import Settings

__all__ = ["RateDefaults", "RateGate", "parsed", "usage"]

log = logging.getLogger("xstreams.rates")


def parsed(text: str | None) -> Rate | None:
    """A rate setting (checked when the settings were read), or None."""
    return None if text is None else Rate.parse(text)


@dataclass(frozen=True, slots=True)
class RateDefaults:
    """The settings' rates: for API keys and JWTs (``scoped``), for the admin and an open
    service (``admin``)."""

    scoped: CredentialLimits = UNLIMITED
    admin: CredentialLimits = UNLIMITED

    @classmethod
    def of(cls, settings: Settings) -> RateDefaults:
        quota = settings.storage_quota
        return cls(
            CredentialLimits(
                parsed(settings.rate_requests),
                parsed(settings.rate_bytes),
                parsed(settings.rate_entries),
                None if quota is None else StorageQuota.parse(quota),
            ),
            CredentialLimits(
                parsed(settings.rate_requests_admin),
                parsed(settings.rate_bytes_admin),
                parsed(settings.rate_entries_admin),
            ),
        )

    def rates_of(self, principal: Principal) -> dict[Policy, Rate]:
        """The rates ``principal`` is held to, by policy (absent: not limited)."""
        return self.rates_for(principal.limits, principal.scoped)

    def quota_of(self, principal: Principal) -> StorageQuota | None:
        """The storage quota of ``principal``'s prefix: its own, else the settings' for API
        keys and JWTs; None without a prefix (there is no namespace to count)."""
        if not principal.prefix:
            return None
        own = principal.limits.storage
        return own if own is not None or not principal.scoped else self.scoped.storage

    def rates_for(self, own: CredentialLimits, scoped: bool) -> dict[Policy, Rate]:
        """A credential's ``own`` limits over the defaults for its kind."""
        defaults = self.scoped if scoped else self.admin
        out: dict[Policy, Rate] = {}
        for policy in Policy:
            rate = own.of(policy) or defaults.of(policy)
            if rate is not None:
                out[policy] = rate
        return out


async def usage(
    rates: RatesRole, limit_key: str, held_to: dict[Policy, Rate]
) -> list[tuple[Policy, Rate, Decision]]:
    """Where each of a credential's budgets stands now, spending nothing (a peek each)."""
    out = []
    for policy, rate in held_to.items():
        decision = await rates.spend_rate(budget_key(policy, limit_key), rate, 1, Mode.PEEK)
        out.append((policy, rate, decision))
    return out


def _headers(rates: dict[Policy, Rate], told: dict[Policy, Decision]) -> list[tuple[bytes, bytes]]:
    policies = ", ".join(f'"{p}";q={r.count};w={r.window_s}' for p, r in rates.items())
    states = ", ".join(
        f'"{p}";r={d.remaining};t={math.ceil(d.reset_ms / 1000)}' for p, d in told.items()
    )
    out = [(b"ratelimit-policy", policies.encode())]
    if states:
        out.append((b"ratelimit", states.encode()))
    return out


def _retry_after(decision: Decision) -> tuple[bytes, bytes]:
    """Whole seconds, at least 1: the header has no finer unit."""
    return b"retry-after", str(max(1, math.ceil(decision.retry_after_ms / 1000))).encode()


class RateGate:
    def __init__(
        self,
        app: ASGIApp,
        backend: Callable[[], RatesRole],
        metrics: Metrics,
        defaults: RateDefaults,
        open_paths: frozenset[str],
        book: StorageBook | None = None,
    ) -> None:
        self.app = app
        self.book = book  # None: storage quotas are not enforced (a test's gate)
        self.backend = backend  # asked per request: tests swap the backend after start
        self.metrics = metrics
        self.defaults = defaults
        self.open_paths = open_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.open_paths:
            await self.app(scope, receive, send)
            return
        principal: Principal | None = scope.get("state", {}).get("principal")
        if principal is None or not (
            principal.limits.limited
            or (self.defaults.scoped if principal.scoped else self.defaults.admin).limited
        ):  # the common case, decided without building anything
            await self.app(scope, receive, send)
            return
        rates = self.defaults.rates_of(principal)
        credential = f"{principal.kind.value}:{principal.name}"
        told: dict[Policy, Decision] = {}
        rate = rates.get(Policy.REQUESTS)
        if rate is not None:
            try:
                told[Policy.REQUESTS] = await self.backend().spend_rate(principal.limit_key, rate)
            except Exception:  # the backend's trouble is the request's to meet, not the limiter's
                log.warning("rate of %s not checked: the backend did not answer", principal.name)
            decision = told.get(Policy.REQUESTS)
            if decision is not None and not decision.allowed:
                self.metrics.throttle(credential, Policy.REQUESTS)
                await _too_many(scope, send, rate, decision, _headers(rates, told))
                return
        meter = None
        quota = self.defaults.quota_of(principal) if self.book is not None else None
        if Policy.BYTES in rates or Policy.ENTRIES in rates or quota is not None:
            meter = Meter(
                self.backend(),
                principal.limit_key,
                rates.get(Policy.BYTES),
                rates.get(Policy.ENTRIES),
                told=told,  # what it spends joins the request's, for the headers
                quota=quota,
                prefix=principal.prefix,
                book=self.book,
            )

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                extra = _headers(rates, told)
                if meter is not None and meter.refused is not None and message["status"] == 429:
                    self.metrics.throttle(credential, meter.refused.policy)
                    extra.append(_retry_after(meter.refused.decision))
                message["headers"] = [*message.get("headers", ()), *extra]
            await send(message)

        token = METER.set(meter)
        try:
            await self.app(scope, receive, with_headers)
        finally:
            METER.reset(token)


async def _too_many(
    scope: Scope, send: Send, rate: Rate, decision: Decision, headers: list[tuple[bytes, bytes]]
) -> None:
    text = (
        f"ERR too many requests for this credential (at most {rate}); retry after"
        f" {decision.retry_after_ms} ms"
    )
    await send_error(scope, send, 429, text, [_retry_after(decision), *headers])
