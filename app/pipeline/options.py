"""The ``xstreams`` data source's options, checked once on the driver with clear messages.

Spark hands options over as strings, case-insensitively; a misspelt or unknown option is an
error rather than silently ignored, because a silently ignored ``partitons=8`` or
``maxEntriesPerBatch`` is a bug found in production.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from app.engine.errors import CommandError
from app.engine.ids import StreamID, format_id, parse_range_end, parse_range_start, parse_strict_id

GLOB_CHARS = frozenset("*?[")
_KNOWN = {
    "url": "the service's base URL, e.g. http://127.0.0.1:8000",
    "stream": "a stream name or a glob such as orders-*",
    "token": "the service's bearer token",
    "start": "batch: first ID of the range (XRANGE syntax: -, ms, ms-seq, (id)",
    "end": "batch: last ID of the range (XRANGE syntax: +, ms, ms-seq, (id)",
    "partitions": "how many slices each stream's range is split into",
    "pagesize": "entries per XRANGE request",
    "retries": "retries of a failed request (5xx, 429, connection errors)",
    "timeout": "seconds one request may take",
    "startingposition": "streaming: latest, earliest, or an ID to read after",
    "maxentriesperbatch": "streaming: at most this many entries per micro-batch",
    "failondataloss": "streaming: true stops the query when entries it had not read were "
    "deleted or its stream recreated (default false: a warning)",
    "group": "streaming: read as this consumer group, ack after each batch commits",
    "consumer": "streaming with group: the consumer name",
    "binary": "true: field values as Spark binary, their exact bytes; false (default): "
    "strings, each byte that is not UTF-8 shown as the text \\udcNN",
}


class OptionError(ValueError):
    """A missing, unknown or malformed option of the ``xstreams`` data source."""


@dataclass(frozen=True)
class Options:
    url: str
    stream: str
    token: str | None
    start: StreamID
    end: StreamID
    partitions: int
    page_size: int
    retries: int
    timeout_s: float
    starting_position: str  # "latest", "earliest" or a canonical ID
    max_entries_per_batch: int | None
    fail_on_data_loss: bool
    group: str | None
    consumer: str
    binary: bool = False  # values as Spark binary (exact bytes) rather than strings

    @property
    def is_glob(self) -> bool:
        return any(c in GLOB_CHARS for c in self.stream)


def parse_options(raw: Mapping[str, str]) -> Options:
    opts = {k.lower(): v for k, v in raw.items() if k.lower() != "path"}
    unknown = sorted(set(opts) - set(_KNOWN))
    if unknown:
        known = ", ".join(sorted(_KNOWN))
        raise OptionError(f"unknown option(s) {', '.join(unknown)}; the options are: {known}")
    url = _required(opts, "url")
    if not url.startswith(("http://", "https://")):
        raise OptionError(f"option url must be an http:// or https:// URL, got {url!r}")
    stream = _required(opts, "stream")
    group = opts.get("group") or None
    return Options(
        url=url,
        stream=stream,
        token=opts.get("token") or None,
        start=_range_id(opts, "start", "-", parse_range_start),
        end=_range_id(opts, "end", "+", parse_range_end),
        partitions=_int(opts, "partitions", 4, 1, 10_000),
        page_size=_int(opts, "pagesize", 1000, 1, 1_000_000),
        retries=_int(opts, "retries", 5, 0, 100),
        timeout_s=float(_int(opts, "timeout", 30, 1, 3600)),
        starting_position=_starting_position(opts.get("startingposition", "latest")),
        max_entries_per_batch=(
            _int(opts, "maxentriesperbatch", 0, 1, 1 << 31)
            if "maxentriesperbatch" in opts
            else None
        ),
        fail_on_data_loss=_bool(opts, "failondataloss", False),
        group=group,
        consumer=opts.get("consumer") or "spark",
        binary=_bool(opts, "binary", False),
    )


def _required(opts: Mapping[str, str], key: str) -> str:
    value = opts.get(key, "").strip()
    if not value:
        raise OptionError(f"option {key} is required: {_KNOWN[key]}")
    return value


def _int(opts: Mapping[str, str], key: str, default: int, lo: int, hi: int) -> int:
    if key not in opts:
        return default
    text = opts[key].strip()
    try:
        value = int(text)
    except ValueError:
        raise OptionError(f"option {key} must be an integer, got {text!r}") from None
    if not lo <= value <= hi:
        raise OptionError(f"option {key} must be between {lo} and {hi}, got {value}")
    return value


def _bool(opts: Mapping[str, str], key: str, default: bool) -> bool:
    text = opts.get(key, str(default)).strip().lower()
    if text not in ("true", "false"):
        raise OptionError(f"option {key} must be true or false, got {opts[key]!r}")
    return text == "true"


def _range_id(
    opts: Mapping[str, str], key: str, default: str, parse: Callable[[str], StreamID]
) -> StreamID:
    text = opts.get(key, default).strip()
    try:
        return parse(text)
    except CommandError as exc:
        raise OptionError(f"option {key} is not a valid stream ID: {text!r} ({exc})") from None


def _starting_position(text: str) -> str:
    value = text.strip().lower()
    if value in ("latest", "$"):
        return "latest"
    if value in ("earliest", "-", "0", "0-0"):
        return "earliest"
    try:
        return format_id(parse_strict_id(value))
    except CommandError:
        raise OptionError(
            f"option startingPosition must be latest, earliest or a stream ID, got {text!r}"
        ) from None
