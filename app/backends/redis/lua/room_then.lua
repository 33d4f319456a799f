-- A command naming consumer ARGV[3] of group ARGV[2] on every key: refused ({0}) when one of
-- the groups holds ARGV[1] consumers without it; else the command (ARGV[4..]) runs, or, with
-- none given, {1} (a check before a blocking read).
--@include lua_helpers

local cap, group, consumer = tonumber(ARGV[1]), ARGV[2], ARGV[3]
for i = 1, #KEYS do
  if full(KEYS[i], group, consumer, cap) then return {${REFUSED}} end
end
if #ARGV < 4 then return {${RAN}} end
local reply = redis.pcall(unpack(ARGV, 4))
if type(reply) == 'table' and reply.err then return reply end
return {${RAN}, reply}
