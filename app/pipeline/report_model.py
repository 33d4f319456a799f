"""What ``xstreams report`` is asked for and what it answers, as plain values (no Spark here).

Errors of the report job, one tree::

    ReportError                 the report cannot be produced
    ├── ReportOptionError       an option's text is malformed (the CLI exits with status 2)
    └── NoEntriesError          the archive (or the selection) holds no entries (status 1)

Times are UTC and become ``int`` milliseconds here, so everything after this module compares
plain numbers with the archive's ``ms`` column. ``now_ms`` is passed in: an age such as ``7d``
is relative to it, and tests pin it instead of reading the wall clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import TypedDict

from app.durations import parse_duration_ms


class ReportError(Exception):
    """The report cannot be produced; the message is meant for the person who ran it."""


class ReportOptionError(ReportError):
    """An option's text is malformed; the message names the option."""


class NoEntriesError(ReportError):
    """Nothing to report on: the archive is empty or nothing matches the selection."""


class Bucket(StrEnum):
    """The width of the time buckets entries are counted in."""

    MINUTE = "minute"  # for bursts and short windows (--since 2h)
    HOUR = "hour"  # the default: a day or a week reads well at this width

    @property
    def width_ms(self) -> int:
        return 60_000 if self is Bucket.MINUTE else 3_600_000


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_EXPECTED = (
    "an ISO date (2026-11-01), an ISO datetime (2026-11-01T12:00:00, Z or an offset allowed)"
    " or an age (7d, 12h, 30m, 45s)"
)


def parse_instant(text: str, option: str, now_ms: int) -> int:
    """Milliseconds since the epoch for ``--since``/``--until`` text.

    A date or datetime without an offset is UTC, like the archive's ``date`` partitions, never
    the local time zone of whoever runs the report. An age counts back from ``now_ms``.
    """
    value = text.strip()
    age_ms = parse_duration_ms(value)
    if age_ms is not None:
        return now_ms - age_ms
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise ReportOptionError(f"{option}: expected {_EXPECTED}, got {text!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // timedelta(milliseconds=1)  # exact, unlike float seconds


@dataclass(frozen=True)
class ReportOptions:
    """The selection and shape of one report; ``since_ms`` inclusive, ``until_ms`` exclusive."""

    streams: tuple[str, ...] = ()  # empty: every stream in the archive
    since_ms: int | None = None
    until_ms: int | None = None
    bucket: Bucket = Bucket.HOUR
    fields: tuple[str, ...] = ()  # whose most frequent values to show
    top: int = 10
    live_url: str | None = None  # also read the streams from a running service
    token: str | None = None

    def __post_init__(self) -> None:
        if self.top < 1:
            raise ReportOptionError(f"--top: expected a positive number, got {self.top}")
        if (
            self.since_ms is not None
            and self.until_ms is not None
            and self.since_ms >= self.until_ms
        ):
            raise ReportOptionError("--since: must be earlier than --until")


def report_options(
    *,
    now_ms: int,
    streams: tuple[str, ...] = (),
    since: str | None = None,
    until: str | None = None,
    bucket: Bucket = Bucket.HOUR,
    fields: tuple[str, ...] = (),
    top: int = 10,
    live_url: str | None = None,
    token: str | None = None,
) -> ReportOptions:
    """Options from command-line text: the one place ``--since``/``--until`` are parsed."""
    return ReportOptions(
        streams=streams,
        since_ms=None if since is None else parse_instant(since, "--since", now_ms),
        until_ms=None if until is None else parse_instant(until, "--until", now_ms),
        bucket=bucket,
        fields=fields,
        top=top,
        live_url=live_url,
        token=token,
    )


def format_ms(ms: int) -> str:
    """An instant as ISO 8601 UTC with a ``Z``, the form the CSV files and tables show."""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# The three tables. TypedDicts: each row is a plain dict (easy to compare in tests, to write as
# CSV) that mypy still checks field by field.


class BucketRow(TypedDict):
    """Entries of one stream whose ID time falls in [bucket_start, bucket_start + width)."""

    stream: str
    bucket_start: datetime  # UTC
    entries: int


class InterArrivalRow(TypedDict):
    """Gaps between consecutive entries of one stream (in ID order), in milliseconds.

    Percentiles are exact (Spark's ``percentile``: linear interpolation between the closest
    ranks, as numpy's default), null for a stream with a single entry in the window.
    """

    stream: str
    entries: int
    p50_ms: float | None
    p90_ms: float | None
    p99_ms: float | None
    max_ms: int | None


class TopValueRow(TypedDict):
    """One of the ``top`` most frequent values of a field in a stream; rank 1 is the commonest."""

    stream: str
    field: str
    value: str
    count: int
    rank: int


@dataclass(frozen=True)
class ReportTables:
    """The report's answer, small enough to hold on the driver."""

    bucket: Bucket
    entries_per_bucket: list[BucketRow]
    inter_arrival: list[InterArrivalRow]
    top_values: list[TopValueRow]
