-- Limits (see limits.py): count at most ARGV[2] entries the read would answer
-- (KEYS of one slot; ``>``: after the group's last-delivered-id; an ID: the consumer's
-- pending after it), then, unless counting only, run XREADGROUP when they are fewer. A key,
-- group or ID that is not there or not valid counts 0: XREADGROUP then gives Redis's error.
-- ARGV: mode ('count' | 'read'), cap, group, consumer, n, the n words of XREADGROUP's head,
-- the IDs, and max_group_consumers (0: none). Replies {1, XREADGROUP's reply}, {0, how many}
-- when refused, or how many ('count'); {2} (-1 counting) when the consumer would be one too
-- many in one of the groups.
--@include lua_helpers

local mode, cap, group, consumer = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
local nhead = tonumber(ARGV[5])
local ccap = tonumber(ARGV[6 + nhead + #KEYS] or '0')
for i = 1, #KEYS do
  if full(KEYS[i], group, consumer, ccap) then
    if mode == 'count' then return -1 end
    return {${TOO_MANY}}
  end
end
local total = 0
for i = 1, #KEYS do
  local left = cap - total
  if left <= 0 then break end
  local key, id = KEYS[i], ARGV[5 + nhead + i]
  local ok, rows = false, nil
  if id == '>' then
    local found, groups = pcall(redis.call, 'XINFO', 'GROUPS', key)
    if found then
      for _, g in ipairs(groups) do
        local name, last = nil, nil
        for j = 1, #g, 2 do
          if g[j] == 'name' then name = g[j + 1] end
          if g[j] == 'last-delivered-id' then last = g[j + 1] end
        end
        if name == group and last then
          ok, rows = pcall(redis.call, 'XRANGE', key, '(' .. last, '+', 'COUNT', left)
        end
      end
    end
  else
    ok, rows = pcall(redis.call, 'XPENDING', key, group, '(' .. id, '+', left, consumer)
  end
  if ok then total = total + #rows end
end
if mode == 'count' then return total end
if total >= cap then return {${REFUSED}, total} end
local argv = {}
for j = 1, nhead do argv[j] = ARGV[5 + j] end
argv[#argv + 1] = 'STREAMS'
for i = 1, #KEYS do argv[#argv + 1] = KEYS[i] end
for i = 1, #KEYS do argv[#argv + 1] = ARGV[5 + nhead + i] end
local reply = redis.pcall(unpack(argv))
if type(reply) == 'table' and reply.err then return reply end
return {${RAN}, reply}
