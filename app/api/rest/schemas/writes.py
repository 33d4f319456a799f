"""Request bodies that change a stream: append (XADD), trim (XTRIM), set the last ID (XSETID)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.api.rest.schemas.body import Body
from app.api.rest.schemas.entries import FieldsIn
from app.engine.commands.streams import trim_spec
from app.engine.ids import INT64_MAX, INT64_MIN
from app.engine.stream import TrimSpec


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

    def spec(self) -> TrimSpec:
        """The clause, checked by the engine's one rule (errors as XTRIM's tokens get)."""
        return trim_spec(
            maxlen=self.maxlen, minid=self.minid, approximate=self.approximate, limit=self.limit
        )


class NewEntry(Body):
    """One entry to append; ``id`` is `*` (the default), `ms-*` or an explicit `ms-seq`."""

    id: str = Field("*", description="`*` (generated), `ms-*` or an explicit `ms-seq` ID.")
    fields: FieldsIn


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
            ]
        },
    )

    id: str = Field("*", description="For one entry: `*`, `ms-*` or an explicit `ms-seq`.")
    fields: FieldsIn | None = None
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
        return self

    def batch(self) -> list[NewEntry]:
        if self.entries is not None:
            return self.entries
        assert self.fields is not None  # checked by _one_form
        return [NewEntry(id=self.id, fields=self.fields)]


class Appended(BaseModel):
    """The IDs given to the appended entries, in order."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"ids": ["1526569495631-0"]}]})

    ids: list[str]


class Trimmed(BaseModel):
    """How many entries trimming removed."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"trimmed": 12}]})

    trimmed: int


class Deleted(BaseModel):
    """How many of the given entries existed and were deleted."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"deleted": 2}]})

    deleted: int


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
