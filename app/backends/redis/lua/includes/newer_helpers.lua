-- --- the commands Redis added after 7.0, on an older server (newer.py) ---------------------
-- Each is one script on the key's slot, so it is as atomic as the command it stands for. A
-- refusal the caller knows the error of is a code: {2} (an option error found by the
-- engine's parser, answered after the key's type as the command does), {3} (an invalid
-- ID, answered after a missing key's reply), {0} (past the reply limit), {5} (a consumer
-- too many), {4} (a ``~`` trim whose LIMIT could cut it: not exact here).
--@include lua_helpers
local WRONGTYPE = '${WRONGTYPE}'
local function stream_type(key)
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'none' and t ~= 'stream' then return nil end
  return t
end
local function num_before(a, b)
  if #a ~= #b then return #a < #b end
  return before(a, b)
end
local function id_before(a, b)
  local da, db = string.find(a, '-', 1, true), string.find(b, '-', 1, true)
  local ma, mb = string.sub(a, 1, da - 1), string.sub(b, 1, db - 1)
  if ma ~= mb then return num_before(ma, mb) end
  return num_before(string.sub(a, da + 1), string.sub(b, db + 1))
end
local function find_group(groups, name)
  for _, g in ipairs(groups) do
    if field(g, 'name') == name then return g end
  end
  return nil
end
-- The group ``group`` of each of KEYS[1..n], as XREADGROUP checks them, key by key: another
-- type is WRONGTYPE, a missing key or group NOGROUP, and ARGV[flags + i] = '1' (the engine
-- found key i's ID invalid) is that ID's error. Returns the groups' XINFO rows; else nil and
-- the error reply, or nil and i.
local function read_groups(n, group, flags)
  local infos = {}
  for i = 1, n do
    local key = KEYS[i]
    local t = stream_type(key)
    if not t then return nil, redis.error_reply(WRONGTYPE) end
    local g = nil
    if t == 'stream' then g = find_group(redis.call('XINFO', 'GROUPS', key), group) end
    if not g then
      return nil, redis.error_reply("NOGROUP No such key '" .. key .. "' or consumer group '" ..
        group .. "' in XREADGROUP with GROUP option")
    end
    if ARGV[flags + i] == '1' then return nil, i end
    infos[i] = g
  end
  return infos
end
local function exists(key, id)
  return #redis.call('XRANGE', key, id, id) > 0
end
local function referenced(key, groups, id)
  for _, g in ipairs(groups) do
    if id_before(field(g, 'last-delivered-id'), id) then return true end
    if #redis.call('XPENDING', key, field(g, 'name'), id, id, 1) > 0 then return true end
  end
  return false
end
local function remove(key, groups, id, policy)
  if policy == 'ACKED' then
    -- redis-server 8.6 asks the groups first: an ID after a group's last-delivered-id is
    -- kept (2) even when the stream does not hold it
    if referenced(key, groups, id) then return 2 end
    if not exists(key, id) then return -1 end
  end
  local n = redis.call('XDEL', key, id)
  if policy == 'DELREF' then
    for _, g in ipairs(groups) do redis.call('XACK', key, field(g, 'name'), id) end
  end
  if n == 1 then return 1 end
  return -1
end
local function ack_all(key, groups, ids)
  for _, g in ipairs(groups) do
    for i = 1, #ids, 1000 do
      redis.call('XACK', key, field(g, 'name'), unpack(ids, i, math.min(i + 999, #ids)))
    end
  end
end
-- A DELREF trim: {strategy, threshold, LIMIT of a `~` clause (0: exact), the most entries
-- a node holds}. It removes the oldest live entries (Redis 8.2 trims exactly under DELREF):
-- an exact XTRIM removes them, then XACK drops them from every group. ``delref_fits``:
-- whether a `~` LIMIT cannot cut it short (it stops before a whole node that would pass
-- it), ``adding`` entries to be appended first.
local function delref_victims(key, trim)
  if trim[1] == 'MAXLEN' then
    local n = redis.call('XLEN', key) - tonumber(trim[2])
    if n <= 0 then return {} end
    return redis.call('XRANGE', key, '-', '+', 'COUNT', n)
  end
  if trim[2] == '0-0' then return {} end
  return redis.call('XRANGE', key, '-', '(' .. trim[2])
end
local function delref_fits(key, trim, adding)
  if trim[3] <= 0 or redis.call('EXISTS', key) == 0 then return true end
  local upper
  if trim[1] == 'MAXLEN' then
    upper = redis.call('XLEN', key) + adding - tonumber(trim[2])
  else
    upper = #delref_victims(key, trim) + adding
  end
  return upper + trim[4] <= trim[3]
end
local function delref_trim(key, trim)
  local ids = {}
  for _, e in ipairs(delref_victims(key, trim)) do ids[#ids + 1] = e[1] end
  if #ids == 0 then return 0 end
  local n = redis.call('XTRIM', key, trim[1], '=', trim[2])
  ack_all(key, redis.call('XINFO', 'GROUPS', key), ids)
  return n
end
local function count_text(c)
  if c >= 9.2e18 then return '9223372036854775807' end
  return string.format('%d', c)
end
