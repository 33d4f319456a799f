"""Listings and caps in front of Redis: the engine's numbers and texts (app/engine/limits.py).

redis-server lists every group (XINFO GROUPS, XINFO STREAM FULL) and every consumer (XINFO
CONSUMERS) whatever their number, and has no cap on either. The embedded engine bounds both
(``max_reply_entries``, ``max_stream_groups``, ``max_group_consumers``); so does this front-end,
with the same limits and texts, through Lua scripts that count first and act after, in one
step on the key's slot:

- a listing is counted from a small reply (XINFO STREAM's ``groups``, XINFO GROUPS' row of
  the group) before it is built; past the limit nothing is sent back but a refusal. A page of
  names (REST) is cut in the script: the front-end never takes in more than the page;
- XGROUP CREATE / CREATECONSUMER run, and are undone in the same script when they took the
  stream past its cap (so Redis's own errors keep their order: key, ID, BUSYGROUP);
- XCLAIM, XAUTOCLAIM and XREADGROUP naming a consumer the group does not hold are refused
  when the group holds its most, before they run. The exception: an XREADGROUP that the
  reply limit's script (``scripts.GROUP_READ``) does not run (it blocks, or its COUNT is within
  the limit) is checked by a script of its own just before it is sent, so a consumer that
  another front-end adds in between may take the group past its cap;
- RESTORE runs, and when the stream it made holds too many groups or consumers, the key gets
  back what it held before (DUMP and PTTL taken first), so a refused RESTORE changes nothing.

A script answers ``{1, reply}`` when the command ran, else ``{0, ...}`` (refused); the
callers here turn that into the engine's error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from app.backends.redis.lua import Reply
from app.backends.redis.parse import Arg, Raw
from app.backends.redis.scripts import (
    FULL_INFO,
    LISTING,
    NEW_MEMBER,
    RESTORE,
    ROOM_THEN,
    eval_line,
)
from app.engine.errors import CommandError
from app.engine.limits import Limits

Finish = Callable[[Raw], Raw]


def ran(refusal: Callable[[Raw], CommandError]) -> Finish:
    """A script's reply: ``{1, reply}`` is the command's; any other is refused with the
    error ``refusal`` makes of it."""

    def finish(raw: Raw) -> Raw:
        if raw[0] != Reply.RAN:
            raise refusal(raw)
        return raw[1] if len(raw) > 1 else None

    return finish


def listing(
    limits: Limits, key: bytes, group: bytes | None, start: bytes, count: int
) -> tuple[list[Arg], Finish]:
    """XINFO GROUPS (``group`` None) or CONSUMERS: whole (``count`` 0) within the reply
    limit, or one page of at most ``count`` rows from ``start`` on."""
    what = "GROUPS" if group is None else "CONSUMERS"
    args: list[Arg] = [what, limits.reply_entries, start, count]
    if group is not None:
        args.append(group)
    command = f"xinfo {what.lower()}"
    return eval_line(LISTING, [key], args), ran(lambda _: limits.listing_too_large(command))


def full_info(limits: Limits, key: bytes, count: int) -> tuple[list[Arg], Finish]:
    """XINFO STREAM FULL COUNT ``count``: its groups and consumers always within the reply
    limit; its entries and PELs too when ``count`` could pass it."""
    deep = 1 if limits.past(count) else 0

    def refusal(raw: Raw) -> CommandError:
        if raw[0] == Reply.TOO_MANY:
            return limits.listing_too_large("xinfo stream full")
        return limits.too_large("xinfo stream full")

    return eval_line(FULL_INFO, [key], [limits.reply_entries, count, deep]), ran(refusal)


def new_group(limits: Limits, key: str, line: list[Arg]) -> tuple[list[Arg], Finish]:
    """XGROUP CREATE (``line``, encoded) within ``max_stream_groups``."""
    args: list[Arg] = ["groups", limits.stream_groups, *line]
    return eval_line(NEW_MEMBER, [line[2]], args), ran(lambda _: limits.too_many_groups(key))


def new_consumer(limits: Limits, group: str, line: list[Arg]) -> tuple[list[Arg], Finish]:
    """XGROUP CREATECONSUMER (``line``, encoded) within ``max_group_consumers``."""
    args: list[Arg] = ["consumers", limits.group_consumers, *line]
    return eval_line(NEW_MEMBER, [line[2]], args), ran(lambda _: limits.too_many_consumers(group))


def room_then(
    limits: Limits, keys: Sequence[Arg], group: str, consumer: Arg, line: list[Arg]
) -> tuple[list[Arg], Finish]:
    """``line`` (XCLAIM, XAUTOCLAIM, XREADGROUP; empty: only the check) unless ``consumer``
    would be one too many in ``group`` of one of ``keys``."""
    args: list[Arg] = [limits.group_consumers, group.encode("utf-8", "surrogateescape")]
    args += [consumer, *line]
    return eval_line(ROOM_THEN, keys, args), ran(lambda _: limits.too_many_consumers(group))


def restore(limits: Limits, line: list[Arg]) -> tuple[list[Arg], Finish]:
    """RESTORE (``line``, encoded) within the group and consumer caps."""

    def refusal(raw: Raw) -> CommandError:
        try:
            limits.check_restored(int(raw[1]), int(raw[2]))
        except CommandError as e:
            return e
        return CommandError.err("RESTORE refused")  # not reached: the script counted alike

    args: list[Arg] = [limits.stream_groups, limits.group_consumers, *line[2:]]
    return eval_line(RESTORE, [line[1]], args), ran(refusal)
