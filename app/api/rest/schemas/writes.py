"""Request bodies that change a stream: append (XADD), trim (XTRIM), set the last ID (XSETID);
and what deleting entries answers (XDEL, XDELEX, XACKDEL)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from app.api.rest.schemas.body import Body, Part
from app.api.rest.schemas.entries import FieldsIn
from app.engine.commands.xadd_options import trim_spec
from app.engine.ids import INT64_MAX, INT64_MIN
from app.engine.refs import RefPolicy
from app.engine.stream import TrimSpec

E = TypeVar("E", bound=StrEnum)


def token(kind: type[E]) -> BeforeValidator:
    """Redis reads its option tokens in any case (``acked`` is ``ACKED``): so does a body or
    query here. Anything else is refused naming the tokens (422)."""

    def read(value: Any) -> Any:
        if isinstance(value, str) and value.upper() in kind.__members__:
            return kind[value.upper()]
        if isinstance(value, kind):
            return value
        names = ", ".join(kind.__members__)
        raise ValueError(f"must be one of {names} (any case)")

    return BeforeValidator(read)


POLICY_DOC = (
    "What deleting an entry does to the consumer groups that refer to it (Redis 8.2): "
    "`KEEPREF` (the default, Redis 7.0's behaviour) keeps its ID in every PEL; `DELREF` "
    "removes it from every PEL too; `ACKED` deletes only entries no group still needs "
    "(delivered to every group and pending in none). Any case."
)
Policy = Annotated[RefPolicy, token(RefPolicy)]
"""A reference policy in a body or a query: its token in any case, else 422."""


class Trim(Body):
    """A MAXLEN or MINID clause, as XADD and XTRIM take it."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"maxlen": 1000, "approximate": True}]},
    )

    maxlen: int | None = Field(
        None, ge=INT64_MIN, le=INT64_MAX, description="MAXLEN: keep at most this many entries."
    )
    minid: str | None = Field(None, description="MINID: drop entries with smaller IDs.")
    approximate: bool = Field(
        False, description="`~`: trim only whole nodes, never more than exact trimming would."
    )
    limit: int | None = Field(
        None,
        ge=INT64_MIN,
        le=INT64_MAX,
        description="LIMIT: at most this many entries removed (with `approximate` only).",
    )
    policy: Policy = Field(
        RefPolicy.KEEPREF,
        description=POLICY_DOC + " `DELREF` and `ACKED` trim exactly, even with `approximate`; "
        "`ACKED` keeps the entries a group still needs and trims past them.",
    )

    def spec(self) -> TrimSpec:
        """The clause, checked by the engine's one rule (errors as XTRIM's tokens get)."""
        return trim_spec(
            maxlen=self.maxlen,
            minid=self.minid,
            approximate=self.approximate,
            limit=self.limit,
            policy=self.policy,
        )


PRODUCER_DOC = (
    "IDMP (Redis 8.6): the producer whose appends are deduplicated. With `idempotent_id` "
    "(XADD ... IDMP producer idempotent-id), an ID this producer already used on the stream "
    "appends nothing and answers the entry ID it appended first; alone (IDMPAUTO), the "
    "idempotent ID is derived from the entry's fields. Only with ID `*`."
)
IID_DOC = "IDMP: the idempotent ID, unique per producer (needs `producer`)."


class NewEntry(Part):
    """One entry to append; ``id`` is `*` (the default), `ms-*` or an explicit `ms-seq`."""

    id: str = Field("*", description="`*` (generated), `ms-*` or an explicit `ms-seq` ID.")
    fields: FieldsIn
    producer: str | None = Field(None, description=PRODUCER_DOC)
    idempotent_id: str | None = Field(None, description=IID_DOC)


class Append(Body):
    """Append one entry (``fields``), or several atomically (``entries``): not both."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"fields": {"sensor": "7", "temperature": "19.8"}},
                {
                    "entries": [
                        {"fields": [["sensor", "7"], ["sensor", "8"]]},
                        {"id": "1526569495631-*", "fields": {"sensor": "9"}},
                    ],
                    "nomkstream": True,
                    "trim": {"maxlen": 1000, "approximate": True},
                },
                {
                    "fields": {"order": "1138", "total": "42.00"},
                    "producer": "checkout-3",
                    "idempotent_id": "order-1138",
                },
            ]
        },
    )

    id: str = Field("*", description="For one entry: `*`, `ms-*` or an explicit `ms-seq`.")
    fields: FieldsIn | None = None
    producer: str | None = Field(None, description="For one entry: " + PRODUCER_DOC)
    idempotent_id: str | None = Field(None, description="For one entry: " + IID_DOC)
    entries: list[NewEntry] | None = Field(
        None, min_length=1, description="Several entries, appended all or none."
    )
    nomkstream: bool = Field(False, description="NOMKSTREAM: do not create a missing stream.")
    trim: Trim | None = Field(None, description="Trim after appending (MAXLEN / MINID).")

    @model_validator(mode="after")
    def _one_form(self) -> Append:
        if (self.fields is None) == (self.entries is None):
            raise ValueError("give either `fields` (one entry) or `entries` (a batch)")
        if self.entries is not None and self.id != "*":
            raise ValueError("in a batch each entry carries its own `id`")
        if self.entries is not None and (self.producer, self.idempotent_id) != (None, None):
            raise ValueError("in a batch each entry carries its own `producer`")
        return self

    def batch(self) -> list[NewEntry]:
        if self.entries is not None:
            return self.entries
        assert self.fields is not None  # checked by _one_form
        return [
            NewEntry(
                id=self.id,
                fields=self.fields,
                producer=self.producer,
                idempotent_id=self.idempotent_id,
            )
        ]


class Appended(BaseModel):
    """The IDs given to the appended entries, in order."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"ids": ["1526569495631-0"]}]})

    ids: list[str]


class Trimmed(BaseModel):
    """How many entries trimming removed."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"trimmed": 12}]})

    trimmed: int


class EntryStatus(StrEnum):
    """What became of one ID (XDELEX's and XACKDEL's codes): ``deleted`` is 1, ``kept`` 2
    (``ACKED``: a group still needs it), ``not_found`` -1 (not in the stream; for XACKDEL,
    not pending in the group, so neither acknowledged nor deleted)."""

    deleted = "deleted"
    not_found = "not_found"
    kept = "kept"


STATUS_OF_CODE = {1: EntryStatus.deleted, 2: EntryStatus.kept, -1: EntryStatus.not_found}


class IdStatus(BaseModel):
    """One ID and what became of it."""

    id: str
    status: EntryStatus


RESULTS_EXAMPLE: list[Any] = [
    {"id": "1526569495631-0", "status": "deleted"},
    {"id": "1526569495632-0", "status": "kept"},
    {"id": "1526569495633-0", "status": "not_found"},
]


def statuses(ids: list[str], codes: list[int]) -> dict[str, Any]:
    """The counts and per-ID results of an XDELEX / XACKDEL reply, as plain values."""
    results = [
        {"id": i, "status": STATUS_OF_CODE[c].value} for i, c in zip(ids, codes, strict=True)
    ]
    return {
        "deleted": codes.count(1),
        "kept": codes.count(2),
        "not_found": codes.count(-1),
        "results": results,
    }


class Deleted(BaseModel):
    """How many of the given entries existed and were deleted. With a `policy` (XDELEX),
    also how many were kept and not found, and what became of each ID, in order."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"deleted": 2},
                {"deleted": 1, "kept": 1, "not_found": 1, "results": RESULTS_EXAMPLE},
            ]
        }
    )

    deleted: int
    kept: int | None = Field(default=None, description="With `policy`: IDs kept (`ACKED`).")
    not_found: int | None = Field(default=None, description="With `policy`: IDs not in the stream.")
    results: list[IdStatus] | None = Field(
        default=None, description="With `policy`: each ID given, in order, and what became of it."
    )


class StreamConfig(Body):
    """XCFGSET's settings (Redis 8.6): how long and how many idempotent IDs each producer's
    appends are deduplicated over. A setting left out stays as it is; at least one is given.
    Changing either forgets every producer's idempotent IDs (the counters stay)."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"idmp_duration_s": 300, "idmp_maxsize": 1000}]},
    )

    idmp_duration_s: int | None = Field(
        None,
        ge=INT64_MIN,
        le=INT64_MAX,
        description="IDMP-DURATION: seconds an idempotent ID is kept, 1 to 86400 (default 100).",
    )
    idmp_maxsize: int | None = Field(
        None,
        ge=INT64_MIN,
        le=INT64_MAX,
        description="IDMP-MAXSIZE: idempotent IDs kept per producer, 1 to 10000 (default 100).",
    )


class LastId(Body):
    """XSETID's arguments: the stream's new last ID and, optionally, its counters."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"last_id": "1526569495631-5", "entries_added": 40, "max_deleted_id": "0-0"}
            ]
        },
    )

    last_id: str
    entries_added: int | None = Field(None, ge=0, le=INT64_MAX, description="ENTRIESADDED.")
    max_deleted_id: str | None = Field(None, description="MAXDELETEDID.")
