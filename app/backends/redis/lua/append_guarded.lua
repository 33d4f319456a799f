-- A batch and a record, appended only while the record's stream is as it was read
-- (app/engine/commands/guarded.py): KEYS[1] the stream the batch goes to, KEYS[2] the record's;
-- ARGV[1] the last ID the batch was planned on ('' : the key missing; '*' : not planned, every
-- entry a plain '*' that nothing refuses), ARGV[2] how many entries, then for each its XADD
-- arguments' count and the arguments; then the ID of the record stream's last entry when it
-- was read ('' : none), the record's count of XADD arguments (0: no record) and the arguments.
-- Returns the batch's IDs; 0, nothing done, when KEYS[1] is no longer as planned (plan
-- again); -1, nothing done, when the record's stream changed (read it again).

local g = 3
for _ = 1, tonumber(ARGV[2]) do g = g + tonumber(ARGV[g]) + 1 end
local kind = redis.call('TYPE', KEYS[2])['ok']
local seen = ''
if kind == 'stream' then
  local top = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
  if #top > 0 then seen = top[1][1] end
elseif kind ~= 'none' then
  return redis.error_reply('${WRONGTYPE}')
end
if seen ~= ARGV[g] then return -1 end
if ARGV[1] ~= '*' then
--@include append_guard
end
local key = KEYS[1]
local out = {}
local i = 3
--@include append_entries
local n = tonumber(ARGV[g + 1])
if n > 0 then redis.call('XADD', KEYS[2], unpack(ARGV, g + 2, g + 1 + n)) end
return out
