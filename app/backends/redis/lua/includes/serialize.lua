-- The Idempotency-Key scripts' helpers (idempotent.py): ``enc`` writes a Redis reply in the
-- packed form Python reads back (``parse_packed``), ``now_ms`` the server's clock.

local function enc(v, out)
  local t = type(v)
  if t == 'string' then out[#out + 1] = '$' .. #v .. ':' .. v
  elseif t == 'number' then out[#out + 1] = ':' .. string.format('%d', v) .. ';'
  elseif t == 'boolean' then out[#out + 1] = v and ':1;' or '_'
  elseif t == 'table' then
    if v.err then out[#out + 1] = '-' .. #v.err .. ':' .. v.err
    elseif v.ok then out[#out + 1] = '+' .. #v.ok .. ':' .. v.ok
    else
      out[#out + 1] = '*' .. #v .. ':'
      for i = 1, #v do enc(v[i], out) end
    end
  else out[#out + 1] = '_' end
end
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
