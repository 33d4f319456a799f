-- DEL of a stream (REST DELETE): KEYS[1] the stream. Returns 1 when deleted, 0 when it did not
-- exist, WRONGTYPE (nothing done) when the key holds another type.

local t = redis.call('TYPE', KEYS[1])['ok']
if t == 'none' then return 0 end
if t ~= 'stream' then return redis.error_reply('${WRONGTYPE}') end
return redis.call('DEL', KEYS[1])
