-- XACKDEL (Redis 8.2) on a server without it: KEYS[1] the stream; ARGV[1] the group, ARGV[2]
-- the policy (KEEPREF | DELREF | ACKED), ARGV[3] '1' when the options were invalid (answered
-- {2} after WRONGTYPE, as the command answers), ARGV[4] '1' when an ID was invalid ({3}, after
-- a missing key's -1s), ARGV[5..] the IDs. Returns {1, codes}: per ID -1 (not pending in the
-- group), 1 (acked, deleted or kept as the policy says) or the policy's code (newer_helpers).
--@include newer_helpers

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
