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
  reply limit's script (``_GROUP_READ``) does not run (it blocks, or its COUNT is within
  the limit) is checked by a script of its own just before it is sent, so a consumer that
  another front-end adds in between may take the group past its cap;
- RESTORE runs, and when the stream it made holds too many groups or consumers, the key gets
  back what it held before (DUMP and PTTL taken first), so a refused RESTORE changes nothing.

A script answers ``{1, reply}`` when the command ran, else ``{0, ...}`` (refused); the
callers here turn that into the engine's error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from app.engine.errors import CommandError
from app.engine.limits import LISTING_HINT, Limits

Raw = Any  # a RESP reply as redis-py gives it without callbacks
Arg = str | bytes | int

# Lua helpers shared by the scripts: whether ``consumer`` would be one too many in ``group``
# of ``key`` (a key, group or consumer that is not there counts as room: the command then
# answers Redis's own error), and whether name ``a`` sorts before ``b`` byte by byte (Lua's
# ``<`` follows the server's locale).
LUA_HELPERS = """
local function full(key, group, consumer, cap)
  if cap <= 0 or redis.call('TYPE', key)['ok'] ~= 'stream' then return false end
  local ok, rows = pcall(redis.call, 'XINFO', 'CONSUMERS', key, group)
  if not ok or #rows < cap then return false end
  for _, c in ipairs(rows) do
    if c[2] == consumer then return false end
  end
  return true
end
local function before(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = a:byte(i), b:byte(i)
    if x ~= y then return x < y end
  end
  return #a < #b
end
local function field(row, name)
  for j = 1, #row, 2 do
    if row[j] == name then return row[j + 1] end
  end
  return nil
end
"""

# XINFO GROUPS key / XINFO CONSUMERS key group. ARGV: what, limit, start, count[, group].
# count 0: the whole listing, refused ({0}) past the limit; else at most count rows named
# start or after.
LISTING = (
    LUA_HELPERS
    + """
local what, limit, start, count = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local group = ARGV[5]
if count == 0 and limit > 0 and redis.call('TYPE', KEYS[1])['ok'] == 'stream' then
  local n = 0
  if what == 'GROUPS' then
    n = field(redis.call('XINFO', 'STREAM', KEYS[1]), 'groups')
  else
    for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
      if field(g, 'name') == group then n = field(g, 'consumers') end
    end
  end
  if n > limit then return {0} end
end
local rows
if group then
  rows = redis.pcall('XINFO', what, KEYS[1], group)
else
  rows = redis.pcall('XINFO', what, KEYS[1])
end
if type(rows) == 'table' and rows.err then return rows end
if count == 0 then return {1, rows} end
local out = {}
for _, r in ipairs(rows) do
  if #out >= count then break end
  if not before(field(r, 'name'), start) then out[#out + 1] = r end
end
return {1, out}
"""
)

# XINFO STREAM key FULL COUNT ARGV[2]. Refused with {0} when ARGV[3] is 1 and the stream or
# a group's PEL holds more than the limit (ARGV[1]), with {2} when its groups and consumers
# together are more than the limit (COUNT does not bound them).
FULL_INFO = (
    LUA_HELPERS
    + """
local limit, deep = tonumber(ARGV[1]), ARGV[3] == '1'
if redis.call('TYPE', KEYS[1])['ok'] == 'stream' then
  if deep and redis.call('XLEN', KEYS[1]) > limit then return {0} end
  if field(redis.call('XINFO', 'STREAM', KEYS[1]), 'groups') > limit then return {2} end
  local rows = 0
  for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
    if deep and field(g, 'pending') > limit then return {0} end
    rows = rows + 1 + field(g, 'consumers')
  end
  if rows > limit then return {2} end
end
local reply = redis.pcall('XINFO', 'STREAM', KEYS[1], 'FULL', 'COUNT', ARGV[2])
if type(reply) == 'table' and reply.err then return reply end
return {1, reply}
"""
)

# XGROUP CREATE / CREATECONSUMER (ARGV[3..]: the whole command; ARGV[1]: 'groups' or
# 'consumers', ARGV[2]: the cap): run, then undone ({0}) when it made one too many.
NEW_MEMBER = (
    LUA_HELPERS
    + """
local what, cap = ARGV[1], tonumber(ARGV[2])
local reply = redis.pcall(unpack(ARGV, 3))
if type(reply) == 'table' and reply.err then return reply end
if what == 'groups' then
  if field(redis.call('XINFO', 'STREAM', KEYS[1]), 'groups') > cap then
    redis.call('XGROUP', 'DESTROY', KEYS[1], ARGV[6])
    return {0}
  end
elseif reply == 1 then
  for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
    if field(g, 'name') == ARGV[6] and field(g, 'consumers') > cap then
      redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[6], ARGV[7])
      return {0}
    end
  end
end
return {1, reply}
"""
)

# A command naming consumer ARGV[3] of group ARGV[2] on every key: refused ({0}) when one of
# the groups holds ARGV[1] consumers without it; else the command (ARGV[4..]) runs, or, with
# none given, {1} (a check before a blocking read).
ROOM_THEN = (
    LUA_HELPERS
    + """
local cap, group, consumer = tonumber(ARGV[1]), ARGV[2], ARGV[3]
for i = 1, #KEYS do
  if full(KEYS[i], group, consumer, cap) then return {0} end
end
if #ARGV < 4 then return {1} end
local reply = redis.pcall(unpack(ARGV, 4))
if type(reply) == 'table' and reply.err then return reply end
return {1, reply}
"""
)

# RESTORE key ARGV[3..] within the caps (ARGV[1]: groups, ARGV[2]: consumers per group; 0:
# none): {0, groups, most consumers} when refused, the key as it was before.
RESTORE = (
    LUA_HELPERS
    + """
local key, gcap, ccap = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2])
local old, ttl = nil, 0
for i = 5, #ARGV do
  if string.upper(ARGV[i]) == 'REPLACE' and redis.call('EXISTS', key) == 1 then
    old, ttl = redis.call('DUMP', key), redis.call('PTTL', key)
    if ttl < 0 then ttl = 0 end
  end
end
local reply = redis.pcall('RESTORE', key, unpack(ARGV, 3))
if type(reply) == 'table' and reply.err then return reply end
if redis.call('TYPE', key)['ok'] == 'stream' then
  local groups = redis.call('XINFO', 'GROUPS', key)
  local most = 0
  for _, g in ipairs(groups) do most = math.max(most, field(g, 'consumers')) end
  if (gcap > 0 and #groups > gcap) or (ccap > 0 and most > ccap) then
    redis.call('DEL', key)
    if old then redis.call('RESTORE', key, ttl, old) end
    return {0, #groups, most}
  end
end
return {1, reply}
"""
)

Finish = Callable[[Raw], Raw]


def eval_line(script: str, keys: Sequence[Arg], args: Sequence[Arg]) -> list[Arg]:
    return ["EVAL", script, len(keys), *keys, *args]


def ran(refusal: Callable[[Raw], CommandError]) -> Finish:
    """A script's reply: ``{1, reply}`` is the command's; any other is refused with the
    error ``refusal`` makes of it."""

    def finish(raw: Raw) -> Raw:
        if raw[0] != 1:
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
    return eval_line(LISTING, [key], args), ran(lambda _: limits.too_large(command, LISTING_HINT))


def full_info(limits: Limits, key: bytes, count: int) -> tuple[list[Arg], Finish]:
    """XINFO STREAM FULL COUNT ``count``: its groups and consumers always within the reply
    limit; its entries and PELs too when ``count`` could pass it."""
    deep = 1 if limits.past(count) else 0

    def refusal(raw: Raw) -> CommandError:
        hint = LISTING_HINT if raw[0] == 2 else None
        return limits.too_large("xinfo stream full", hint)

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
