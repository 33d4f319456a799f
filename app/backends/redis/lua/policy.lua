-- A group's policy (KEYS[1] the stream, KEYS[2] its policy hash; ARGV[1] the group,
-- ARGV[2] 'get' | 'set' | 'all', ARGV[3] the policy's JSON ('' : remove it)). {0} when the
-- group is missing ('all': {} for a missing stream); 'get': {1, json or false}; 'set':
-- {1, whether it had one}; 'all': {1, {name, json, ...}} for the groups there.
-- A 'set' walks the dead-letter chain first (app/engine/dead_letters.py ``leads_back``) over
-- the streams it is given: KEYS[3..] pairs (stream, its policy hash), ARGV[4..] streams to
-- take as without policies (another slot of a cluster, where no chain reaches). {3} when the
-- chain comes back to KEYS[1] (nothing set); {2, stream, ...} when it reaches streams it was
-- not given (nothing set: send again with them).
--@include newer_helpers

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
  if what == 'all' then return {${RAN}, {}} end
  return {${NO_GROUP}}
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
  return {${RAN}, out}
end
if not find_group(groups, group) then return {${NO_GROUP}} end
local raw = redis.call('HGET', pkey, 'p:' .. group)
if what == 'get' then return {${RAN}, raw} end
if ARGV[3] ~= '' then
  local dead = cjson.decode(ARGV[3]).dead_letter_stream
  if type(dead) == 'string' then
    local back, missing = leads_back(key, dead)
    if back then return {${CYCLE}} end
    if #missing > 0 then
      local out = {${ASK_AGAIN}}
      for _, name in ipairs(missing) do out[#out + 1] = name end
      return out
    end
  end
  if not raw then
    redis.call('HDEL', pkey, 'r:' .. group, 'd:' .. group)
  end
  redis.call('HSET', pkey, 'p:' .. group, ARGV[3])
  if raw then return {${RAN}, 1} end
  return {${RAN}, 0}
end
if not raw then return {${RAN}, 0} end
redis.call('HDEL', pkey, 'p:' .. group, 'r:' .. group, 'd:' .. group, 'n:' .. group)
local prefix = 'o:' .. group .. '\0'
for _, f in ipairs(redis.call('HKEYS', pkey)) do
  if string.sub(f, 1, #prefix) == prefix then redis.call('HDEL', pkey, f) end
end
return {${RAN}, 1}
