-- XNACK KEYS[1] (KEYS[2]: its policy hash) ARGV[1] (the group) ARGV[2] (SILENT | FAIL |
-- FATAL) IDS ARGV[6..] [RETRYCOUNT ARGV[3] ('': none)] [FORCE (ARGV[4] '1')]; ARGV[5]: '1'
-- when the server has XNACK (Redis 8.8). A group without a policy gets the server's XNACK,
-- or on an older server its emulation (newer.py): each pending ID (with FORCE, each ID in the
-- stream) claimed by the consumer '' with delivery time 0 and the mode's delivery count. A
-- group with a policy gets the emulation on every server, with the delivery time the
-- release's (now: the back-off counts from it), and the release recorded (number, consumer
-- that held it) for FIFO and the dead letter.
--@include policy_helpers

local key, pkey, group, mode, retry = KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3]
local force, native = ARGV[4] == '1', ARGV[5] == '1'
local policy = redis.call('HEXISTS', pkey, 'p:' .. group) == 1
if native and not policy then
  local argv = {'XNACK', key, group, mode, 'IDS', #ARGV - 5}
  for i = 6, #ARGV do argv[#argv + 1] = ARGV[i] end
  if retry ~= '' then
    argv[#argv + 1] = 'RETRYCOUNT'
    argv[#argv + 1] = retry
  end
  if force then argv[#argv + 1] = 'FORCE' end
  return redis.pcall(unpack(argv))
end
local t = stream_type(key)
if not t then return redis.error_reply(WRONGTYPE) end
if t == 'none' or not find_group(redis.call('XINFO', 'GROUPS', key), group) then
  return redis.error_reply("NOGROUP No such key '" .. key .. "' or consumer group '" ..
    group .. "'")
end
local time = 0
if policy then time = now_ms() end
local n = 0
for i = 6, #ARGV do
  local id = ARGV[i]
  local row = redis.call('XPENDING', key, group, id, id, 1)[1]
  if (row or force) and exists(key, id) then
    local rc = nil
    if retry ~= '' then
      rc = retry
    elseif mode == 'FATAL' then
      rc = '9223372036854775807'
    elseif not row then
      rc = '0'
    elseif mode == 'SILENT' then
      local c = row[4]
      if c >= 9.2e18 then rc = '9223372036854775806'
      elseif c > 0 then rc = count_text(c - 1)
      else rc = '0' end
    end
    local argv = {'XCLAIM', key, group, '', 0, id, 'TIME', time}
    if rc then
      argv[#argv + 1] = 'RETRYCOUNT'
      argv[#argv + 1] = rc
    end
    if not row then argv[#argv + 1] = 'FORCE' end
    argv[#argv + 1] = 'JUSTID'
    redis.call(unpack(argv))
    if policy then
      local owner = ''
      if row then owner = row[2] end
      if owner == '' then
        local _
        _, owner = release_of(pkey, group, id)
      end
      local seq = redis.call('HINCRBY', pkey, 'n:' .. group, 1)
      redis.call('HSET', pkey, release_field(group, id), seq .. '\0' .. owner)
    end
    n = n + 1
  end
end
return n
