-- XREADGROUP GROUP ARGV[2] ARGV[3] [COUNT ARGV[5]] [NOACK] CLAIM ARGV[4] STREAMS KEYS ids,
-- as Redis 8.4 serves it, over KEYS of one slot. ARGV[1]: 'check' (only the errors: each
-- key's group, then the parser's ID error when ARGV[9 + i] is '1') or 'read'; ARGV[6]: NOACK
-- ('1'); ARGV[7]: max_group_consumers (0: none); ARGV[8]: max_reply_entries (0: none); then
-- the IDs, then the error flags. Per key: its idle pending entries (min-idle-time ARGV[4])
-- longest idle first (ties by ID), those gone from the stream left pending, claimed with
-- XCLAIM (idle and count from before), then new entries (idle 0, count 0), COUNT covering
-- both. With nothing to answer, {1, false, ms}: when the next pending entry turns idle
-- enough (-1: none is pending), for a blocked read's wait.
--@include newer_helpers

local mode, group, consumer = ARGV[1], ARGV[2], ARGV[3]
local min_idle, count, noack = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6] == '1'
local ccap, rcap = tonumber(ARGV[7]), tonumber(ARGV[8])
local nkeys = #KEYS
local infos, refused = read_groups(nkeys, group, 8 + nkeys)
if not infos then
  if type(refused) == 'table' then return refused end
  return {3, refused}
end
if mode == 'check' then return {1} end
if rcap > 0 then
  local total = 0
  for i = 1, nkeys do
    local left = rcap - total
    if left <= 0 then break end
    if count > 0 and count < left then left = count end
    local key, id = KEYS[i], ARGV[8 + i]
    local rows
    if id == '>' then
      rows = redis.call('XRANGE', key, '(' .. field(infos[i], 'last-delivered-id'), '+',
        'COUNT', left)
    else
      local ok
      ok, rows = pcall(redis.call, 'XPENDING', key, group, '(' .. id, '+', left, consumer)
      if not ok then rows = {} end
    end
    total = total + #rows
  end
  if total >= rcap then return {0} end
end
for i = 1, nkeys do
  if full(KEYS[i], group, consumer, ccap) then return {5} end
end
local now = redis.call('TIME')
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local bound = count
if bound == 0 then bound = rcap end
local out = {}
for i = 1, nkeys do
  local key, id = KEYS[i], ARGV[8 + i]
  local rows = {}
  local claims = ARGV[8 + 2 * nkeys + i] == '1'
  if id == '>' then
    local npel = field(infos[i], 'pending')
    if claims and npel > 0 then
      local pel = redis.call('XPENDING', key, group, 'IDLE', ARGV[4], '-', '+', npel)
      table.sort(pel, function(a, b)
        if a[3] ~= b[3] then return a[3] > b[3] end
        return id_before(a[1], b[1])
      end)
      for _, p in ipairs(pel) do
        if bound > 0 and #rows >= bound then break end
        if exists(key, p[1]) then
          local idle = p[3]
          if p[2] == '' and now_ms - idle < 86400000 then idle = -1 end
          local e = redis.call('XCLAIM', key, group, consumer, 0, p[1])[1]
          rows[#rows + 1] = {e[1], e[2], idle, count_text(p[4])}
        end
      end
    end
    local left = 0
    if count > 0 then left = count - #rows end
    if count == 0 or left > 0 then
      local argv = {'XREADGROUP', 'GROUP', group, consumer}
      if left > 0 then
        argv[#argv + 1] = 'COUNT'
        argv[#argv + 1] = left
      end
      if noack then argv[#argv + 1] = 'NOACK' end
      argv[#argv + 1] = 'STREAMS'
      argv[#argv + 1] = key
      argv[#argv + 1] = '>'
      local fresh = redis.call(unpack(argv))
      if fresh then
        for _, e in ipairs(fresh[1][2]) do
          if claims then rows[#rows + 1] = {e[1], e[2], 0, '0'} else rows[#rows + 1] = e end
        end
      end
    end
    if #rows > 0 then out[#out + 1] = {key, rows} end
  else
    local argv = {'XREADGROUP', 'GROUP', group, consumer}
    if count > 0 then
      argv[#argv + 1] = 'COUNT'
      argv[#argv + 1] = count
    end
    argv[#argv + 1] = 'STREAMS'
    argv[#argv + 1] = key
    argv[#argv + 1] = id
    local history = redis.call(unpack(argv))
    if history then out[#out + 1] = history[1] end
  end
end
if #out > 0 then return {1, out} end
local wait = -1
for i = 1, nkeys do
  if ARGV[8 + 2 * nkeys + i] == '1' and field(infos[i], 'pending') > 0 then
    local pel = redis.call('XPENDING', KEYS[i], group, '-', '+', field(infos[i], 'pending'))
    for _, p in ipairs(pel) do
      local ms = min_idle - p[3]
      if ms < 0 then ms = 0 end
      if ms > 1e12 then ms = 1e12 end
      if wait < 0 or ms < wait then wait = ms end
    end
  end
end
return {1, false, wait}
