-- A batch of XADDs onto one stream, planned on its state: KEYS[1] the stream; ARGV[1] the
-- last ID it was planned on ('' : the key missing), ARGV[2] how many entries, then for each
-- its XADD arguments' count and the arguments. Returns the IDs added, or 0 with nothing done
-- when the stream is no longer as planned (append_guard).
--@include append_guard
local out = {}
local i = 3
--@include append_entries
return out
