-- XREADGROUP (no CLAIM, some ``>``) over n streams of one slot, the policies first. KEYS:
-- the n streams, their n policy hashes, then the fallback's keys. ARGV: n, mode ('read':
-- the fallback when no stream has a policy for the group, else the policy read; 'probe':
-- only whether one has; 'force': the policy read whatever; 'wait': that, and when nothing
-- was there the time to the next due entry), group, consumer, COUNT (0:
-- none), NOACK ('1'), max_group_consumers, max_reply_entries (0: none), the fallback's kind
-- ('': none, 'c': a command, 's': the script inlined as ``fallback``), its number of keys,
-- then the n IDs, the n ID-error flags ('1': the engine found this key's ID invalid), the
-- fallback's words. Replies: {11} no policy (nothing done), {10, reply} the fallback's, or
-- {12, code, ...} the policy read's: {12, 1, reply}, {12, 1, false, ms} when nothing was
-- there (ms: until the next candidate turns due, -1: none), {12, 0} past the reply limit,
-- {12, 5} a consumer too many, {12, 3, i} key i's ID error.

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
local infos, refused = read_groups(n, group, base + n)
if not infos then
  if type(refused) == 'table' then return refused end
  return {12, 3, refused}
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
