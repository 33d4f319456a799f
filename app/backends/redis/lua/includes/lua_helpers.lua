-- Lua helpers shared by the scripts: whether ``consumer`` would be one too many in ``group``
-- of ``key`` (a key, group or consumer that is not there counts as room: the command then
-- answers Redis's own error), and whether name ``a`` sorts before ``b`` byte by byte (Lua's
-- ``<`` follows the server's locale).

local function full(key, group, consumer, cap)
  if cap <= 0 or redis.call('TYPE', key)['ok'] ~= 'stream' then return false end
  local ok, rows = pcall(redis.call, 'XINFO', 'CONSUMERS', key, group)
  if not ok or #rows < cap then return false end
  for _, c in ipairs(rows) do
    if c[2] == consumer then return false end
  end
  return true
end
local function before(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = a:byte(i), b:byte(i)
    if x ~= y then return x < y end
  end
  return #a < #b
end
local function field(row, name)
  for j = 1, #row, 2 do
    if row[j] == name then return row[j + 1] end
  end
  return nil
end
