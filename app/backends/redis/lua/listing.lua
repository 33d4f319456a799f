-- XINFO GROUPS key / XINFO CONSUMERS key group. ARGV: what, limit, start, count[, group].
-- count 0: the whole listing, refused ({0}) past the limit; else at most count rows named
-- start or after.
--@include lua_helpers

local what, limit, start, count = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local group = ARGV[5]
if count == 0 and limit > 0 and redis.call('TYPE', KEYS[1])['ok'] == 'stream' then
  local n = 0
  if what == 'GROUPS' then
    n = field(redis.call('XINFO', 'STREAM', KEYS[1]), 'groups')
  else
    for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
      if field(g, 'name') == group then n = field(g, 'consumers') end
    end
  end
  if n > limit then return {${REFUSED}} end
end
local rows
if group then
  rows = redis.pcall('XINFO', what, KEYS[1], group)
else
  rows = redis.pcall('XINFO', what, KEYS[1])
end
if type(rows) == 'table' and rows.err then return rows end
if count == 0 then return {${RAN}, rows} end
local out = {}
for _, r in ipairs(rows) do
  if #out >= count then break end
  if not before(field(r, 'name'), start) then out[#out + 1] = r end
end
return {${RAN}, out}
