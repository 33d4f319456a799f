"""The Lua scripts of delivery policies and retention (delivery.py says when each runs).

A group's policy lives in a hash in its stream's slot (``delivery.policy_key``), so one
script reads it and moves entries atomically: several front-ends never move an entry twice.
The hash's fields, by group name ``g``: ``p:g`` the policy (``DeliveryPolicy.as_json``),
``r:g`` / ``d:g`` its counters (redelivered, dead-lettered), ``n:g`` the last release
number, ``o:g\\0id`` for a released entry: ``seq\\0consumer`` (its release's number, for
FIFO among releases of one millisecond, and the consumer that held it); and the group's
webhooks (``webhooks.py``: ``w:<length>:g<name>``), which FORGET_GROUP removes too. The
rules mirror app/engine/delivery.py, which defines them.
"""

from __future__ import annotations

from app.backends.redis.scripts import NEWER_HELPERS
from app.engine.dead_letters import DEAD_LETTER_FIELDS, DEAD_LETTER_HOPS, MAX_DEAD_LETTER_HOPS

_DL_NAMES = "{" + ", ".join(f"'{n}'" for n in DEAD_LETTER_FIELDS) + "}"

# A dead letter's tail (app/engine/dead_letters.py ``dead_letter_tail``, word for word): of
# the flat fields F, how many come before it, and its hop count; nil when F has none.
DL_TAIL = (
    f"local DL_NAMES = {_DL_NAMES}\n"
    + f"local DL_HOPS, MAX_HOPS = '{DEAD_LETTER_HOPS}', {MAX_DEAD_LETTER_HOPS}\n"
    + """
local function dl_tail(f)
  local n, hops = #f, 1
  if n >= 2 and f[n - 1] == DL_HOPS and #f[n] <= 15 and string.match(f[n], '^[1-9]%d*$') then
    hops = tonumber(f[n])
    n = n - 2
  end
  local m = n - 2 * #DL_NAMES
  if m < 0 then return nil end
  for j = 1, #DL_NAMES do
    if f[m + 2 * j - 1] ~= DL_NAMES[j] then return nil end
  end
  return m, hops
end
"""
)

# Helpers over NEWER_HELPERS: the policy's rules (``backoff``, ``exhausted``), the
# candidates of a read, one move (claim or dead-letter).
POLICY_HELPERS = (
    NEWER_HELPERS
    + DL_TAIL
    + """
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function policy_of(pkey, group)
  local raw = redis.call('HGET', pkey, 'p:' .. group)
  if not raw then return nil end
  return cjson.decode(raw)
end
local function backoff(p, c)
  local steps = p.backoff_ms
  if type(steps) ~= 'table' or #steps == 0 then return 0 end
  local i = c - 1
  if i < 0 then i = 0 end
  if i > #steps - 1 then i = #steps - 1 end
  return steps[i + 1]
end
local function exhausted(p, c)
  if type(p.dead_letter_stream) ~= 'string' then return nil end
  if c >= 9.2e18 then return 'fatal' end
  if type(p.max_deliveries) == 'number' and c >= p.max_deliveries then
    return 'max_deliveries'
  end
  return nil
end
-- How long after its last delivery an entry is due: its back-off (none for one the policy
-- dead-letters: no delivery follows), and for an owned one at least the timeout.
local function need(p, released, c)
  local b = backoff(p, c)
  if exhausted(p, c) then b = 0 end
  if released then return b end
  local vt = p.visibility_timeout_ms
  if type(vt) == 'number' and vt > b then return vt end
  return b
end
local function release_field(group, id) return 'o:' .. group .. '\\0' .. id end
local function release_of(pkey, group, id)
  local v = redis.call('HGET', pkey, release_field(group, id))
  if not v then return 0, '' end
  local z = string.find(v, '\\0', 1, true)
  return tonumber(string.sub(v, 1, z - 1)), string.sub(v, z + 1)
end
-- The candidates of a read, in order: released entries (consumer ''), oldest release
-- first (ties: release number, then ID); then, with a visibility timeout, owned entries
-- idle at least that long, longest idle first (ties by ID). Each {row, released, seq}.
local function candidates(key, pkey, group, p, npel)
  local out = {}
  if npel == 0 then return out end
  local rel = redis.call('XPENDING', key, group, '-', '+', npel, '')
  local seqs = {}
  for _, r in ipairs(rel) do seqs[r[1]] = release_of(pkey, group, r[1]) end
  table.sort(rel, function(a, b)
    if a[3] ~= b[3] then return a[3] > b[3] end
    if seqs[a[1]] ~= seqs[b[1]] then return seqs[a[1]] < seqs[b[1]] end
    return id_before(a[1], b[1])
  end)
  for _, r in ipairs(rel) do out[#out + 1] = {r, true} end
  local vt = p.visibility_timeout_ms
  if type(vt) == 'number' then
    local owned = redis.call('XPENDING', key, group, 'IDLE', vt, '-', '+', npel)
    table.sort(owned, function(a, b)
      if a[3] ~= b[3] then return a[3] > b[3] end
      return id_before(a[1], b[1])
    end)
    for _, r in ipairs(owned) do
      if r[2] ~= '' then out[#out + 1] = {r, false} end
    end
  end
  return out
end
-- Serve the due candidates (CANDS) of KEY for CONSUMER, at most BOUND claimed (0: no bound):
-- rows {id, fields} claimed; dead letters moved (XADD + XACK) on the way.
local function serve(key, pkey, group, consumer, p, cands, bound)
  local rows = {}
  for _, cand in ipairs(cands) do
    if bound > 0 and #rows >= bound then break end
    local row, released = cand[1], cand[2]
    local id, c = row[1], row[4]
    if row[3] >= need(p, released, c) and exists(key, id) then
      local reason = exhausted(p, c)
      if reason then
        local owner = row[2]
        if released then
          local _
          _, owner = release_of(pkey, group, id)
        end
        local f = redis.call('XRANGE', key, id, id)[1][2]
        local argv = {'XADD', p.dead_letter_stream, '*'}
        local m, hops = dl_tail(f)
        if m then
          -- a dead letter already: its first origin stays, one hop more
          for j = 1, m + 2 * #DL_NAMES do argv[#argv + 1] = f[j] end
          if hops < MAX_HOPS then hops = hops + 1 end
          argv[#argv + 1] = DL_HOPS
          argv[#argv + 1] = string.format('%d', hops)
        else
          for _, v in ipairs(f) do argv[#argv + 1] = v end
          local values = {key, id, group, owner, count_text(c), reason}
          for j = 1, #DL_NAMES do
            argv[#argv + 1] = DL_NAMES[j]
            argv[#argv + 1] = values[j]
          end
        end
        local added = redis.pcall(unpack(argv))
        if not (type(added) == 'table' and added.err) then
          redis.call('XACK', key, group, id)
          redis.call('HINCRBY', pkey, 'd:' .. group, 1)
          redis.call('HDEL', pkey, release_field(group, id))
        end
      else
        local e = redis.call('XCLAIM', key, group, consumer, 0, id)[1]
        if e then
          rows[#rows + 1] = {e[1], e[2]}
          redis.call('HINCRBY', pkey, 'r:' .. group, 1)
          if released then redis.call('HDEL', pkey, release_field(group, id)) end
        end
      end
    end
  end
  return rows
end
-- How many of the candidates of KEY are due now (dead letters included), at most LEFT.
local function due_count(key, p, cands, left)
  local n = 0
  for _, cand in ipairs(cands) do
    if n >= left then break end
    local row = cand[1]
    if row[3] >= need(p, cand[2], row[4]) and exists(key, row[1]) then n = n + 1 end
  end
  return n
end
-- When the next pending entry of KEY turns due (ms from now; -1: none), an entry gone from
-- the stream aside: a blocked read's wait. Every pending entry is looked at (no order).
local function next_due(key, group, p, npel)
  local wait = -1
  if npel == 0 then return wait end
  local vt = p.visibility_timeout_ms
  local rows
  if type(vt) == 'number' then
    rows = redis.call('XPENDING', key, group, '-', '+', npel)
  else
    rows = redis.call('XPENDING', key, group, '-', '+', npel, '')
  end
  for _, row in ipairs(rows) do
    local released = row[2] == ''
    if released or type(vt) == 'number' then
      local ms = need(p, released, row[4]) - row[3]
      if ms > 1e12 then ms = 1e12 end
      if ms > 0 or exists(key, row[1]) then
        if ms < 0 then ms = 0 end
        if wait < 0 or ms < wait then wait = ms end
      end
    end
  end
  return wait
end
"""
)

# XREADGROUP (no CLAIM, some ``>``) over n streams of one slot, the policies first. KEYS:
# the n streams, their n policy hashes, then the fallback's keys. ARGV: n, mode ('read':
# the fallback when no stream has a policy for the group, else the policy read; 'probe':
# only whether one has; 'force': the policy read whatever; 'wait': that, and when nothing
# was there the time to the next due entry), group, consumer, COUNT (0:
# none), NOACK ('1'), max_group_consumers, max_reply_entries (0: none), the fallback's kind
# ('': none, 'c': a command, 's': the script inlined as ``fallback``), its number of keys,
# then the n IDs, the n ID-error flags ('1': the engine found this key's ID invalid), the
# fallback's words. Replies: {11} no policy (nothing done), {10, reply} the fallback's, or
# {12, code, ...} the policy read's: {12, 1, reply}, {12, 1, false, ms} when nothing was
# there (ms: until the next candidate turns due, -1: none), {12, 0} past the reply limit,
# {12, 5} a consumer too many, {12, 3, i} key i's ID error.
POLICY_READ_BODY = """
local n, mode, group, consumer = tonumber(ARGV[1]), ARGV[2], ARGV[3], ARGV[4]
local count, noack = tonumber(ARGV[5]), ARGV[6] == '1'
local ccap, rcap, kind, fkeys = tonumber(ARGV[7]), tonumber(ARGV[8]), ARGV[9], tonumber(ARGV[10])
local base = 10
local policies = {}
local any = false
for i = 1, n do
  if ARGV[base + i] == '>' then
    local p = policy_of(KEYS[n + i], group)
    if p then
      policies[i] = p
      any = true
    end
  end
end
if mode == 'probe' then
  if any then return {12} end
  return {11}
end
if not any and mode == 'read' then
  if kind == '' then return {11} end
  local r
  local first = base + 2 * n + 1
  if kind == 'c' then
    r = redis.pcall(unpack(ARGV, first))
  else
    local fk, fa = {}, {}
    for j = 1, fkeys do fk[j] = KEYS[2 * n + j] end
    for j = first, #ARGV do fa[#fa + 1] = ARGV[j] end
    r = fallback(fk, fa)
  end
  if type(r) == 'table' and r.err then return r end
  return {10, r}
end
local infos = {}
for i = 1, n do
  local key = KEYS[i]
  local t = stream_type(key)
  if not t then return redis.error_reply(WRONGTYPE) end
  local g = nil
  if t == 'stream' then g = find_group(redis.call('XINFO', 'GROUPS', key), group) end
  if not g then
    return redis.error_reply("NOGROUP No such key '" .. key .. "' or consumer group '" ..
      group .. "' in XREADGROUP with GROUP option")
  end
  if ARGV[base + n + i] == '1' then return {12, 3, i} end
  infos[i] = g
end
local cands = {}
for i = 1, n do
  if policies[i] then
    cands[i] = candidates(KEYS[i], KEYS[n + i], group, policies[i], field(infos[i], 'pending'))
  end
end
if rcap > 0 then
  local total = 0
  for i = 1, n do
    local left = rcap - total
    if left <= 0 then break end
    if count > 0 and count < left then left = count end
    local key, id = KEYS[i], ARGV[base + i]
    local rows
    if id == '>' then
      if policies[i] then
        local due = due_count(key, policies[i], cands[i], left)
        total = total + due
        left = left - due
      end
      rows = {}
      if left > 0 then
        rows = redis.call('XRANGE', key, '(' .. field(infos[i], 'last-delivered-id'), '+',
          'COUNT', left)
      end
    else
      local ok
      ok, rows = pcall(redis.call, 'XPENDING', key, group, '(' .. id, '+', left, consumer)
      if not ok then rows = {} end
    end
    total = total + #rows
  end
  if total >= rcap then return {12, 0} end
end
for i = 1, n do
  if full(KEYS[i], group, consumer, ccap) then return {12, 5} end
end
local bound = count
if bound == 0 then bound = rcap end
local out = {}
for i = 1, n do
  local key, id = KEYS[i], ARGV[base + i]
  local rows = {}
  if policies[i] then
    rows = serve(key, KEYS[n + i], group, consumer, policies[i], cands[i], bound)
  end
  local argv = {'XREADGROUP', 'GROUP', group, consumer}
  local left = 0
  if count > 0 then left = count - #rows end
  if id ~= '>' or count == 0 or left > 0 then
    if id ~= '>' and count > 0 then left = count end
    if left > 0 then
      argv[#argv + 1] = 'COUNT'
      argv[#argv + 1] = left
    end
    if noack then argv[#argv + 1] = 'NOACK' end
    argv[#argv + 1] = 'STREAMS'
    argv[#argv + 1] = key
    argv[#argv + 1] = id
    local fresh = redis.call(unpack(argv))
    if fresh then
      for _, e in ipairs(fresh[1][2]) do rows[#rows + 1] = e end
      if id ~= '>' then out[#out + 1] = {key, rows} end
    end
  end
  if id == '>' and #rows > 0 then out[#out + 1] = {key, rows} end
end
if #out > 0 then return {12, 1, out} end
if mode ~= 'wait' then return {12, 1, false, -1} end
local wait = -1
for i = 1, n do
  if policies[i] then
    local ms = next_due(KEYS[i], group, policies[i], field(infos[i], 'pending'))
    if ms >= 0 and (wait < 0 or ms < wait) then wait = ms end
  end
end
return {12, 1, false, wait}
"""


def policy_read_script(fallback_source: str | None) -> str:
    """``POLICY_READ_BODY`` with ``fallback_source`` (a script of scripts.py) inlined."""
    if fallback_source is None:
        head = "local fallback = nil\n"
    else:
        head = f"local function fallback(KEYS, ARGV)\n{fallback_source}\nend\n"
    return POLICY_HELPERS + head + POLICY_READ_BODY


# XNACK KEYS[1] (KEYS[2]: its policy hash) ARGV[1] (the group) ARGV[2] (SILENT | FAIL |
# FATAL) IDS ARGV[6..] [RETRYCOUNT ARGV[3] ('': none)] [FORCE (ARGV[4] '1')]; ARGV[5]: '1'
# when the server has XNACK (Redis 8.8). A group without a policy gets the server's XNACK,
# or on an older server its emulation (newer.py): each pending ID (with FORCE, each ID in the
# stream) claimed by the consumer '' with delivery time 0 and the mode's delivery count. A
# group with a policy gets the emulation on every server, with the delivery time the
# release's (now: the back-off counts from it), and the release recorded (number, consumer
# that held it) for FIFO and the dead letter.
XNACK = (
    POLICY_HELPERS
    + """
local key, pkey, group, mode, retry = KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3]
local force, native = ARGV[4] == '1', ARGV[5] == '1'
local policy = redis.call('HEXISTS', pkey, 'p:' .. group) == 1
if native and not policy then
  local argv = {'XNACK', key, group, mode, 'IDS', #ARGV - 5}
  for i = 6, #ARGV do argv[#argv + 1] = ARGV[i] end
  if retry ~= '' then
    argv[#argv + 1] = 'RETRYCOUNT'
    argv[#argv + 1] = retry
  end
  if force then argv[#argv + 1] = 'FORCE' end
  return redis.pcall(unpack(argv))
end
local t = stream_type(key)
if not t then return redis.error_reply(WRONGTYPE) end
if t == 'none' or not find_group(redis.call('XINFO', 'GROUPS', key), group) then
  return redis.error_reply("NOGROUP No such key '" .. key .. "' or consumer group '" ..
    group .. "'")
end
local time = 0
if policy then time = now_ms() end
local n = 0
for i = 6, #ARGV do
  local id = ARGV[i]
  local row = redis.call('XPENDING', key, group, id, id, 1)[1]
  if (row or force) and exists(key, id) then
    local rc = nil
    if retry ~= '' then
      rc = retry
    elseif mode == 'FATAL' then
      rc = '9223372036854775807'
    elseif not row then
      rc = '0'
    elseif mode == 'SILENT' then
      local c = row[4]
      if c >= 9.2e18 then rc = '9223372036854775806'
      elseif c > 0 then rc = count_text(c - 1)
      else rc = '0' end
    end
    local argv = {'XCLAIM', key, group, '', 0, id, 'TIME', time}
    if rc then
      argv[#argv + 1] = 'RETRYCOUNT'
      argv[#argv + 1] = rc
    end
    if not row then argv[#argv + 1] = 'FORCE' end
    argv[#argv + 1] = 'JUSTID'
    redis.call(unpack(argv))
    if policy then
      local owner = ''
      if row then owner = row[2] end
      if owner == '' then
        local _
        _, owner = release_of(pkey, group, id)
      end
      local seq = redis.call('HINCRBY', pkey, 'n:' .. group, 1)
      redis.call('HSET', pkey, release_field(group, id), seq .. '\\0' .. owner)
    end
    n = n + 1
  end
end
return n
"""
)

# A group's policy (KEYS[1] the stream, KEYS[2] its policy hash; ARGV[1] the group,
# ARGV[2] 'get' | 'set' | 'all', ARGV[3] the policy's JSON ('' : remove it)). {0} when the
# group is missing ('all': {} for a missing stream); 'get': {1, json or false}; 'set':
# {1, whether it had one}; 'all': {1, {name, json, ...}} for the groups there.
# A 'set' walks the dead-letter chain first (app/engine/dead_letters.py ``leads_back``) over
# the streams it is given: KEYS[3..] pairs (stream, its policy hash), ARGV[4..] streams to
# take as without policies (another slot of a cluster, where no chain reaches). {3} when the
# chain comes back to KEYS[1] (nothing set); {2, stream, ...} when it reaches streams it was
# not given (nothing set: send again with them).
POLICY = (
    NEWER_HELPERS
    + """
local function leads_back(key, dead)
  local known = {}
  for i = 3, #KEYS, 2 do known[KEYS[i]] = i end
  for i = 4, #ARGV do known[ARGV[i]] = 0 end
  local seen, queue, missing = {[dead] = true}, {dead}, {}
  local at = 1
  while at <= #queue do
    local name = queue[at]
    at = at + 1
    if name == key then return true, missing end
    local i = known[name]
    if i == nil then
      missing[#missing + 1] = name
    elseif i > 0 and redis.call('TYPE', KEYS[i])['ok'] == 'stream' then
      for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[i])) do
        local raw = redis.call('HGET', KEYS[i + 1], 'p:' .. field(g, 'name'))
        local nxt = raw and cjson.decode(raw).dead_letter_stream
        if type(nxt) == 'string' and not seen[nxt] then
          seen[nxt] = true
          queue[#queue + 1] = nxt
        end
      end
    end
  end
  return false, missing
end
local key, pkey, group, what = KEYS[1], KEYS[2], ARGV[1], ARGV[2]
local t = redis.call('TYPE', key)['ok']
if t ~= 'stream' then
  if what == 'all' then return {1, {}} end
  return {0}
end
local groups = redis.call('XINFO', 'GROUPS', key)
if what == 'all' then
  local out = {}
  for _, g in ipairs(groups) do
    local name = field(g, 'name')
    local raw = redis.call('HGET', pkey, 'p:' .. name)
    if raw then
      out[#out + 1] = name
      out[#out + 1] = raw
    end
  end
  return {1, out}
end
if not find_group(groups, group) then return {0} end
local raw = redis.call('HGET', pkey, 'p:' .. group)
if what == 'get' then return {1, raw} end
if ARGV[3] ~= '' then
  local dead = cjson.decode(ARGV[3]).dead_letter_stream
  if type(dead) == 'string' then
    local back, missing = leads_back(key, dead)
    if back then return {3} end
    if #missing > 0 then
      local out = {2}
      for _, name in ipairs(missing) do out[#out + 1] = name end
      return out
    end
  end
  if not raw then
    redis.call('HDEL', pkey, 'r:' .. group, 'd:' .. group)
  end
  redis.call('HSET', pkey, 'p:' .. group, ARGV[3])
  if raw then return {1, 1} end
  return {1, 0}
end
if not raw then return {1, 0} end
redis.call('HDEL', pkey, 'p:' .. group, 'r:' .. group, 'd:' .. group, 'n:' .. group)
local prefix = 'o:' .. group .. '\\0'
for _, f in ipairs(redis.call('HKEYS', pkey)) do
  if string.sub(f, 1, #prefix) == prefix then redis.call('HDEL', pkey, f) end
end
return {1, 1}
"""
)

# What a group's (ARGV[1]) policy and webhooks leave behind when the group goes (XGROUP
# DESTROY): KEYS[1] its policy hash.
FORGET_GROUP = """
local pkey, group = KEYS[1], ARGV[1]
redis.call('HDEL', pkey, 'p:' .. group, 'r:' .. group, 'd:' .. group, 'n:' .. group)
local prefix = 'o:' .. group .. '\\0'
local hooks = 'w:' .. #group .. ':' .. group
for _, f in ipairs(redis.call('HKEYS', pkey)) do
  if string.sub(f, 1, #prefix) == prefix or string.sub(f, 1, #hooks) == hooks then
    redis.call('HDEL', pkey, f)
  end
end
return 1
"""

# Redrive: KEYS[1] the dead-letter stream, KEYS[2..] the targets; ARGV: pairs (ID, index of
# its target in KEYS). Each entry still there and ending with a dead letter's tail (``dl_tail``)
# is appended to its target without it and deleted: its new ID; else false (skipped).
REDRIVE = (
    DL_TAIL
    + """
local dead = KEYS[1]
local out = {}
for i = 1, #ARGV, 2 do
  local id, target = ARGV[i], KEYS[tonumber(ARGV[i + 1])]
  local e = redis.call('XRANGE', dead, id, id)[1]
  local moved = false
  if e then
    local f = e[2]
    local m = dl_tail(f)
    if m and m > 0 then
      moved = redis.call('XADD', target, '*', unpack(f, 1, m))
      redis.call('XDEL', dead, id)
    end
  end
  out[#out + 1] = moved
end
return out
"""
)

# One step of retention on KEYS[1] by the server's clock: ARGV max_age_ms, max_len,
# max_bytes ('' : none), LIMIT, reference policy ('' : KEEPREF). How many entries it removed
# (0 for a missing key), at most LIMIT per trim. By age as the engine's ``trim_by_age``: whole
# nodes (MINID ~ LIMIT), then what is left of LIMIT by an exact MINID whose threshold is moved
# back to the entry just past it, so the node holding the boundary goes too, in bounded steps.
RETENTION = """
local key = KEYS[1]
local age, len, bytes, limit, ref = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local function xtrim(strategy, threshold)
  if ref == '' then
    return redis.call('XTRIM', key, strategy, '~', threshold, 'LIMIT', limit)
  end
  return redis.call('XTRIM', key, strategy, '~', threshold, 'LIMIT', limit, ref)
end
local function exact_minid(threshold)
  if ref == '' then
    return redis.call('XTRIM', key, 'MINID', threshold)
  end
  return redis.call('XTRIM', key, 'MINID', threshold, ref)
end
if redis.call('TYPE', key)['ok'] ~= 'stream' then return 0 end
local removed = 0
if age ~= '' then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local min = now - tonumber(age)
  if min > 0 then
    local minid = string.format('%d', min) .. '-0'
    removed = xtrim('MINID', minid)
    local room = tonumber(limit) - removed
    if room > 0 then
      local older = redis.call('XRANGE', key, '-', '(' .. minid, 'COUNT', room + 1)
      if #older > 0 then
        if #older > room then minid = older[room + 1][1] end
        removed = removed + exact_minid(minid)
      end
    end
  end
end
if len ~= '' then
  removed = removed + xtrim('MAXLEN', len)
end
if bytes ~= '' then
  local used = redis.call('MEMORY', 'USAGE', key)
  if used and used > tonumber(bytes) then
    local keep = math.floor(redis.call('XLEN', key) * tonumber(bytes) / used)
    removed = removed + xtrim('MAXLEN', string.format('%d', keep))
  end
end
return removed
"""
