-- A dead letter's tail (app/engine/dead_letters.py ``dead_letter_tail``, word for word): of
-- the flat fields F, how many come before it, and its hop count; nil when F has none.
local DL_NAMES = ${DL_NAMES}
local DL_HOPS, MAX_HOPS = '${DL_HOPS}', ${MAX_HOPS}

local function dl_tail(f)
  local n, hops = #f, 1
  if n >= 2 and f[n - 1] == DL_HOPS and #f[n] <= 15 and string.match(f[n], '^[1-9]%d*$') then
    hops = tonumber(f[n])
    n = n - 2
  end
  local m = n - 2 * #DL_NAMES
  if m < 0 then return nil end
  for j = 1, #DL_NAMES do
    if f[m + 2 * j - 1] ~= DL_NAMES[j] then return nil end
  end
  return m, hops
end
