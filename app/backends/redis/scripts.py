"""The Lua scripts the Redis backend sends, in one place.

A script decides nothing: it only makes a sequence of Redis commands atomic on one key's slot
(count first, then act), so a refusal changes nothing. The engine's numbers and texts stay in
app/engine/limits.py; callers pass them in as ARGV.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.backends.redis.parse import Arg, encode
from app.engine.errors import WRONGTYPE

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


def eval_line(script: str, keys: Sequence[Arg], args: Sequence[Arg]) -> list[Arg]:
    return ["EVAL", script, len(keys), *keys, *args]


# Decide nothing here: these scripts only make a sequence of Redis commands atomic.
PROBE = """
local t = redis.call('TYPE', KEYS[1])['ok']
local now = redis.call('TIME')
if t == 'none' then return {'', now[1], now[2]} end
if t ~= 'stream' then return {'WRONGTYPE', now[1], now[2]} end
local info = redis.call('XINFO', 'STREAM', KEYS[1])
for i = 1, #info, 2 do
  if info[i] == 'last-generated-id' then return {info[i + 1], now[1], now[2]} end
end
return redis.error_reply('ERR no last-generated-id in XINFO STREAM')
"""

APPEND = """
local key = KEYS[1]
local t = redis.call('TYPE', key)['ok']
if ARGV[1] == '' then
  if t ~= 'none' then return 0 end
else
  if t ~= 'stream' then return 0 end
  local info = redis.call('XINFO', 'STREAM', key)
  for i = 1, #info, 2 do
    if info[i] == 'last-generated-id' and info[i + 1] ~= ARGV[1] then return 0 end
  end
end
local out = {}
local i = 3
for j = 1, tonumber(ARGV[2]) do
  local n = tonumber(ARGV[i])
  out[j] = redis.call('XADD', key, unpack(ARGV, i + 1, i + n))
  i = i + n + 1
end
return out
"""

DELETE_STREAM = f"""
local t = redis.call('TYPE', KEYS[1])['ok']
if t == 'none' then return 0 end
if t ~= 'stream' then return redis.error_reply('{WRONGTYPE}') end
return redis.call('DEL', KEYS[1])
"""

# Limits (see limits.py): count at most ARGV[2] entries the read would answer
# (KEYS of one slot; ``>``: after the group's last-delivered-id; an ID: the consumer's
# pending after it), then, unless counting only, run XREADGROUP when they are fewer. A key,
# group or ID that is not there or not valid counts 0: XREADGROUP then gives Redis's error.
# ARGV: mode ('count' | 'read'), cap, group, consumer, n, the n words of XREADGROUP's head,
# the IDs, and max_group_consumers (0: none). Replies {1, XREADGROUP's reply}, {0, how many}
# when refused, or how many ('count'); {2} (-1 counting) when the consumer would be one too
# many in one of the groups.
GROUP_READ = (
    LUA_HELPERS
    + """
local mode, cap, group, consumer = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
local nhead = tonumber(ARGV[5])
local ccap = tonumber(ARGV[6 + nhead + #KEYS] or '0')
for i = 1, #KEYS do
  if full(KEYS[i], group, consumer, ccap) then
    if mode == 'count' then return -1 end
    return {2}
  end
end
local total = 0
for i = 1, #KEYS do
  local left = cap - total
  if left <= 0 then break end
  local key, id = KEYS[i], ARGV[5 + nhead + i]
  local ok, rows = false, nil
  if id == '>' then
    local found, groups = pcall(redis.call, 'XINFO', 'GROUPS', key)
    if found then
      for _, g in ipairs(groups) do
        local name, last = nil, nil
        for j = 1, #g, 2 do
          if g[j] == 'name' then name = g[j + 1] end
          if g[j] == 'last-delivered-id' then last = g[j + 1] end
        end
        if name == group and last then
          ok, rows = pcall(redis.call, 'XRANGE', key, '(' .. last, '+', 'COUNT', left)
        end
      end
    end
  else
    ok, rows = pcall(redis.call, 'XPENDING', key, group, '(' .. id, '+', left, consumer)
  end
  if ok then total = total + #rows end
end
if mode == 'count' then return total end
if total >= cap then return {0, total} end
local argv = {}
for j = 1, nhead do argv[j] = ARGV[5 + j] end
argv[#argv + 1] = 'STREAMS'
for i = 1, #KEYS do argv[#argv + 1] = KEYS[i] end
for i = 1, #KEYS do argv[#argv + 1] = ARGV[5 + nhead + i] end
local reply = redis.pcall(unpack(argv))
if type(reply) == 'table' and reply.err then return reply end
return {1, reply}
"""
)

# XAUTOCLAIM with a COUNT past the limit (ARGV[1]): refused ({0}) when more than the limit
# are pending from its start ID on, or ({2}) when its consumer would be one more than
# ARGV[2] in the group (0: no cap). ARGV[3..]: the command's words after the key.
AUTOCLAIM = (
    LUA_HELPERS
    + """
local limit = tonumber(ARGV[1])
if full(KEYS[1], ARGV[3], ARGV[4], tonumber(ARGV[2])) then return {2} end
local ok, rows = pcall(redis.call, 'XPENDING', KEYS[1], ARGV[3], ARGV[6], '+', limit + 1)
if ok and #rows > limit then return {0} end
local reply = redis.pcall('XAUTOCLAIM', KEYS[1], unpack(ARGV, 3))
if type(reply) == 'table' and reply.err then return reply end
return {1, reply}
"""
)


def eval_keys(script: str, keys: list[str], args: Sequence[Arg]) -> list[Arg]:
    """``eval_line`` for keys given as text."""
    return eval_line(script, [encode(k) for k in keys], args)
