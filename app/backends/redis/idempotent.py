"""Idempotency-Key in front of Redis: the kept response and the replies of what a request
wrote live in Redis, written by the same script as the write.

A request's record is a hash (``xs:idem:{tag}:<sha1 of the ticket's name>``) that expires
with the window: its fingerprint, the lease of the attempt running it, the reply of each
write it made, and once it answered, its response. In a cluster the tag puts the record in
the slot of a key the request names (``Ticket.anchor``), so one script reaches both.

- ``BEGIN`` (one script): a kept response is replayed; another fingerprint is ``KeyReused``;
  a live lease of another attempt is ``StillRunning``; else this attempt takes the lease and
  gets the replies an earlier attempt's writes got (it died, or answered 5xx).
- Each write the request sends inside (``Router.write`` / ``sequence``: a command, one of
  our scripts, a MULTI block or a pipeline) runs as one composed script (``compose``) that
  checks the lease is still this attempt's, runs the lines (each as ``pcall``, as EXEC runs
  them) and stores their replies in the record, atomically. A retry that meets those
  replies gets them back instead of running the lines again: the same request builds the
  same response from them, so a front-end killed after Redis applied a write, or a write
  answered 503 after it was applied, is answered once with the first attempt's result.
- ``FINISH`` stores the response and frees the lease (or only frees it, keeping the replies,
  when the response was the service's trouble).

Requests whose writes span slots cannot be kept in a cluster: the script is refused there
(Redis: a script may only reach its own slot), as a MULTI across slots is.
"""

from __future__ import annotations

import contextvars
import hashlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from redis.crc import key_slot
from redis.exceptions import ResponseError

from app.backends.idempotency import KeyReused, Run, StillRunning, Ticket
from app.backends.redis import lua
from app.backends.redis.parse import Arg, Raw, encode
from app.engine.commands.table import COMMANDS
from app.engine.errors import WrongArgument

# ``Router.call_plain``: one command routed by a key, never kept.
Call = Callable[..., Awaitable[Raw]]

LEASE_MS = 10_000
# Lua 5.1 passes at most about 8,000 values to a call (``unpack``: LUAI_MAXCSTACK).
MAX_LINE_ARGS = 7_900  # an attempt that holds the record this long without a word is dead

_SERIALIZE = lua.include("serialize")  # lua/includes/serialize.lua

BEGIN = lua.script("begin")  # lua/begin.lua

FINISH = lua.script("finish")  # lua/finish.lua

_DRIVER = lua.include("driver")  # lua/includes/driver.lua


def record_key(ticket: Ticket, cluster: bool) -> str:
    digest = hashlib.sha1(ticket.name.encode("utf-8", "surrogateescape")).hexdigest()
    if not cluster:
        return f"xs:idem:{digest}"
    slot = key_slot(encode(ticket.anchor or ticket.name))
    return f"xs:idem:{{{slot_tag(slot)}}}:{digest}"


_TAGS: list[str] = []


def slot_tag(slot: int) -> str:
    """A short text whose hash slot is ``slot`` (the table is built once, on first use)."""
    if not _TAGS:
        table: list[str | None] = [None] * 16384
        left, i = 16384, 0
        while left:
            text = format(i, "x")
            s = key_slot(text.encode())
            if table[s] is None:
                table[s] = text
                left -= 1
            i += 1
        _TAGS.extend(t for t in table if t is not None)
    return _TAGS[slot]


def compose(lines: Sequence[Sequence[Arg]]) -> tuple[str, list[Arg], list[Arg]]:
    """The script, keys and arguments (after the record and the fixed three) that run
    ``lines`` (commands, or ``EVAL source numkeys keys... args...``) in one script."""
    sources: list[str] = []
    keys: list[Arg] = []
    args: list[Arg] = []
    for line in lines:
        if len(line) > MAX_LINE_ARGS:
            raise WrongArgument(
                f"ERR a command of more than {MAX_LINE_ARGS} arguments cannot run under an"
                " Idempotency-Key in front of Redis (a Lua script calls it): split it"
            )
        if _name(line[0]) == "eval":
            source = line[1]
            assert isinstance(source, str)
            if source not in sources:
                sources.append(source)
            nk = int(line[2])
            line_keys, line_args = list(line[3 : 3 + nk]), list(line[3 + nk :])
            keys += line_keys
            args += ["s", sources.index(source) + 1, nk, len(line_args), *line_keys, *line_args]
        else:
            args += ["c", len(line), *line]
    inlined = "".join(
        f"F[{n}] = function(KEYS, ARGV)\n{src}\nend\n" for n, src in enumerate(sources, 1)
    )
    return "local F = {}\n" + inlined + _SERIALIZE + _DRIVER, keys, args


def writes(line: Sequence[Arg]) -> bool:
    """Whether a line sent through ``Router.call`` changes state (a script counts: ours
    are run by a write or a read that writes)."""
    name = _name(line[0]) if line else ""
    if name == "eval":
        return True
    cmd = COMMANDS.get(name)
    if cmd is None:
        return False
    if cmd.subcommands and len(line) > 1:
        cmd = cmd.subcommands.get(_name(line[1]), cmd)
    return cmd.writes


def _name(arg: Arg) -> str:
    if isinstance(arg, bytes):
        return arg.decode("latin-1").lower()
    return str(arg).lower()


def parse_packed(data: bytes) -> Raw:
    """A value ``enc`` wrote, as redis-py's parser gives the same reply."""
    value, end = _parse(data, 0)
    if end != len(data):
        raise ValueError("trailing bytes in a kept reply")
    return value


def _parse(data: bytes, i: int) -> tuple[Raw, int]:
    tag = data[i : i + 1]
    if tag == b"_":
        return None, i + 1
    if tag == b":":
        end = data.index(b";", i)
        return int(data[i + 1 : end]), end + 1
    colon = data.index(b":", i)
    n = int(data[i + 1 : colon])
    start = colon + 1
    if tag == b"*":
        items = []
        j = start
        for _ in range(n):
            item, j = _parse(data, j)
            items.append(item)
        return items, j
    text = data[start : start + n]
    if tag == b"-":
        return ResponseError(text.decode("utf-8", "replace")), start + n
    return text, start + n  # '$' bulk, '+' status: redis-py gives both as bytes


@dataclass(slots=True)
class Attempt:
    """This request's turn at its record: the lease token, the replies an earlier attempt's
    writes got (by index), and how many writes this one has made."""

    record: str
    token: str
    lease_ms: int
    earlier: dict[int, bytes] = field(default_factory=dict)
    writes: int = 0

    def line_args(self, index: int) -> list[Arg]:
        return [self.token, index, self.lease_ms]


_ATTEMPT: contextvars.ContextVar[Attempt | None] = contextvars.ContextVar(
    "xstreams_idempotent_attempt", default=None
)


def attempt() -> Attempt | None:
    return _ATTEMPT.get()


def next_write(lines: Sequence[Sequence[Arg]]) -> tuple[list[Raw] | None, list[Arg]]:
    """The current attempt's next write: the replies an earlier attempt's same write got
    (send nothing), or the composed script's line to send (on the record's node)."""
    current = _ATTEMPT.get()
    assert current is not None
    index = current.writes
    current.writes += 1
    earlier = current.earlier.get(index)
    if earlier is not None:
        replies = parse_packed(earlier)
        assert isinstance(replies, list)
        return replies, []
    script, keys, args = compose(lines)
    line: list[Arg] = ["EVAL", script, 1 + len(keys), encode(current.record), *keys]
    return None, [*line, *current.line_args(index), *args]


LEASE_LOST = "ERR the lease of this Idempotency-Key passed to another attempt"


@asynccontextmanager
async def idempotent(
    call: Call, cluster: bool, ticket: Ticket, window_ms: int, lease_ms: int = LEASE_MS
) -> AsyncIterator[Run]:
    """``Backend.idempotent`` in front of Redis (module docstring): ``call`` sends one
    command (``Router.call_plain``), to a cluster when ``cluster``."""
    record = record_key(ticket, cluster)
    token = os.urandom(12).hex()
    begun = await call(
        record,
        "EVAL",
        BEGIN,
        1,
        encode(record),
        ticket.fingerprint,
        token,
        lease_ms,
        window_ms,
    )
    state = int(begun[0])
    if state == 1:
        yield Run(stored=bytes(begun[1]))
        return
    if state == 2:
        raise KeyReused
    if state == 3:
        raise StillRunning
    earlier = {int(begun[i]): bytes(begun[i + 1]) for i in range(1, len(begun), 2)}
    current = Attempt(record, token, lease_ms, earlier)
    run = Run(resumed=bool(earlier))
    reset = _ATTEMPT.set(current)
    try:
        yield run
    finally:
        _ATTEMPT.reset(reset)
        await call(record, "EVAL", FINISH, 1, encode(record), token, run.kept if run.kept else b"")
