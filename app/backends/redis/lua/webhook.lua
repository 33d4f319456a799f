-- KEYS: the stream, its policy hash. ARGV: what ('list', 'set', 'del'), the group, then for
-- 'list' whether to list one group ('1') or all, for 'set' / 'del' the name (and the value).
-- 'list' answers [group, name, value, ...]; 'set' / 'del' {1, new / removed} or {0}: no group.
--@include newer_helpers

local key, pkey, what, group = KEYS[1], KEYS[2], ARGV[1], ARGV[2]
local is_stream = redis.call('TYPE', key)['ok'] == 'stream'
if what == 'list' then
  if not is_stream then return {} end
  local live = {}
  for _, g in ipairs(redis.call('XINFO', 'GROUPS', key)) do live[field(g, 'name')] = true end
  local out = {}
  local cursor = '0'
  repeat
    local page = redis.call('HSCAN', pkey, cursor, 'MATCH', 'w:*', 'COUNT', 1000)
    cursor = page[1]
    local kv = page[2]
    for i = 1, #kv, 2 do
      local f = kv[i]
      local colon = string.find(f, ':', 3, true)
      local n = colon and tonumber(string.sub(f, 3, colon - 1))
      if n then
        local g = string.sub(f, colon + 1, colon + n)
        if live[g] and (ARGV[3] ~= '1' or g == group) then
          out[#out + 1] = g
          out[#out + 1] = string.sub(f, colon + n + 1)
          out[#out + 1] = kv[i + 1]
        end
      end
    end
  until cursor == '0'
  return out
end
if not is_stream or not find_group(redis.call('XINFO', 'GROUPS', key), group) then
  return {${NO_GROUP}}
end
local f = 'w:' .. #group .. ':' .. group .. ARGV[3]
if what == 'set' then return {${RAN}, redis.call('HSET', pkey, f, ARGV[4])} end
return {${RAN}, redis.call('HDEL', pkey, f)}
