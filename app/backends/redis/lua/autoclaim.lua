-- XAUTOCLAIM with a COUNT past the limit (ARGV[1]): refused ({0}) when more than the limit
-- are pending from its start ID on, or ({2}) when its consumer would be one more than
-- ARGV[2] in the group (0: no cap). ARGV[3..]: the command's words after the key.
--@include lua_helpers

local limit = tonumber(ARGV[1])
if full(KEYS[1], ARGV[3], ARGV[4], tonumber(ARGV[2])) then return {${TOO_MANY}} end
local ok, rows = pcall(redis.call, 'XPENDING', KEYS[1], ARGV[3], ARGV[6], '+', limit + 1)
if ok and #rows > limit then return {${REFUSED}} end
local reply = redis.pcall('XAUTOCLAIM', KEYS[1], unpack(ARGV, 3))
if type(reply) == 'table' and reply.err then return reply end
return {${RAN}, reply}
