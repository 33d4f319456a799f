"""Delivery policies and retention: what a group's policy and a stream's retention add to Redis.

A group without a policy is exactly Redis's. With one, every delivery of new entries to a
consumer (XREADGROUP ``>``, and so REST's consumer read and SSE group delivery) first serves
the group's pending entries that are due again, as a claim (the delivery count grows, the
owner changes), and moves to the dead-letter stream those that have been delivered often
enough. The rules live here, once; the embedded engine applies them in its read
(``commands/reads.py``) and the Redis backend in one Lua script that mirrors them.

An entry is due again when:

- it was released (XNACK) and ``backoff(count)`` has passed since its release, or
- it is owned and has been idle at least ``max(visibility_timeout_ms, backoff(count))``.

``backoff(count)`` is ``backoff_ms[min(count - 1, len - 1)]``: the first redelivery waits
``backoff_ms[0]``, the n-th ``backoff_ms[n - 1]``, the last step repeats. An entry due again
whose delivery count is already ``max_deliveries`` (or that XNACK FATAL marked, count
INT64_MAX) goes to the dead-letter stream instead, in the same atomic step that acknowledges
it: it keeps its fields and gains the ``DEAD_LETTER_FIELDS`` after them (app/engine/
dead_letters.py: a dead letter of a dead letter is not wrapped again, and no policy's dead
letters may come back to its stream). Redrive strips them again.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from app.engine.dead_letters import (
    DEAD_LETTER_FIELDS,
    DEAD_LETTER_HOPS,
    DEAD_LETTER_PREFIX,
    DeadLetter,
    dead_letter_cycle,
    dead_letter_fields,
    leads_back,
    split_dead_letter,
)
from app.engine.errors import WrongArgument
from app.engine.ids import INT64_MAX, StreamID
from app.engine.refpolicy import RefPolicy

__all__ = [
    "DEAD_LETTER_FIELDS",
    "DEAD_LETTER_HOPS",
    "DEAD_LETTER_PREFIX",
    "MAX_BACKOFF_STEPS",
    "MAX_POLICY_MS",
    "MAX_REDRIVE",
    "DeadLetter",
    "DeadLetterReason",
    "DeliveryPolicy",
    "DeliveryStats",
    "RedriveArgs",
    "Redriven",
    "Retention",
    "Webhook",
    "dead_letter_fields",
    "split_dead_letter",
]

MAX_BACKOFF_STEPS: Final = 32
MAX_POLICY_MS: Final = 1 << 40  # about 34 years: any longer is a mistake, not a policy
MAX_REDRIVE: Final = 10_000  # entries one redrive moves at most (one atomic step each)


class DeadLetterReason(StrEnum):
    MAX_DELIVERIES = "max_deliveries"
    FATAL = "fatal"


def _ms(name: str, value: object, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= MAX_POLICY_MS:
        raise WrongArgument.err(f"{name} must be an integer from {low} to {MAX_POLICY_MS}")
    return value


@dataclass(frozen=True, slots=True)
class DeliveryPolicy:
    """A group's delivery policy; every part optional. Checked when built (``WrongArgument``
    with a text naming the part), so a stored policy is always a valid one."""

    visibility_timeout_ms: int | None = None
    max_deliveries: int | None = None
    dead_letter_stream: str | None = None
    backoff_ms: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.visibility_timeout_ms is not None:
            _ms("visibility_timeout_ms", self.visibility_timeout_ms, 1)
        if self.max_deliveries is not None:
            _ms("max_deliveries", self.max_deliveries, 1)
            if self.dead_letter_stream is None:
                raise WrongArgument.err("max_deliveries needs a dead_letter_stream")
        if self.dead_letter_stream is not None and not self.dead_letter_stream:
            raise WrongArgument.err("dead_letter_stream must not be empty")
        if len(self.backoff_ms) > MAX_BACKOFF_STEPS:
            raise WrongArgument.err(f"backoff_ms takes at most {MAX_BACKOFF_STEPS} steps")
        for step in self.backoff_ms:
            _ms("each backoff_ms step", step, 0)

    def check_for(self, key: str) -> None:
        """Refuse a policy that cannot serve the stream ``key``."""
        if self.dead_letter_stream == key:
            raise WrongArgument.err("dead_letter_stream must be another stream than the group's")

    def check_chain(self, key: str, dead_letter_streams: Callable[[str], Iterable[str]]) -> None:
        """Refuse a policy whose dead letters would come back to ``key`` (``Conflict``): its
        dead-letter stream's groups' policies, and theirs, never name ``key``."""
        dead = self.dead_letter_stream
        if dead is not None and leads_back(key, dead, dead_letter_streams):
            raise dead_letter_cycle(key, dead)

    def backoff(self, delivery_count: int) -> int:
        """How long the redelivery after ``delivery_count`` deliveries waits (0: none)."""
        steps = self.backoff_ms
        if not steps:
            return 0
        return steps[min(max(delivery_count - 1, 0), len(steps) - 1)]

    def exhausted(self, delivery_count: int) -> DeadLetterReason | None:
        """Why an entry due again goes to the dead-letter stream instead (None: it does not)."""
        if self.dead_letter_stream is None:
            return None
        if delivery_count >= INT64_MAX:
            return DeadLetterReason.FATAL
        if self.max_deliveries is not None and delivery_count >= self.max_deliveries:
            return DeadLetterReason.MAX_DELIVERIES
        return None

    def as_json(self) -> dict[str, Any]:
        """The policy as REST, the journal and the Redis record hold it (absent parts left out)."""
        out: dict[str, Any] = {}
        if self.visibility_timeout_ms is not None:
            out["visibility_timeout_ms"] = self.visibility_timeout_ms
        if self.max_deliveries is not None:
            out["max_deliveries"] = self.max_deliveries
        if self.dead_letter_stream is not None:
            out["dead_letter_stream"] = self.dead_letter_stream
        if self.backoff_ms:
            out["backoff_ms"] = list(self.backoff_ms)
        return out

    @classmethod
    def from_json(cls, data: object) -> DeliveryPolicy:
        """Build from ``as_json``'s form; ``WrongArgument`` for anything else."""
        if not isinstance(data, dict):
            raise WrongArgument.err("a delivery policy is a JSON object")
        unknown = set(data) - {
            "visibility_timeout_ms",
            "max_deliveries",
            "dead_letter_stream",
            "backoff_ms",
        }
        if unknown:
            raise WrongArgument.err(f"unknown delivery policy part {sorted(unknown)[0]!r}")
        stream = data.get("dead_letter_stream")
        if stream is not None and not isinstance(stream, str):
            raise WrongArgument.err("dead_letter_stream must be a string")
        backoff = data.get("backoff_ms", [])
        if not isinstance(backoff, list):
            raise WrongArgument.err("backoff_ms must be a list of integers")
        return cls(
            visibility_timeout_ms=data.get("visibility_timeout_ms"),
            max_deliveries=data.get("max_deliveries"),
            dead_letter_stream=stream,
            backoff_ms=tuple(backoff),
        )


@dataclass(frozen=True, slots=True)
class Retention:
    """A stream's retention: entries older than ``max_age_ms`` (by their ID's time), past the
    newest ``max_len``, or past about ``max_bytes`` of the stream's memory are trimmed in the
    background (MINID exactly, MAXLEN ``~``; with the reference ``policy`` of Redis 8.2's
    trims)."""

    max_age_ms: int | None = None
    max_len: int | None = None
    max_bytes: int | None = None
    policy: RefPolicy = RefPolicy.KEEPREF  # what its trims do to group references (8.2)

    def __post_init__(self) -> None:
        if not isinstance(self.policy, RefPolicy):
            raise WrongArgument.err("policy must be KEEPREF, DELREF or ACKED")
        if self.max_age_ms is None and self.max_len is None and self.max_bytes is None:
            raise WrongArgument.err("a retention needs max_age_ms, max_len or max_bytes")
        if self.max_age_ms is not None:
            _ms("max_age_ms", self.max_age_ms, 1)
        if self.max_len is not None:
            _ms("max_len", self.max_len, 0)
        if self.max_bytes is not None:
            _ms("max_bytes", self.max_bytes, 1)

    def as_json(self) -> dict[str, int | str]:
        out: dict[str, int | str] = {}
        if self.max_age_ms is not None:
            out["max_age_ms"] = self.max_age_ms
        if self.max_len is not None:
            out["max_len"] = self.max_len
        if self.max_bytes is not None:
            out["max_bytes"] = self.max_bytes
        if self.policy is not RefPolicy.KEEPREF:
            out["policy"] = self.policy.value
        return out

    @classmethod
    def from_json(cls, data: object) -> Retention:
        if not isinstance(data, dict):
            raise WrongArgument.err("a retention is a JSON object")
        unknown = set(data) - {"max_age_ms", "max_len", "max_bytes", "policy"}
        if unknown:
            raise WrongArgument.err(f"unknown retention part {sorted(unknown)[0]!r}")
        text = data.get("policy", "KEEPREF")
        policy = RefPolicy.__members__.get(text.upper()) if isinstance(text, str) else None
        if policy is None:
            raise WrongArgument.err("policy must be KEEPREF, DELREF or ACKED")
        return cls(data.get("max_age_ms"), data.get("max_len"), data.get("max_bytes"), policy)


@dataclass(frozen=True, slots=True)
class RedriveArgs:
    """Move dead-letter entries of ``key`` back: ``ids`` (None: the oldest ``count``, at most
    ``MAX_REDRIVE``) to ``target`` (None: each entry's origin stream)."""

    key: str
    ids: tuple[StreamID, ...] | None = None
    target: str | None = None
    count: int = MAX_REDRIVE


@dataclass(frozen=True, slots=True)
class Redriven:
    """What a redrive did: ``moved`` (dead-letter ID, stream, new ID) in order, and the IDs
    asked for that were not there or not dead letters (``skipped``), which a retry of a
    redrive that already ran finds."""

    moved: list[tuple[StreamID, str, StreamID]]
    skipped: list[StreamID]


@dataclass(frozen=True, slots=True)
class DeliveryStats:
    """A policy group's counters for /metrics and INFO: entries delivered again (claimed by
    the policy), entries dead-lettered, and its dead-letter stream's length (None: no
    dead-letter stream, or it does not exist yet). The counters start at 0 when the policy
    is set; on the embedded backend they restart with the process, as Prometheus expects."""

    stream: str
    group: str
    redelivered: int
    dead_lettered: int
    dead_letter_stream: str | None
    dead_letter_length: int | None


# -- webhooks (a group's push consumers) -------------------------------------------------------

WEBHOOK_SECRET_PREFIX: Final = "whsec_"
MAX_WEBHOOK_TIMEOUT_MS: Final = 600_000
MAX_WEBHOOK_CONCURRENCY: Final = 256
MAX_WEBHOOK_BATCH: Final = 100


@dataclass(frozen=True, slots=True)
class Webhook:
    """A consumer of ``group`` named ``name`` that POSTs what it takes to ``url``, signed
    with ``secret`` (Standard Webhooks: ``whsec_`` + base64). Checked when built; where it
    may send (the allow-list, addresses) is the delivery runner's check, not this one's.
    ``paused`` stops it (PATCH, or a 410 from the receiver, ``paused_reason`` says which)."""

    stream: str
    group: str
    name: str
    url: str
    secret: str
    timeout_ms: int = 5000
    concurrency: int = 8
    batch: int = 1
    paused: bool = False
    paused_reason: str | None = None

    def __post_init__(self) -> None:
        if not self.name:
            raise WrongArgument.err("a webhook needs a name")
        if not self.url.lower().startswith(("https://", "http://")):
            raise WrongArgument.err("a webhook url must be an http(s) URL")
        if not self.secret.startswith(WEBHOOK_SECRET_PREFIX):
            raise WrongArgument.err("a webhook secret must be whsec_ followed by base64")
        try:
            key = base64.b64decode(self.secret[len(WEBHOOK_SECRET_PREFIX) :], validate=True)
        except (binascii.Error, ValueError):
            key = b""
        if len(key) < 16:
            raise WrongArgument.err(
                "a webhook secret must be whsec_ and 16 or more bytes in base64"
            )
        for name, value, high in (
            ("timeout_ms", self.timeout_ms, MAX_WEBHOOK_TIMEOUT_MS),
            ("concurrency", self.concurrency, MAX_WEBHOOK_CONCURRENCY),
            ("batch", self.batch, MAX_WEBHOOK_BATCH),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
                raise WrongArgument.err(f"{name} must be an integer from 1 to {high}")

    def as_json(self) -> dict[str, Any]:
        """The stored form (the secret included: never shown by REST, never logged)."""
        out: dict[str, Any] = {
            "url": self.url,
            "secret": self.secret,
            "timeout_ms": self.timeout_ms,
            "concurrency": self.concurrency,
            "batch": self.batch,
            "paused": self.paused,
        }
        if self.paused_reason is not None:
            out["paused_reason"] = self.paused_reason
        return out

    @classmethod
    def from_json(cls, stream: str, group: str, name: str, data: object) -> Webhook:
        if not isinstance(data, dict):
            raise WrongArgument.err("a webhook is a JSON object")
        url, secret = data.get("url"), data.get("secret")
        if not isinstance(url, str) or not isinstance(secret, str):
            raise WrongArgument.err("a webhook needs a url and a secret (strings)")
        reason = data.get("paused_reason")
        return cls(
            stream,
            group,
            name,
            url,
            secret,
            data.get("timeout_ms", 5000),
            data.get("concurrency", 8),
            data.get("batch", 1),
            bool(data.get("paused", False)),
            reason if isinstance(reason, str) else None,
        )

    def __repr__(self) -> str:  # never the secret, in logs or tracebacks
        return f"Webhook({self.stream!r}, {self.group!r}, {self.name!r}, {self.url!r})"
