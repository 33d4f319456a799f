-- A batch appends only onto the state it was planned on: the key missing (ARGV[1] empty) or
-- a stream whose last ID is ARGV[1]; else 0, nothing done. APPEND_DELREF shares it.

local key = KEYS[1]
local t = redis.call('TYPE', key)['ok']
if ARGV[1] == '' then
  if t ~= 'none' then return 0 end
else
  if t ~= 'stream' then return 0 end
  local info = redis.call('XINFO', 'STREAM', key)
  for i = 1, #info, 2 do
    if info[i] == 'last-generated-id' and info[i + 1] ~= ARGV[1] then return 0 end
  end
end
