-- One spend of a credential's rate (GCRA), shared by every front-end: the same steps as
-- ``spend`` in app/access/rates.py, on Redis's clock, in microseconds. Units (requests, bytes,
-- entries) are Python's to count: here only times, all whole numbers well within a double.
-- KEYS[1]: the credential's arrival time (a string of microseconds; expires once it is past).
-- ARGV: cost (microseconds the spend moves it on), tolerance (microseconds it may run ahead
-- of now), mode (0 take: refuse what the burst cannot pay; 1 owe: spend it all the same;
-- 2 peek: spend nothing); ARGV[4], for tests only: the time to take as now.
-- Returns {allowed (1 or 0), ahead (us the arrival time left runs past now), wait (us)}.

local now
if ARGV[4] then
  now = tonumber(ARGV[4])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local cost, tolerance, mode = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]))
if not tat or tat < now then tat = now end
local new_tat = tat + cost
local allow_at = new_tat - tolerance
if mode ~= 1 then
  if allow_at > now then
    return {0, tat - now, allow_at - now}
  end
  if mode == 2 then
    return {1, tat - now, 0}
  end
end
if ARGV[4] then
  -- a test's clock: the key must not expire on Redis's own meanwhile
  redis.call('SET', KEYS[1], string.format('%.0f', new_tat))
else
  redis.call('SET', KEYS[1], string.format('%.0f', new_tat), 'PX',
    math.floor((new_tat - now) / 1000) + 1)
end
return {1, new_tat - now, 0}
