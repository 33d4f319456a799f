-- XGROUP CREATE / CREATECONSUMER (ARGV[3..]: the whole command; ARGV[1]: 'groups' or
-- 'consumers', ARGV[2]: the cap): run, then undone ({0}) when it made one too many.
--@include lua_helpers

local what, cap = ARGV[1], tonumber(ARGV[2])
local reply = redis.pcall(unpack(ARGV, 3))
if type(reply) == 'table' and reply.err then return reply end
if what == 'groups' then
  if field(redis.call('XINFO', 'STREAM', KEYS[1]), 'groups') > cap then
    redis.call('XGROUP', 'DESTROY', KEYS[1], ARGV[6])
    return {${REFUSED}}
  end
elseif reply == 1 then
  for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
    if field(g, 'name') == ARGV[6] and field(g, 'consumers') > cap then
      redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[6], ARGV[7])
      return {${REFUSED}}
    end
  end
end
return {${RAN}, reply}
