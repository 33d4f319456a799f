-- One request's spend of a credential's rate (GCRA), shared by every front-end: the same
-- arithmetic as ``spend`` in app/access/rates.py, on Redis's clock, in microseconds.
-- KEYS[1]: the credential's arrival time (a string of microseconds; expires once it is past).
-- ARGV: interval (microseconds one request moves it on), burst, cost; ARGV[4], for tests
-- only: the time to take as now.
-- Returns {allowed (1 or 0), remaining, retry after (us), reset (us)}.

local now
if ARGV[4] then
  now = tonumber(ARGV[4])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local interval, burst, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local tolerance = interval * burst
local tat = tonumber(redis.call('GET', KEYS[1]))
if not tat or tat < now then tat = now end
local new_tat = tat + interval * cost
local allow_at = new_tat - tolerance
if allow_at > now then
  local left = math.floor((tolerance - (tat - now)) / interval)
  if left < 0 then left = 0 end
  return {0, left, allow_at - now, tat - now}
end
if ARGV[4] then
  -- a test's clock: the key must not expire on Redis's own meanwhile
  redis.call('SET', KEYS[1], string.format('%.0f', new_tat))
else
  redis.call('SET', KEYS[1], string.format('%.0f', new_tat), 'PX',
    math.floor((new_tat - now) / 1000) + 1)
end
local remaining = math.floor((tolerance - (new_tat - now)) / interval)
if remaining < 0 then remaining = 0 end
return {1, remaining, 0, new_tat - now}
