-- KEYS[1] record; ARGV token, response ('' for none).

local rec = KEYS[1]
if redis.call('HGET', rec, 'run') ~= ARGV[1] then return 0 end
if ARGV[2] ~= '' then redis.call('HSET', rec, 'resp', ARGV[2]) end
redis.call('HDEL', rec, 'run', 'lease')
return 1
