-- What a group's (ARGV[1]) policy and webhooks leave behind when the group goes (XGROUP
-- DESTROY): KEYS[1] its policy hash.

local pkey, group = KEYS[1], ARGV[1]
redis.call('HDEL', pkey, 'p:' .. group, 'r:' .. group, 'd:' .. group, 'n:' .. group)
local prefix = 'o:' .. group .. '\0'
local hooks = 'w:' .. #group .. ':' .. group
for _, f in ipairs(redis.call('HKEYS', pkey)) do
  if string.sub(f, 1, #prefix) == prefix or string.sub(f, 1, #hooks) == hooks then
    redis.call('HDEL', pkey, f)
  end
end
return 1
