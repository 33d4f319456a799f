-- The driver of a composed script: KEYS[1] record, then the lines' keys; ARGV token, index,
-- lease ms, then per line: 'c', n, argv... (a command) or 's', fn, nkeys, nargs, keys...,
-- args... (one of the inlined scripts, ``F[fn]``).

local rec = KEYS[1]
if redis.call('HGET', rec, 'run') ~= ARGV[1] then
  return redis.error_reply('ERR the lease of this Idempotency-Key passed to another attempt')
end
local replies = {}
local i = 4
while i <= #ARGV do
  local r
  if ARGV[i] == 'c' then
    local n = tonumber(ARGV[i + 1])
    r = redis.pcall(unpack(ARGV, i + 2, i + 1 + n))
    i = i + 2 + n
  else
    local fn, nk, na = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3])
    local keys = {unpack(ARGV, i + 4, i + 3 + nk)}
    local args = {unpack(ARGV, i + 4 + nk, i + 3 + nk + na)}
    local ok, v = pcall(F[fn], keys, args)
    if ok then r = v
    elseif type(v) == 'table' and v.err then r = v
    else r = {err = tostring(v)} end
    i = i + 4 + nk + na
  end
  if r == nil then r = false end
  replies[#replies + 1] = r
end
local out = {}
enc(replies, out)
redis.call('HSET', rec, 'w:' .. ARGV[2], table.concat(out), 'lease', now_ms() + tonumber(ARGV[3]))
return replies
