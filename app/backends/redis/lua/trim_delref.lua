-- XTRIM / XADD with DELREF (KEYS[1]): ARGV[1] 'xtrim' or 'xadd', ARGV[2..5] the trim
-- (``DELREF_TRIM``); XADD's words after the key (its trim clause left out) from ARGV[6].
--@include newer_helpers

local key, mode = KEYS[1], ARGV[1]
local trim = {ARGV[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])}
local t = stream_type(key)
if not t then return redis.error_reply(WRONGTYPE) end
if mode == 'xtrim' and t == 'none' then return {1, 0} end
if not delref_fits(key, trim, mode == 'xadd' and 1 or 0) then return {4} end
if mode == 'xtrim' then return {1, delref_trim(key, trim)} end
local reply = redis.pcall('XADD', key, unpack(ARGV, 6))
if type(reply) == 'table' and reply.err then return reply end
if not reply then return {1, false} end
delref_trim(key, trim)
return {1, reply}
