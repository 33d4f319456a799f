-- The XADDs of a batch (append, append_idmp, append_delref): with ``key``, ``out`` and ``i``
-- (the index of the first entry's argument count) set by the script, appends ARGV[2] entries,
-- each given as its count of XADD arguments then the arguments; their IDs go to ``out``.

for j = 1, tonumber(ARGV[2]) do
  local n = tonumber(ARGV[i])
  out[j] = redis.call('XADD', key, unpack(ARGV, i + 1, i + n))
  i = i + n + 1
end
