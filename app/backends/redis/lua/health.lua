-- KEYS: the health hash. ARGV: the field, reset ('1' / '0'), failures, the last status ('' for
-- none), the last error ('!' and its text, '' for none), the attempt's and the success's
-- times ('' for none), the hash's time to live. The rule is ``webhook_health.merged``; the
-- layout ``health_text``'s.

local h, f = KEYS[1], ARGV[1]
local failures, attempt, success = 0, '', ''
local old = redis.call('HGET', h, f)
if old then
  local c, a, s = string.match(old, '^(%d*)|(%d*)|(%d*)|')
  if c then failures, attempt, success = tonumber(c) or 0, a, s end
end
if ARGV[2] == '1' then failures = tonumber(ARGV[3]) else failures = failures + tonumber(ARGV[3]) end
if ARGV[6] ~= '' then attempt = ARGV[6] end
if ARGV[7] ~= '' then success = ARGV[7] end
local text = failures .. '|' .. attempt .. '|' .. success .. '|' .. ARGV[4] .. '|' .. ARGV[5]
redis.call('HSET', h, f, text)
redis.call('PEXPIRE', h, ARGV[8])
return 1
