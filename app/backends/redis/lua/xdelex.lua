-- XDELEX (KEYS[1]) under policy ARGV[1]; ARGV[2] / ARGV[3]: '1' when the parser found an
-- option error / an invalid ID; ARGV[4..]: the IDs. XACKDEL: the same with the group first.
--@include newer_helpers

local key, policy = KEYS[1], ARGV[1]
local t = stream_type(key)
if not t then return redis.error_reply(WRONGTYPE) end
if ARGV[2] == '1' then return {2} end
local out = {}
if t == 'none' then
  for _ = 4, #ARGV do out[#out + 1] = -1 end
  return {1, out}
end
if ARGV[3] == '1' then return {3} end
local groups = redis.call('XINFO', 'GROUPS', key)
for i = 4, #ARGV do out[#out + 1] = remove(key, groups, ARGV[i], policy) end
return {1, out}
