-- RESTORE key ARGV[3..] within the caps (ARGV[1]: groups, ARGV[2]: consumers per group; 0:
-- none): {0, groups, most consumers} when refused, the key as it was before.
--@include lua_helpers

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
    return {${REFUSED}, #groups, most}
  end
end
return {${RAN}, reply}
