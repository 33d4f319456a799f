"""Bytes, IDs, errors and replies: what goes to Redis and what comes back, as the engine's types.

Bytes are bytes: names and values are ``str`` holding non-UTF-8 bytes as lone surrogates
(``surrogateescape``, app/api/binary.py); they are encoded that way on the way out and decoded
that way on the way back. redis-py runs without response callbacks, so a reply is RESP as sent
(bulk and simple strings as bytes, integers, nils, arrays, errors), in RESP2 as the command
endpoint answers (redis-py 8 would speak RESP3, whose maps and sets shape otherwise). The
parsers here turn it into the engine's reply objects, so every surface shapes them as it
shapes the embedded engine's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redis.exceptions import (
    ResponseError,
)

from app.backends.errors import (
    classify_reply,
)
from app.engine.commands.streams import XAddArgs
from app.engine.commands.xadd_options import DEFAULT_LIMIT
from app.engine.errors import CommandError
from app.engine.idmp import DEFAULT_DURATION_S, DEFAULT_MAXSIZE, IdmpInfo
from app.engine.ids import StreamID
from app.engine.refs import RefPolicy
from app.engine.replies import (
    ClaimedEntry,
    CommandReply,
    MissingEntry,
    Status,
    StreamHeader,
    StreamInfo,
    StreamRead,
)
from app.engine.stream import Entry, TrimSpec, TrimStrategy

Raw = Any  # a RESP reply as redis-py's parser gives it without callbacks
Arg = str | bytes | int


def encode(s: str) -> bytes:
    return s.encode("utf-8", "surrogateescape")


def decode(b: Raw) -> str:
    if isinstance(b, bytes):
        return b.decode("utf-8", "surrogateescape")
    return str(b)


def id_arg(sid: StreamID) -> bytes:
    return f"{sid.ms}-{sid.seq}".encode()


def parse_id(raw: Raw) -> StreamID:
    ms, _, seq = decode(raw).partition("-")
    return StreamID(int(ms), int(seq))


def parse_opt_id(raw: Raw) -> StreamID | None:
    return None if raw is None else parse_id(raw)


def _text(exc: ResponseError) -> str:
    """Redis's error text: redis-py strips a known code (``ERR``) into ``status_code``."""
    msg = str(exc.args[0]) if exc.args else ""
    code = getattr(exc, "status_code", None)
    return f"{code} {msg}" if code else msg


def redis_error(exc: ResponseError | str, args: Sequence[Arg] = ()) -> CommandError:
    """The engine's class for a Redis error text (``classify``: one table for both
    backends), so every surface answers an error alike whichever backend made it. ``args``:
    the command that failed, whose names the text may quote (``_quoted_bytes``). A refusal
    for a passing state of Redis's (CLUSTERDOWN, LOADING, READONLY...) is ``RedisFault``:
    the backend's trouble, not the request's."""
    return classify_reply(_quoted_bytes(exc if isinstance(exc, str) else _text(exc), args))


def _quoted_bytes(text: str, args: Sequence[Arg]) -> str:
    """hiredis decodes an error reply with ``errors="replace"``: a key or group name that is
    not UTF-8, quoted in the text ("No such key 's\ufffd'"), lost its bytes. Each argument
    that is not UTF-8 is put back as the embedded engine quotes it (surrogateescape). UTF-8
    decoding resynchronises on the ASCII quotes around a name, so the argument decoded alone
    with "replace" is exactly what the text holds."""
    if "\ufffd" not in text:
        return text
    for a in args:
        raw = encode(a) if isinstance(a, str) else a
        if not isinstance(raw, bytes):
            continue
        lossy = raw.decode("utf-8", "replace")
        if "\ufffd" in lossy:
            text = text.replace(lossy, raw.decode("utf-8", "surrogateescape"))
    return text


def command_reply(name: str, args: Sequence[Arg], r: Raw) -> CommandReply:
    """A command's raw reply in the command endpoint's shape. redis-py does not say whether a
    string came as a simple string (``+OK``) or a bulk one, and the endpoint must (Upstash's
    base64 encoding leaves simple strings alone): TYPE, PING without a message and every
    top-level ``OK`` (XGROUP CREATE, XSETID, RESTORE, FLUSHDB...) are simple strings, as the
    engine's commands answer them; a bulk ``OK`` at the top level only comes from PING or
    ECHO with that message."""
    if isinstance(r, bytes) and (
        name == "type"
        or (name == "ping" and len(args) == 1)
        or (r == b"OK" and name not in ("ping", "echo"))
    ):
        return Status(decode(r))
    return _json(r)


def _json(r: Raw) -> CommandReply:
    """A raw reply in the command endpoint's JSON shape: bulk and simple strings as text,
    integers, nil as None, arrays as lists. An error inside an array (none of the table's
    commands answers one: EXEC's are read one by one) is raised, as the command's error."""
    if isinstance(r, bytes):
        return decode(r)
    if isinstance(r, list):
        return [_json(x) for x in r]
    if isinstance(r, ResponseError):
        raise redis_error(r)
    integer_or_nil: int | None = r  # what RESP2 has left
    return integer_or_nil


def as_map(raw: Raw) -> dict[str, Raw]:
    it = iter(raw)
    return {decode(k): v for k, v in zip(it, it, strict=True)}


def parse_entry(raw: Raw) -> Entry:
    return Entry(parse_id(raw[0]), tuple(decode(x) for x in raw[1]))


def parse_entries(raw: Raw) -> list[Entry]:
    return [parse_entry(e) for e in raw or []]


def parse_stream_header(m: dict[str, Raw]) -> StreamHeader:
    """The fields XINFO STREAM and XINFO STREAM FULL share."""
    return StreamHeader(
        length=int(m["length"]),
        radix_tree_keys=int(m["radix-tree-keys"]),
        radix_tree_nodes=int(m["radix-tree-nodes"]),
        last_generated_id=parse_id(m["last-generated-id"]),
        max_deleted_entry_id=parse_id(m["max-deleted-entry-id"]),
        entries_added=int(m["entries-added"]),
        recorded_first_entry_id=parse_id(m["recorded-first-entry-id"]),
        idmp=parse_idmp_info(m),
    )


NO_IDMP_STATE = IdmpInfo(DEFAULT_DURATION_S, DEFAULT_MAXSIZE, 0, 0, 0, 0)


def parse_idmp_info(m: dict[str, Raw]) -> IdmpInfo | None:
    """Redis 8.6's IDMP fields of XINFO STREAM; None from an older server, which has none.

    8.6 shows them for every stream; the engine only for a stream with IDMP state. The typed
    reply follows the engine, so REST answers alike on every backend: the fields of a stream
    that never had an IDMP append or XCFGSET (the defaults, every counter 0) are None. One
    case looks the same and is None too: XCFGSET to the defaults before any IDMP append."""
    if "idmp-duration" not in m:
        return None
    info = IdmpInfo(
        idmp_duration=int(m["idmp-duration"]),
        idmp_maxsize=int(m["idmp-maxsize"]),
        pids_tracked=int(m["pids-tracked"]),
        iids_tracked=int(m["iids-tracked"]),
        iids_added=int(m["iids-added"]),
        iids_duplicates=int(m["iids-duplicates"]),
    )
    return None if info == NO_IDMP_STATE else info


def parse_stream_info(raw: Raw) -> StreamInfo:
    """An XINFO STREAM reply."""
    m = as_map(raw)
    first, last = m["first-entry"], m["last-entry"]
    return StreamInfo(
        header=parse_stream_header(m),
        groups=int(m["groups"]),
        first_entry=None if first is None else parse_entry(first),
        last_entry=None if last is None else parse_entry(last),
    )


def opt_int(raw: Raw) -> int | None:
    return None if raw is None else int(raw)


def parse_read(raw: Raw) -> list[StreamRead]:
    out = []
    for key, entries in raw or []:
        items: list[Entry | MissingEntry | ClaimedEntry] = [_read_item(e) for e in entries]
        out.append(StreamRead(decode(key), items))
    return out


def _read_item(e: Raw) -> Entry | MissingEntry | ClaimedEntry:
    """One entry of a read: a deleted one (history), a plain one, or, in a read with CLAIM
    (Redis 8.4), [id, fields, idle, delivery count]."""
    if e[1] is None:
        return MissingEntry(parse_id(e[0]))
    entry = parse_entry(e)
    if len(e) == 4:
        return ClaimedEntry(entry.id, entry.fields, int(e[2]), int(e[3]))
    return entry


def parse_claimed(raw: Raw, justid: bool) -> list[Entry | StreamID]:
    if justid:
        return [parse_id(x) for x in raw]
    return [parse_entry(e) for e in raw if e is not None]


def command_argv(args: list[str]) -> list[Arg]:
    """A command line for redis-py: the command's name as text (its cluster routing looks
    names up as text; only names the table knows get here), arguments as bytes."""
    return [args[0], *(encode(a) for a in args[1:])]


def trim_args(spec: TrimSpec, *, policy: bool = True) -> list[Arg]:
    """A trim clause as XADD / XTRIM take it; ``policy``: with its reference policy (a
    server older than 8.2 takes none)."""
    args: list[Arg] = [spec.strategy.value, "~" if spec.approx else "="]
    args.append(spec.maxlen if spec.strategy is TrimStrategy.MAXLEN else id_arg(spec.minid))
    if spec.approx and spec.limit != DEFAULT_LIMIT:  # none given: Redis's own default
        args += ["LIMIT", spec.limit]
    if policy and spec.policy is not RefPolicy.KEEPREF:
        args.append(spec.policy.value)
    return args


def xadd_args(
    a: XAddArgs, sid: StreamID | None = None, *, nomkstream: bool = True, trim: bool = True
) -> list[Arg]:
    """XADD's arguments after the key; ``sid`` replaces the ID (an ID already decided);
    ``trim`` False: without its trim clause."""
    args: list[Arg] = []
    if a.nomkstream and nomkstream:
        args.append("NOMKSTREAM")
    if a.idmp is not None:  # Redis 8.6; its ID is always ``*``
        if a.idmp.iid is None:
            args += ["IDMPAUTO", encode(a.idmp.producer)]
        else:
            args += ["IDMP", encode(a.idmp.producer), encode(a.idmp.iid)]
    if a.trim is not None and trim:
        args += trim_args(a.trim)
    if sid is not None:
        args.append(id_arg(sid))
    elif a.id is None:
        args.append("*")
    elif a.seq_given:
        args.append(id_arg(a.id))
    else:
        args.append(f"{a.id.ms}-*")
    args += [encode(f) for f in a.fields]
    return args
