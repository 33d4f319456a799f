-- luacheck for the Redis backend's scripts (make lint), as Redis runs them: Lua 5.1 with
-- the globals Redis gives a script. Scripts are checked whole, their includes put in
-- (app/backends/redis/lua/__init__.py: for_lint).
std = "lua51"
read_globals = { "redis", "KEYS", "ARGV", "cjson", "cmsgpack", "bit", "struct", "unpack" }
-- 120, not 100: a constant put in (WRONGTYPE's text, the dead-letter fields) lengthens its line.
max_line_length = 120
