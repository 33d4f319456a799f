"""Consumer groups and consumers: XINFO GROUPS / CONSUMERS rows and XGROUP's arguments."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field
from pydantic.config import JsonDict

from app.api.rest.schemas.body import KEEP_BYTES, Body
from app.api.rest.schemas.delivery import POLICY_EXAMPLE, Policy, policy_json
from app.engine import replies
from app.engine.delivery import DeliveryPolicy
from app.engine.ids import INT64_MAX, format_id

_GROUP_EXAMPLE: JsonDict = {
    "name": "billing",
    "consumers": 2,
    "pending": 3,
    "last_delivered_id": "1526569495631-0",
    "entries_read": 7,
    "lag": 0,
    "policy": POLICY_EXAMPLE,  # null for a plain Redis group (the document cannot say null)
}


class Group(BaseModel):
    """A consumer group (XINFO GROUPS row); ``entries_read`` and ``lag`` null when unknown."""

    model_config = ConfigDict(json_schema_extra={"examples": [_GROUP_EXAMPLE]})

    name: str
    consumers: int
    pending: int
    last_delivered_id: str
    entries_read: int | None
    lag: int | None
    policy: Policy | None = Field(
        description="The group's delivery policy (`/policy`); null: none, the group is plain Redis."
    )


_NEXT = (
    "The last name of this page, to pass as `after` for the next one (the `Link` header's "
    '`rel="next"` is that request); null on the last page.'
)


class GroupList(BaseModel):
    """One page of the stream's groups (XINFO GROUPS), by name."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"groups": [_GROUP_EXAMPLE], "next": None}]}
    )

    groups: list[Group]
    next: str | None = Field(None, description=_NEXT)


class NewGroup(Body):
    """XGROUP CREATE's arguments."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"name": "billing", "id": "$", "mkstream": True}]},
    )

    name: Annotated[str, Field(min_length=1), KEEP_BYTES]
    id: str = Field("$", description="Deliver entries after this ID; `$` is the last entry.")
    mkstream: bool = Field(False, description="MKSTREAM: create the stream if it is missing.")
    entries_read: int | None = Field(None, ge=0, le=INT64_MAX, description="ENTRIESREAD.")


class GroupUpdate(Body):
    """XGROUP SETID's arguments."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"last_delivered_id": "0-0", "entries_read": 0}]},
    )

    last_delivered_id: str = Field(description="The new last-delivered ID; `$`: the last entry.")
    entries_read: int | None = Field(
        None, ge=0, le=INT64_MAX, description="ENTRIESREAD; null: unknown."
    )


class Consumer(BaseModel):
    """A consumer (XINFO CONSUMERS row)."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"name": "alice", "pending": 1, "idle_ms": 9104}]}
    )

    name: str
    pending: int
    idle_ms: int


class ConsumerList(BaseModel):
    """One page of the group's consumers (XINFO CONSUMERS), by name."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"consumers": [{"name": "alice", "pending": 1, "idle_ms": 9104}], "next": None}
            ]
        }
    )

    consumers: list[Consumer]
    next: str | None = Field(None, description=_NEXT)


class ConsumerDeleted(BaseModel):
    """XGROUP DELCONSUMER: how many pending entries the consumer had (now unowned)."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"pending": 2}]})

    pending: int


class Read(Body):
    """XREADGROUP's arguments for one stream."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"id": ">", "count": 10, "block_ms": 5000}]},
    )

    id: str = Field(
        ">",
        description="`>`: entries never delivered to the group; an ID: this consumer's "
        "pending entries after it (its history).",
    )
    count: int | None = Field(
        None, ge=1, le=INT64_MAX, description="COUNT: at most this many entries."
    )
    block_ms: int | None = Field(
        None,
        ge=0,
        le=INT64_MAX,
        description="BLOCK: wait up to this long for new entries (0: forever).",
    )
    noack: bool = Field(False, description="NOACK: do not add the entries to the PEL.")
    claim_idle_ms: int | None = Field(
        None,
        ge=0,
        le=INT64_MAX,
        description="CLAIM min-idle-time (Redis 8.4), with `id` `>`: first take the group's "
        "pending entries idle at least this long (entries released by XNACK before all, then "
        "the longest idle), then new ones, `count` covering both. Every entry then carries "
        "`idle_ms` and `delivery_count` from before this read (a new one 0 and 0). Ignored "
        "for a history read, as Redis ignores it.",
    )


def group(g: replies.GroupInfo, policy: DeliveryPolicy | None) -> Group:
    return Group(
        name=g.name,
        consumers=g.consumers,
        pending=g.pending,
        last_delivered_id=format_id(g.last_delivered_id),
        entries_read=g.entries_read,
        lag=g.lag,
        policy=None if policy is None else policy_json(policy),
    )


def consumer(c: replies.ConsumerInfo) -> Consumer:
    return Consumer(name=c.name, pending=c.pending, idle_ms=c.idle_ms)
