-- Helpers over NEWER_HELPERS: the policy's rules (``backoff``, ``exhausted``), the
-- candidates of a read, one move (claim or dead-letter).
--@include newer_helpers
--@include dl_tail

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
local function release_field(group, id) return 'o:' .. group .. '\0' .. id end
local function release_of(pkey, group, id)
  local v = redis.call('HGET', pkey, release_field(group, id))
  if not v then return 0, '' end
  local z = string.find(v, '\0', 1, true)
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
