"""Delivery policies, retention and redrive (issue 27): their bodies and replies.

The numbers are taken as JSON integers of any size and checked by the engine's one rule
(``app.engine.delivery``): a value out of range is a 400 with its text, as on every backend,
rather than a second set of bounds here that could drift from it.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.config import JsonDict

from app.api.rest.schemas.body import KEEP_BYTES, Body
from app.engine import delivery
from app.engine.delivery import MAX_BACKOFF_STEPS, MAX_POLICY_MS, DeliveryPolicy, Redriven
from app.engine.ids import INT64_MAX, INT64_MIN, format_id

Int = Annotated[int, Field(ge=INT64_MIN, le=INT64_MAX)]
Name = Annotated[str, Field(min_length=1), KEEP_BYTES]

POLICY_EXAMPLE: JsonDict = {
    "visibility_timeout_ms": 30000,
    "max_deliveries": 5,
    "dead_letter_stream": "{orders}:dead",
    "backoff_ms": [1000, 5000, 30000],
}


class Policy(Body):
    """A consumer group's delivery policy: every part optional (null or left out: not set)."""

    model_config = ConfigDict(json_schema_extra={"examples": [POLICY_EXAMPLE]})

    visibility_timeout_ms: Int | None = Field(
        None,
        description="Every read of new entries (`>`) by a consumer of the group first takes "
        "back the group's entries pending at least this long, as a claim (XCLAIM: the "
        f"delivery count grows, the owner changes). 1 to {MAX_POLICY_MS}.",
    )
    max_deliveries: Int | None = Field(
        None,
        description="An entry due again after this many deliveries goes to "
        "`dead_letter_stream` instead (XADD there and XACK here, atomically). Needs "
        "`dead_letter_stream`.",
    )
    dead_letter_stream: Name | None = Field(
        None,
        description="Where entries go after `max_deliveries`, or after XNACK FATAL. On Redis "
        "Cluster it must share the stream's hash slot (a hash tag: `{orders}` and "
        "`{orders}:dead`).",
    )
    backoff_ms: list[Int] | None = Field(
        None,
        description="The n-th redelivery of an entry (after XNACK FAIL or a visibility "
        "timeout) waits at least `backoff_ms[min(n, len) - 1]` since its last delivery; the "
        f"last step repeats. At most {MAX_BACKOFF_STEPS} steps.",
    )

    def policy(self) -> DeliveryPolicy:
        """The engine's policy (``WrongArgument`` naming the part that is out of range)."""
        return DeliveryPolicy.from_json(self.model_dump(exclude_none=True))


def policy_json(policy: DeliveryPolicy) -> Policy:
    return Policy(**policy.as_json())


class Retention(Body):
    """A stream's retention: any of the three bounds; the service trims in the background."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"max_age_ms": 86400000, "max_len": 1000000}]},
    )

    max_age_ms: Int | None = Field(
        None,
        description="Trim entries whose ID's time is older than this (XTRIM MINID "
        "now - max_age_ms, exactly, in bounded steps).",
    )
    max_len: Int | None = Field(
        None, description="Keep about the newest this many entries (XTRIM MAXLEN ~)."
    )
    max_bytes: Int | None = Field(
        None,
        description="Keep the stream's memory about within this many bytes (XTRIM MAXLEN ~ "
        "in proportion).",
    )

    policy: Literal["KEEPREF", "DELREF", "ACKED"] | None = Field(
        None,
        description="What the trims do to consumer groups' references (Redis 8.2): KEEPREF "
        "(the default) leaves them, DELREF drops them, ACKED trims only entries every group "
        "has acknowledged. DELREF and ACKED need Redis 8.2 in front of Redis.",
    )

    def retention(self) -> delivery.Retention:
        """The engine's retention (``WrongArgument``: none of the three, or out of range)."""
        return delivery.Retention.from_json(self.model_dump(exclude_none=True))


class RetentionView(Retention):
    """A stream's retention as set, and whether it applies now."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "max_age_ms": 86400000,
                    "max_len": 1000000,
                    "policy": "KEEPREF",
                    "state": "waiting",
                    "reason": "stream 'orders' does not exist: trimmed once it is created",
                }
            ]
        },
    )

    state: Literal["active", "waiting"] = Field(
        "active",
        description="`active`: the stream exists and is trimmed; `waiting`: it does not "
        "exist (yet, or any more): a retention is kept by name, as the settings' globs "
        "apply to streams not yet created, and applies once the stream is there.",
    )
    reason: str | None = Field(None, description="Why it is `waiting`; null when active.")


def retention_json(
    retention: delivery.Retention, stream: str | None = None, exists: bool = True
) -> RetentionView:
    """As stored, with the reference policy always named (KEEPREF when none was given),
    and its state: ``waiting`` while the stream ``stream`` does not exist."""
    value: dict[str, object] = {**retention.as_json(), "policy": retention.policy.value}
    if not exists:
        value["state"] = "waiting"
        value["reason"] = f"stream {stream!r} does not exist: trimmed once it is created"
    return RetentionView.model_validate(value)


class Redrive(Body):
    """Which dead-letter entries to move back, and where."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"ids": ["1526569495631-0", "1526569495632-0"]},
                {"count": 100, "to": "{orders}:retry"},
            ]
        },
    )

    ids: Annotated[list[str], Field(min_length=1)] | None = Field(
        None,
        description="The dead-letter entries to move, in this order; left out: the oldest `count`.",
    )
    count: Int | None = Field(
        None,
        description="Without `ids`: how many of the oldest entries to move (the service's "
        "default page unless given, at most `rest_max_count`).",
    )
    to: Name | None = Field(
        None,
        description="The stream to append them to; left out: each entry's origin stream "
        "(its `xs-dl-stream` field).",
    )


class Moved(BaseModel):
    """One entry moved back: its dead-letter ID, the stream it went to and its new ID."""

    id: str
    stream: str
    new_id: str


_REDRIVEN: JsonDict = {
    "moved": [{"id": "1526569495631-0", "stream": "{orders}", "new_id": "1526569499999-0"}],
    "skipped": ["1526569495632-0"],
}


class RedriveResult(BaseModel):
    """What a redrive did: the entries moved (XADD to the target, XDEL here, each atomic) and
    the IDs asked for that were not there or are not dead letters (`skipped`: a retry of a
    redrive that already ran finds its entries moved, and skips them)."""

    model_config = ConfigDict(json_schema_extra={"examples": [_REDRIVEN]})

    moved: list[Moved]
    skipped: list[str]


def redriven(r: Redriven) -> RedriveResult:
    return RedriveResult(
        moved=[
            Moved(id=format_id(old), stream=stream, new_id=format_id(new))
            for old, stream, new in r.moved
        ],
        skipped=[format_id(i) for i in r.skipped],
    )


__all__ = [
    "Policy",
    "Redrive",
    "RedriveResult",
    "Retention",
    "RetentionView",
    "policy_json",
    "redriven",
    "retention_json",
]
