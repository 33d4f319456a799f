-- APPEND (above) whose entries all carry one DELREF trim (ARGV[3..6], as ``delref_trim``
-- takes it; the entries from ARGV[7]), on a server older than 8.2: trimming once after the
-- last entry removes what trimming after each would (the oldest live entries past the
-- threshold). -4 when a `~` LIMIT could cut the trim short (not exact here).
--@include newer_helpers
--@include append_guard

local trim = {ARGV[3], ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[6])}
if not delref_fits(key, trim, tonumber(ARGV[2])) then return -4 end
local out = {}
local i = 7
--@include append_entries
delref_trim(key, trim)
return out
