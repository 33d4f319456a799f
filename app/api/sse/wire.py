"""The Server-Sent Events wire format: entries, gaps and hints as ready-to-write bytes.

Kept apart from the connection lifecycle (``sse_response``) so the bytes of an event are
built once and written as they are to every subscriber. Every event that carries an entry has
``id:`` set to the entry's ID (or, on a multi-stream connection, to every stream's position),
so a browser's automatic ``Last-Event-ID`` resumes exactly after the last event it received.

Events:

    entry     an entry: ``{"id", "fields"}`` (plus ``"stream"`` on a multi-stream connection;
              plus ``"idle_ms"`` and ``"delivery_count"`` on group delivery with
              ``claim_idle_ms``, as the REST read with CLAIM gives them)
    gap       entries after the resume point may be gone (trimmed or deleted): ``{"after",
              "first_id"}`` (``"first_id"`` null when the stream is empty), sent before going on
    deleted   a pending entry of a consumer's history whose stream entry was deleted
    error     the source ended on a Redis error (group destroyed...): ``{"code", "error"}``

A multi-stream event ID is every stream's position as ``name=id`` pairs joined by ``&``, names
percent-encoded (``a=1-0&b%26c=0-0``, built by ``sse_tail.Subscriber``), so it never holds a
newline or a separator and survives any stream name; it is always ASCII.

Data is JSON in the one representation of bytes that are not UTF-8 (app/api/binary): such an
entry is delivered like any other, never ending the connection.
"""

from __future__ import annotations

from app.access.prefix import NO_PREFIX, TenantPrefix
from app.api.binary import encode_json, unquote_name
from app.api.encoding import rest_maybe_entry, sse_entry_data
from app.api.rest.schemas.entries import FieldsForm
from app.engine.errors import CommandError
from app.engine.ids import StreamID, format_id, parse_strict_id
from app.engine.replies import ClaimedEntry
from app.engine.stream import Entry

__all__ = [
    "HEARTBEAT",
    "EncodedEntry",
    "claimed_event",
    "deleted_event",
    "error_event",
    "gap_event",
    "parse_positions",
    "retry_hint",
]

HEARTBEAT = b": ping\n\n"


def retry_hint(retry_ms: int) -> bytes:
    """How long EventSource waits before reconnecting; also flushes the headers at once."""
    return b"retry: %d\n\n" % retry_ms


class EncodedEntry:
    """One entry's event bytes, built on first use and then shared by every subscriber."""

    __slots__ = ("_multi", "_single", "entry", "stream")

    def __init__(self, stream: str, entry: Entry) -> None:
        self.stream = stream
        self.entry = entry
        self._single: dict[FieldsForm, bytes] = {}
        # By form and tenant prefix: the ``stream`` in the data is the subscriber's name.
        self._multi: dict[tuple[FieldsForm, str], bytes] = {}

    def single(self, form: FieldsForm) -> bytes:
        """The whole event for a one-stream connection: ``id`` is the entry ID."""
        out = self._single.get(form)
        if out is None:  # once per entry and form; every other subscriber shares it
            e = self.entry
            data = sse_entry_data(e, form, None)
            out = self._single[form] = b"id: %s\nevent: entry\ndata: %s\n\n" % (
                format_id(e.id).encode(),
                data,
            )
        return out

    def multi(self, form: FieldsForm, tenant: TenantPrefix = NO_PREFIX) -> bytes:
        """The event without its ``id`` line, which each multi-stream connection adds; its
        data names the stream as ``tenant``'s credentials do."""
        out = self._multi.get((form, tenant.text))
        if out is None:
            e = self.entry
            data = sse_entry_data(e, form, tenant.outward(self.stream))
            out = self._multi[form, tenant.text] = b"event: entry\ndata: %s\n\n" % data
        return out


def claimed_event(e: ClaimedEntry, form: FieldsForm) -> bytes:
    """An entry of a group read with CLAIM: the entry event, its data also saying how long
    the entry was idle (-1: released by XNACK; 0: new) and how often it was delivered before
    this delivery (0: new). Sent to one subscriber, so built for it alone."""
    return b"id: %s\nevent: entry\ndata: %s\n\n" % (
        format_id(e.id).encode(),
        encode_json(rest_maybe_entry(e, form)),
    )


def gap_event(after: StreamID, first_id: StreamID | None, stream: str | None = None) -> bytes:
    """Entries after ``after`` may have been removed: say so instead of skipping silently.

    No ``id`` line: the browser's resume point stays where it was until an entry arrives.
    """
    body: dict[str, object] = {
        "after": format_id(after),
        "first_id": None if first_id is None else format_id(first_id),
    }
    if stream is not None:
        body = {"stream": stream, **body}
    return b"event: gap\ndata: %s\n\n" % encode_json(body)


def deleted_event(entry_id: StreamID) -> bytes:
    """A pending entry whose stream entry is gone (XREADGROUP history gives ``[id, nil]``)."""
    text = format_id(entry_id)
    return b'id: %s\nevent: deleted\ndata: {"id":"%s","fields":null}\n\n' % (
        text.encode(),
        text.encode(),
    )


def error_event(error: CommandError, tenant: TenantPrefix = NO_PREFIX) -> bytes:
    """An error ending the stream, a key it quotes named as ``tenant``'s credential does."""
    body = {"code": error.code, "error": tenant.error(error.text)}
    return b"event: error\ndata: %s\n\n" % encode_json(body)


def parse_positions(text: str) -> dict[str, StreamID]:
    """Read a multi-stream ``Last-Event-ID``; raises Redis's invalid-ID error if malformed."""
    out: dict[str, StreamID] = {}
    for part in text.split("&"):
        name, sep, sid = part.partition("=")
        if not sep:
            raise CommandError.err("Invalid Last-Event-ID for a multi-stream connection")
        out[unquote_name(name)] = parse_strict_id(sid)
    return out
