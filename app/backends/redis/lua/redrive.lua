-- Redrive: KEYS[1] the dead-letter stream, KEYS[2..] the targets; ARGV: pairs (ID, index of
-- its target in KEYS). Each entry still there and ending with a dead letter's tail (``dl_tail``)
-- is appended to its target without it and deleted: its new ID; else false (skipped).
--@include dl_tail

local dead = KEYS[1]
local out = {}
for i = 1, #ARGV, 2 do
  local id, target = ARGV[i], KEYS[tonumber(ARGV[i + 1])]
  local e = redis.call('XRANGE', dead, id, id)[1]
  local moved = false
  if e then
    local f = e[2]
    local m = dl_tail(f)
    if m and m > 0 then
      moved = redis.call('XADD', target, '*', unpack(f, 1, m))
      redis.call('XDEL', dead, id)
    end
  end
  out[#out + 1] = moved
end
return out
