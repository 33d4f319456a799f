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

# A batch appends only onto the state it was planned on: the key missing (ARGV[1] empty) or
# a stream whose last ID is ARGV[1]; else 0, nothing done. APPEND_DELREF shares it.
_APPEND_GUARD = """
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
"""
_APPEND_ENTRIES = """
for j = 1, tonumber(ARGV[2]) do
  local n = tonumber(ARGV[i])
  out[j] = redis.call('XADD', key, unpack(ARGV, i + 1, i + n))
  i = i + n + 1
end
"""

APPEND = _APPEND_GUARD + "local out = {}\nlocal i = 3\n" + _APPEND_ENTRIES + "return out\n"

# A batch with IDMP entries (Redis 8.6): each entry's own XADD (IDMP takes only ``*``, so the
# IDs are not decided ahead), after the same guard. ARGV[3]: the last millisecond of the
# server's clock at which the batch's checks, made ahead, still hold ('' : at any time);
# past it, 0 and nothing done, as when the stream moved.
APPEND_IDMP = (
    _APPEND_GUARD
    + """
if ARGV[3] ~= '' then
  local now = redis.call('TIME')
  if tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) > tonumber(ARGV[3]) then
    return 0
  end
end
local out = {}
local i = 4
"""
    + _APPEND_ENTRIES
    + "return out\n"
)

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


# --- the commands Redis added after 7.0, on an older server (newer.py) ---------------------
# Each is one script on the key's slot, so it is as atomic as the command it stands for. A
# refusal the caller knows the error of is a code: {2} (an option error found by the
# engine's parser, answered after the key's type as the command does), {3} (an invalid
# ID, answered after a missing key's reply), {0} (past the reply limit), {5} (a consumer
# too many), {4} (a ``~`` trim whose LIMIT could cut it: not exact here).
NEWER_HELPERS = (
    LUA_HELPERS
    + f"local WRONGTYPE = '{WRONGTYPE}'"
    + """
local function stream_type(key)
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'none' and t ~= 'stream' then return nil end
  return t
end
local function num_before(a, b)
  if #a ~= #b then return #a < #b end
  return before(a, b)
end
local function id_before(a, b)
  local da, db = string.find(a, '-', 1, true), string.find(b, '-', 1, true)
  local ma, mb = string.sub(a, 1, da - 1), string.sub(b, 1, db - 1)
  if ma ~= mb then return num_before(ma, mb) end
  return num_before(string.sub(a, da + 1), string.sub(b, db + 1))
end
local function find_group(groups, name)
  for _, g in ipairs(groups) do
    if field(g, 'name') == name then return g end
  end
  return nil
end
local function exists(key, id)
  return #redis.call('XRANGE', key, id, id) > 0
end
local function referenced(key, groups, id)
  for _, g in ipairs(groups) do
    if id_before(field(g, 'last-delivered-id'), id) then return true end
    if #redis.call('XPENDING', key, field(g, 'name'), id, id, 1) > 0 then return true end
  end
  return false
end
local function remove(key, groups, id, policy)
  if policy == 'ACKED' then
    -- redis-server 8.6 asks the groups first: an ID after a group's last-delivered-id is
    -- kept (2) even when the stream does not hold it
    if referenced(key, groups, id) then return 2 end
    if not exists(key, id) then return -1 end
  end
  local n = redis.call('XDEL', key, id)
  if policy == 'DELREF' then
    for _, g in ipairs(groups) do redis.call('XACK', key, field(g, 'name'), id) end
  end
  if n == 1 then return 1 end
  return -1
end
local function ack_all(key, groups, ids)
  for _, g in ipairs(groups) do
    for i = 1, #ids, 1000 do
      redis.call('XACK', key, field(g, 'name'), unpack(ids, i, math.min(i + 999, #ids)))
    end
  end
end
-- A DELREF trim: {strategy, threshold, LIMIT of a `~` clause (0: exact), the most entries
-- a node holds}. It removes the oldest live entries (Redis 8.2 trims exactly under DELREF):
-- an exact XTRIM removes them, then XACK drops them from every group. ``delref_fits``:
-- whether a `~` LIMIT cannot cut it short (it stops before a whole node that would pass
-- it), ``adding`` entries to be appended first.
local function delref_victims(key, trim)
  if trim[1] == 'MAXLEN' then
    local n = redis.call('XLEN', key) - tonumber(trim[2])
    if n <= 0 then return {} end
    return redis.call('XRANGE', key, '-', '+', 'COUNT', n)
  end
  if trim[2] == '0-0' then return {} end
  return redis.call('XRANGE', key, '-', '(' .. trim[2])
end
local function delref_fits(key, trim, adding)
  if trim[3] <= 0 or redis.call('EXISTS', key) == 0 then return true end
  local upper
  if trim[1] == 'MAXLEN' then
    upper = redis.call('XLEN', key) + adding - tonumber(trim[2])
  else
    upper = #delref_victims(key, trim) + adding
  end
  return upper + trim[4] <= trim[3]
end
local function delref_trim(key, trim)
  local ids = {}
  for _, e in ipairs(delref_victims(key, trim)) do ids[#ids + 1] = e[1] end
  if #ids == 0 then return 0 end
  local n = redis.call('XTRIM', key, trim[1], '=', trim[2])
  ack_all(key, redis.call('XINFO', 'GROUPS', key), ids)
  return n
end
local function count_text(c)
  if c >= 9.2e18 then return '9223372036854775807' end
  return string.format('%d', c)
end
"""
)

# XDELEX (KEYS[1]) under policy ARGV[1]; ARGV[2] / ARGV[3]: '1' when the parser found an
# option error / an invalid ID; ARGV[4..]: the IDs. XACKDEL: the same with the group first.
XDELEX = (
    NEWER_HELPERS
    + """
local key, policy = KEYS[1], ARGV[1]
local t = stream_type(key)
if not t then return redis.error_reply(WRONGTYPE) end
if ARGV[2] == '1' then return {2} end
local out = {}
if t == 'none' then
  for i = 4, #ARGV do out[#out + 1] = -1 end
  return {1, out}
end
if ARGV[3] == '1' then return {3} end
local groups = redis.call('XINFO', 'GROUPS', key)
for i = 4, #ARGV do out[#out + 1] = remove(key, groups, ARGV[i], policy) end
return {1, out}
"""
)

XACKDEL = (
    NEWER_HELPERS
    + """
local key, group, policy = KEYS[1], ARGV[1], ARGV[2]
local t = stream_type(key)
if not t then return redis.error_reply(WRONGTYPE) end
if ARGV[3] == '1' then return {2} end
local out = {}
local groups = {}
if t == 'stream' then
  if ARGV[4] == '1' then return {3} end
  groups = redis.call('XINFO', 'GROUPS', key)
end
local found = find_group(groups, group)
for i = 5, #ARGV do
  local id = ARGV[i]
  if not found or redis.call('XACK', key, group, id) == 0 then
    out[#out + 1] = -1
  else
    local code = remove(key, groups, id, policy)
    if code == -1 then code = 1 end
    out[#out + 1] = code
  end
end
return {1, out}
"""
)

# XTRIM / XADD with DELREF (KEYS[1]): ARGV[1] 'xtrim' or 'xadd', ARGV[2..5] the trim
# (``DELREF_TRIM``); XADD's words after the key (its trim clause left out) from ARGV[6].
TRIM_DELREF = (
    NEWER_HELPERS
    + """
local key, mode = KEYS[1], ARGV[1]
local trim = {ARGV[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])}
local t = stream_type(key)
if not t then return redis.error_reply(WRONGTYPE) end
if mode == 'xtrim' and t == 'none' then return {1, 0} end
if not delref_fits(key, trim, mode == 'xadd' and 1 or 0) then return {4} end
if mode == 'xtrim' then return {1, delref_trim(key, trim)} end
local reply = redis.pcall('XADD', key, unpack(ARGV, 6))
if type(reply) == 'table' and reply.err then return reply end
if not reply then return {1, false} end
delref_trim(key, trim)
return {1, reply}
"""
)

# XREADGROUP GROUP ARGV[2] ARGV[3] [COUNT ARGV[5]] [NOACK] CLAIM ARGV[4] STREAMS KEYS ids,
# as Redis 8.4 serves it, over KEYS of one slot. ARGV[1]: 'check' (only the errors: each
# key's group, then the parser's ID error when ARGV[9 + i] is '1') or 'read'; ARGV[6]: NOACK
# ('1'); ARGV[7]: max_group_consumers (0: none); ARGV[8]: max_reply_entries (0: none); then
# the IDs, then the error flags. Per key: its idle pending entries (min-idle-time ARGV[4])
# longest idle first (ties by ID), those gone from the stream left pending, claimed with
# XCLAIM (idle and count from before), then new entries (idle 0, count 0), COUNT covering
# both. With nothing to answer, {1, false, ms}: when the next pending entry turns idle
# enough (-1: none is pending), for a blocked read's wait.
CLAIM_READ = (
    NEWER_HELPERS
    + """
local mode, group, consumer = ARGV[1], ARGV[2], ARGV[3]
local min_idle, count, noack = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6] == '1'
local ccap, rcap = tonumber(ARGV[7]), tonumber(ARGV[8])
local nkeys = #KEYS
local infos = {}
for i = 1, nkeys do
  local key = KEYS[i]
  local t = stream_type(key)
  if not t then return redis.error_reply(WRONGTYPE) end
  local g = nil
  if t == 'stream' then g = find_group(redis.call('XINFO', 'GROUPS', key), group) end
  if not g then
    return redis.error_reply("NOGROUP No such key '" .. key .. "' or consumer group '" ..
      group .. "' in XREADGROUP with GROUP option")
  end
  if ARGV[8 + nkeys + i] == '1' then return {3, i} end
  infos[i] = g
end
if mode == 'check' then return {1} end
if rcap > 0 then
  local total = 0
  for i = 1, nkeys do
    local left = rcap - total
    if left <= 0 then break end
    if count > 0 and count < left then left = count end
    local key, id = KEYS[i], ARGV[8 + i]
    local rows
    if id == '>' then
      rows = redis.call('XRANGE', key, '(' .. field(infos[i], 'last-delivered-id'), '+',
        'COUNT', left)
    else
      local ok
      ok, rows = pcall(redis.call, 'XPENDING', key, group, '(' .. id, '+', left, consumer)
      if not ok then rows = {} end
    end
    total = total + #rows
  end
  if total >= rcap then return {0} end
end
for i = 1, nkeys do
  if full(KEYS[i], group, consumer, ccap) then return {5} end
end
local now = redis.call('TIME')
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local bound = count
if bound == 0 then bound = rcap end
local out = {}
for i = 1, nkeys do
  local key, id = KEYS[i], ARGV[8 + i]
  local rows = {}
  local claims = ARGV[8 + 2 * nkeys + i] == '1'
  if id == '>' then
    local npel = field(infos[i], 'pending')
    if claims and npel > 0 then
      local pel = redis.call('XPENDING', key, group, 'IDLE', ARGV[4], '-', '+', npel)
      table.sort(pel, function(a, b)
        if a[3] ~= b[3] then return a[3] > b[3] end
        return id_before(a[1], b[1])
      end)
      for _, p in ipairs(pel) do
        if bound > 0 and #rows >= bound then break end
        if exists(key, p[1]) then
          local idle = p[3]
          if p[2] == '' and now_ms - idle < 86400000 then idle = -1 end
          local e = redis.call('XCLAIM', key, group, consumer, 0, p[1])[1]
          rows[#rows + 1] = {e[1], e[2], idle, count_text(p[4])}
        end
      end
    end
    local left = 0
    if count > 0 then left = count - #rows end
    if count == 0 or left > 0 then
      local argv = {'XREADGROUP', 'GROUP', group, consumer}
      if left > 0 then
        argv[#argv + 1] = 'COUNT'
        argv[#argv + 1] = left
      end
      if noack then argv[#argv + 1] = 'NOACK' end
      argv[#argv + 1] = 'STREAMS'
      argv[#argv + 1] = key
      argv[#argv + 1] = '>'
      local fresh = redis.call(unpack(argv))
      if fresh then
        for _, e in ipairs(fresh[1][2]) do
          if claims then rows[#rows + 1] = {e[1], e[2], 0, '0'} else rows[#rows + 1] = e end
        end
      end
    end
    if #rows > 0 then out[#out + 1] = {key, rows} end
  else
    local argv = {'XREADGROUP', 'GROUP', group, consumer}
    if count > 0 then
      argv[#argv + 1] = 'COUNT'
      argv[#argv + 1] = count
    end
    argv[#argv + 1] = 'STREAMS'
    argv[#argv + 1] = key
    argv[#argv + 1] = id
    local history = redis.call(unpack(argv))
    if history then out[#out + 1] = history[1] end
  end
end
if #out > 0 then return {1, out} end
local wait = -1
for i = 1, nkeys do
  if ARGV[8 + 2 * nkeys + i] == '1' and field(infos[i], 'pending') > 0 then
    local pel = redis.call('XPENDING', KEYS[i], group, '-', '+', field(infos[i], 'pending'))
    for _, p in ipairs(pel) do
      local ms = min_idle - p[3]
      if ms < 0 then ms = 0 end
      if ms > 1e12 then ms = 1e12 end
      if wait < 0 or ms < wait then wait = ms end
    end
  end
end
return {1, false, wait}
"""
)

# APPEND (above) whose entries all carry one DELREF trim (ARGV[3..6], as ``delref_trim``
# takes it; the entries from ARGV[7]), on a server older than 8.2: trimming once after the
# last entry removes what trimming after each would (the oldest live entries past the
# threshold). -4 when a `~` LIMIT could cut the trim short (not exact here).
APPEND_DELREF = (
    NEWER_HELPERS
    + _APPEND_GUARD
    + """
local trim = {ARGV[3], ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[6])}
if not delref_fits(key, trim, tonumber(ARGV[2])) then return -4 end
local out = {}
local i = 7
"""
    + _APPEND_ENTRIES
    + """delref_trim(key, trim)
return out
"""
)
