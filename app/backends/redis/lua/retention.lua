-- One step of retention on KEYS[1] by the server's clock: ARGV max_age_ms, max_len,
-- max_bytes ('' : none), LIMIT, reference policy ('' : KEEPREF). How many entries it removed
-- (0 for a missing key), at most LIMIT per trim. By age as the engine's ``trim_by_age``: whole
-- nodes (MINID ~ LIMIT), then what is left of LIMIT by an exact MINID whose threshold is moved
-- back to the entry just past it, so the node holding the boundary goes too, in bounded steps.

local key = KEYS[1]
local age, len, bytes, limit, ref = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local function xtrim(strategy, threshold)
  if ref == '' then
    return redis.call('XTRIM', key, strategy, '~', threshold, 'LIMIT', limit)
  end
  return redis.call('XTRIM', key, strategy, '~', threshold, 'LIMIT', limit, ref)
end
local function exact_minid(threshold)
  if ref == '' then
    return redis.call('XTRIM', key, 'MINID', threshold)
  end
  return redis.call('XTRIM', key, 'MINID', threshold, ref)
end
if redis.call('TYPE', key)['ok'] ~= 'stream' then return 0 end
local removed = 0
if age ~= '' then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local min = now - tonumber(age)
  if min > 0 then
    local minid = string.format('%d', min) .. '-0'
    removed = xtrim('MINID', minid)
    local room = tonumber(limit) - removed
    if room > 0 then
      local older = redis.call('XRANGE', key, '-', '(' .. minid, 'COUNT', room + 1)
      if #older > 0 then
        if #older > room then minid = older[room + 1][1] end
        removed = removed + exact_minid(minid)
      end
    end
  end
end
if len ~= '' then
  removed = removed + xtrim('MAXLEN', len)
end
if bytes ~= '' then
  local used = redis.call('MEMORY', 'USAGE', key)
  if used and used > tonumber(bytes) then
    local keep = math.floor(redis.call('XLEN', key) * tonumber(bytes) / used)
    removed = removed + xtrim('MAXLEN', string.format('%d', keep))
  end
end
return removed
