-- A batch with IDMP entries (Redis 8.6): each entry's own XADD (IDMP takes only ``*``, so the
-- IDs are not decided ahead), after the same guard. ARGV[3]: the last millisecond of the
-- server's clock at which the batch's checks, made ahead, still hold ('' : at any time);
-- past it, 0 and nothing done, as when the stream moved.
--@include append_guard

if ARGV[3] ~= '' then
  local now = redis.call('TIME')
  if tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) > tonumber(ARGV[3]) then
    return 0
  end
end
local out = {}
local i = 4
--@include append_entries
return out
