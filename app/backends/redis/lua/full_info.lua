-- XINFO STREAM key FULL COUNT ARGV[2]. Refused with {0} when ARGV[3] is 1 and the stream or
-- a group's PEL holds more than the limit (ARGV[1]), with {2} when its groups and consumers
-- together are more than the limit (COUNT does not bound them).
--@include lua_helpers

local limit, deep = tonumber(ARGV[1]), ARGV[3] == '1'
if redis.call('TYPE', KEYS[1])['ok'] == 'stream' then
  if deep and redis.call('XLEN', KEYS[1]) > limit then return {${REFUSED}} end
  if field(redis.call('XINFO', 'STREAM', KEYS[1]), 'groups') > limit then return {${TOO_MANY}} end
  local rows = 0
  for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
    if deep and field(g, 'pending') > limit then return {${REFUSED}} end
    rows = rows + 1 + field(g, 'consumers')
  end
  if rows > limit then return {${TOO_MANY}} end
end
local reply = redis.pcall('XINFO', 'STREAM', KEYS[1], 'FULL', 'COUNT', ARGV[2])
if type(reply) == 'table' and reply.err then return reply end
return {${RAN}, reply}
