-- Decide nothing here: these scripts only make a sequence of Redis commands atomic.

local t = redis.call('TYPE', KEYS[1])['ok']
local now = redis.call('TIME')
if t == 'none' then return {'', now[1], now[2]} end
if t ~= 'stream' then return {'WRONGTYPE', now[1], now[2]} end
local info = redis.call('XINFO', 'STREAM', KEYS[1])
for i = 1, #info, 2 do
  if info[i] == 'last-generated-id' then return {info[i + 1], now[1], now[2]} end
end
return redis.error_reply('ERR no last-generated-id in XINFO STREAM')
