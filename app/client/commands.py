"""The client's commands on streams, groups and pending entries (``xstreams add``, ...).

Each is one or a few REST requests (openapi/openapi.json) and a rendering of the answer."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Annotated, Any

import typer

from app.client.http import Service, segment
from app.client.session import DEFAULT_URL, Json, Token, Url, session

Stream = Annotated[str, typer.Argument(help="The stream's name.")]
Group = Annotated[str, typer.Argument(help="The consumer group's name.")]


def stream_path(name: str) -> str:
    return f"/v1/streams/{segment(name)}"


def group_path(stream: str, group: str) -> str:
    return f"{stream_path(stream)}/groups/{segment(group)}"


def parse_fields(pairs: list[str]) -> list[list[str]]:
    """``field=value`` words as pairs, in order (a field may repeat, as in XADD)."""
    out = []
    for pair in pairs:
        field, sep, value = pair.partition("=")
        if not sep or not field:
            raise typer.BadParameter(f"{pair!r} is not field=value", param_hint="FIELDS")
        out.append([field, value])
    return out


def _stdin_entries() -> Iterator[dict[str, Any]]:
    """JSON lines: an object of fields, or ``{"id": ..., "fields": ...}`` (export's form)."""
    for number, line in enumerate(sys.stdin, 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as exc:
            raise typer.BadParameter(f"stdin line {number}: {exc}") from None
        if not isinstance(value, dict):
            raise typer.BadParameter(f"stdin line {number}: not a JSON object")
        yield value if "fields" in value else {"fields": value}


def add(
    stream: Stream,
    fields: Annotated[
        list[str] | None,
        typer.Argument(help="field=value pairs; none: JSON lines from stdin, one entry each."),
    ] = None,
    entry_id: Annotated[
        str, typer.Option("--id", help="`*` (generated), `ms-*` or an explicit ms-seq.")
    ] = "*",
    maxlen: Annotated[
        int | None, typer.Option(help="Trim after appending: keep at most this many entries.")
    ] = None,
    minid: Annotated[
        str | None, typer.Option(help="Trim after appending: drop entries below this ID.")
    ] = None,
    approximate: Annotated[
        bool, typer.Option("--approx", help="Trim only whole nodes (`~`).")
    ] = False,
    nomkstream: Annotated[
        bool, typer.Option("--nomkstream", help="Do not create a missing stream.")
    ] = False,
    batch: Annotated[int, typer.Option(min=1, help="Entries per request from stdin.")] = 500,
    url: Url = DEFAULT_URL,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Append an entry (XADD): `xstreams add orders item=book qty=2`."""
    if not fields and sys.stdin.isatty():  # not waiting on a terminal for lines never typed
        raise typer.BadParameter("give field=value pairs, or JSON lines on stdin")
    body: dict[str, Any] = {"nomkstream": nomkstream}
    if maxlen is not None or minid is not None:
        body["trim"] = {"maxlen": maxlen, "minid": minid, "approximate": approximate}
    with session(url, token, as_json) as (service, out):
        if fields:
            ids = service.post(
                f"{stream_path(stream)}/entries",
                {**body, "id": entry_id, "fields": parse_fields(fields)},
            )["ids"]
        else:
            ids = append_all(service, stream, _stdin_entries(), batch, body)
        if as_json:
            out.document({"ids": ids})
        else:
            for one in ids:
                out.console.print(one)


def append_all(
    service: Service,
    stream: str,
    entries: Iterator[dict[str, Any]],
    batch: int,
    body: dict[str, Any] | None = None,
    progress: Any = None,
) -> list[str]:
    """Append entries in requests of ``batch`` (each all or none); the IDs given."""
    ids: list[str] = []
    run: list[dict[str, Any]] = []

    def flush() -> None:
        if run:
            ids.extend(
                service.post(f"{stream_path(stream)}/entries", {**(body or {}), "entries": run})[
                    "ids"
                ]
            )
            if progress is not None:
                progress(len(run))
            run.clear()

    for entry in entries:
        run.append(entry)
        if len(run) >= batch:
            flush()
    flush()
    return ids


def range_(
    stream: Stream,
    start: Annotated[str, typer.Argument(help="First ID (`-`: the first entry).")] = "-",
    end: Annotated[str, typer.Argument(help="Last ID (`+`: the last entry).")] = "+",
    count: Annotated[int | None, typer.Option(min=1, help="At most this many entries.")] = None,
    rev: Annotated[bool, typer.Option("--rev", help="Newest first (XREVRANGE).")] = False,
    url: Url = DEFAULT_URL,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Print the entries between two IDs (XRANGE); `--json` prints JSON lines."""
    with session(url, token, as_json) as (service, out):
        for entry in entries_between(service, stream, start, end, count, rev):
            out.entry(entry)


def entries_between(
    service: Service, stream: str, start: str, end: str, count: int | None, rev: bool = False
) -> Iterator[dict[str, Any]]:
    """The entries of a range, page by page (the answer's ``next`` is the following page)."""
    left = count
    params: dict[str, Any] = {"start": start, "end": end}
    if rev:  # the resource's start/end stay low/high; order says which way to walk
        params["order"] = "desc"
    while left is None or left > 0:
        page = service.get(
            f"{stream_path(stream)}/entries", **params, count=min(left or 1000, 1000)
        )
        yield from page["entries"]
        if left is not None:
            left -= len(page["entries"])
        if not page.get("next") or not page["entries"]:
            return
        params["end" if rev else "start"] = page["next"]


def ls(
    match: Annotated[str | None, typer.Option(help="Only names matching this glob.")] = None,
    cursor: Annotated[
        str | None, typer.Option(help="One page from this cursor (else every page).")
    ] = None,
    count: Annotated[int | None, typer.Option(min=1, help="Streams asked for a page.")] = None,
    url: Url = DEFAULT_URL,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """List streams: name, length, groups, last ID."""
    with session(url, token, as_json) as (service, out):
        streams: list[dict[str, Any]] = []
        position = cursor
        while True:
            page = service.get("/v1/streams", cursor=position, count=count, match=match)
            streams += page["streams"]
            position = page.get("next_cursor")
            if cursor is not None or not position:
                break
        if as_json:
            out.document({"streams": streams, "next_cursor": position})
            return
        out.table(
            ("stream", "length", "groups", "last id"),
            ((s["name"], s["length"], s["groups"], s["last_generated_id"]) for s in streams),
        )
        if cursor is not None and position:
            out.note(f"next page: --cursor {position}")


def info(
    stream: Stream, url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False
) -> None:
    """A stream's info (XINFO STREAM): length, IDs, groups, first and last entries."""
    with session(url, token, as_json) as (service, out):
        value = service.get(stream_path(stream))
        if as_json:
            out.document(value)
        else:
            out.pairs(value)


groups = typer.Typer(help="A stream's consumer groups: list, create, delete.", no_args_is_help=True)


@groups.command("list")
def groups_list(
    stream: Stream, url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False
) -> None:
    """List a stream's groups (XINFO GROUPS)."""
    with session(url, token, as_json) as (service, out):
        found: list[dict[str, Any]] = []
        after = None
        while True:
            page = service.get(f"{stream_path(stream)}/groups", after=after)
            found += page["groups"]
            after = page.get("next")
            if not after:
                break
        if as_json:
            out.document({"groups": found})
            return
        out.table(
            ("group", "consumers", "pending", "last delivered", "lag"),
            (
                (g["name"], g["consumers"], g["pending"], g["last_delivered_id"], g["lag"])
                for g in found
            ),
        )


@groups.command("create")
def groups_create(
    stream: Stream,
    group: Group,
    start: Annotated[
        str, typer.Option("--from", help="Deliver entries after this ID (`$`: only new, `0`: all).")
    ] = "$",
    mkstream: Annotated[
        bool, typer.Option("--mkstream", help="Create the stream if it is missing.")
    ] = False,
    url: Url = DEFAULT_URL,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Create a consumer group (XGROUP CREATE)."""
    with session(url, token, as_json) as (service, out):
        body = {"name": group, "id": start, "mkstream": mkstream}
        value = service.post(f"{stream_path(stream)}/groups", body)
        if as_json:
            out.document(value)
        else:
            out.console.print(f"created group {group} on {stream}")


@groups.command("delete")
def groups_delete(
    stream: Stream, group: Group, url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False
) -> None:
    """Delete a consumer group and its pending entries (XGROUP DESTROY)."""
    with session(url, token, as_json) as (service, out):
        value = service.call("DELETE", group_path(stream, group))
        if as_json:
            out.document(value)
        else:
            out.console.print(f"deleted group {group} of {stream}")


def pending(
    stream: Stream,
    group: Group,
    consumer: Annotated[str | None, typer.Option(help="Only this consumer's entries.")] = None,
    min_idle: Annotated[
        int | None, typer.Option(min=0, help="Only entries idle at least this many ms.")
    ] = None,
    count: Annotated[
        int, typer.Option(min=0, help="List at most this many (0: summary only).")
    ] = 100,
    url: Url = DEFAULT_URL,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """A group's pending entries (XPENDING): the summary, then the entries."""
    with session(url, token, as_json) as (service, out):
        path = f"{group_path(stream, group)}/pending"
        summary = service.get(path)
        listed: list[dict[str, Any]] = []
        if count:
            listed = service.get(
                path, start="-", end="+", count=count, consumer=consumer, min_idle_ms=min_idle
            )["entries"]
        if as_json:
            out.document({**summary, "entries": listed})
            return
        if summary["count"]:
            first, last = summary["first_id"], summary["last_id"]
            out.console.print(f"{summary['count']} pending, IDs {first} to {last}")
        else:
            out.console.print("0 pending")
        if summary["consumers"]:
            out.table(
                ("consumer", "pending"), ((c["name"], c["pending"]) for c in summary["consumers"])
            )
        if listed:
            out.table(
                ("id", "consumer", "idle ms", "deliveries"),
                ((e["id"], e["consumer"], e["idle_ms"], e["delivery_count"]) for e in listed),
            )


def claim(
    stream: Stream,
    group: Group,
    consumer: Annotated[str, typer.Argument(help="The consumer that takes the entries.")],
    ids: Annotated[
        list[str] | None, typer.Argument(help="Entries to claim (XCLAIM); none: XAUTOCLAIM.")
    ] = None,
    min_idle: Annotated[
        int, typer.Option(min=0, help="Claim only entries idle at least this many ms.")
    ] = 0,
    count: Annotated[int, typer.Option(min=1, help="Autoclaim: at most this many.")] = 100,
    start: Annotated[
        str, typer.Option(help="Autoclaim: scan the pending list from this ID.")
    ] = "0-0",
    url: Url = DEFAULT_URL,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Give pending entries to a consumer: the IDs named, or any idle ones (autoclaim)."""
    with session(url, token, as_json) as (service, out):
        path = group_path(stream, group)
        body: dict[str, Any] = {"consumer": consumer, "min_idle_ms": min_idle}
        if ids:
            value = service.post(f"{path}/claims", {**body, "ids": ids})
        else:
            value = service.post(f"{path}/autoclaims", {**body, "count": count, "start": start})
        if as_json:
            out.document(value)
            return
        for entry in value.get("entries", []):
            out.entry(entry)
        if value.get("next_start") not in (None, "0-0"):
            out.note(f"more to scan: --start {value['next_start']}")
