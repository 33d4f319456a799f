-- KEYS[1] record; ARGV fingerprint, token, lease ms, window ms.
--@include serialize

local rec = KEYS[1]
local fp = redis.call('HGET', rec, 'fp')
if not fp then
  redis.call('HSET', rec, 'fp', ARGV[1], 'run', ARGV[2], 'lease', now_ms() + tonumber(ARGV[3]))
  redis.call('PEXPIRE', rec, ARGV[4])
  return {0}
end
if fp ~= ARGV[1] then return {2} end
local resp = redis.call('HGET', rec, 'resp')
if resp then return {1, resp} end
local run = redis.call('HGET', rec, 'run')
local lease = tonumber(redis.call('HGET', rec, 'lease') or '0')
if run and run ~= ARGV[2] and lease > now_ms() then return {3} end
redis.call('HSET', rec, 'run', ARGV[2], 'lease', now_ms() + tonumber(ARGV[3]))
local out = {4}
local all = redis.call('HGETALL', rec)
for i = 1, #all, 2 do
  if string.sub(all[i], 1, 2) == 'w:' then
    out[#out + 1] = string.sub(all[i], 3)
    out[#out + 1] = all[i + 1]
  end
end
return out
