"""The Lua scripts the Redis backend sends, by name (their text: app/backends/redis/lua/).

A script decides nothing: it only makes a sequence of Redis commands atomic on one key's slot
(count first, then act), so a refusal changes nothing. The engine's numbers and texts stay in
app/engine/limits.py; callers pass them in as ARGV.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.backends.redis import lua
from app.backends.redis.parse import Arg, encode

LISTING = lua.script("listing")  # lua/listing.lua

FULL_INFO = lua.script("full_info")  # lua/full_info.lua

NEW_MEMBER = lua.script("new_member")  # lua/new_member.lua

ROOM_THEN = lua.script("room_then")  # lua/room_then.lua

RESTORE = lua.script("restore")  # lua/restore.lua


def eval_line(script: str, keys: Sequence[Arg], args: Sequence[Arg]) -> list[Arg]:
    return ["EVAL", script, len(keys), *keys, *args]


PROBE = lua.script("probe")  # lua/probe.lua

APPEND = lua.script("append")  # lua/append.lua

APPEND_IDMP = lua.script("append_idmp")  # lua/append_idmp.lua

APPEND_GUARDED = lua.script("append_guarded")  # lua/append_guarded.lua

DELETE_STREAM = lua.script("delete_stream")  # lua/delete_stream.lua

GROUP_READ = lua.script("group_read")  # lua/group_read.lua

AUTOCLAIM = lua.script("autoclaim")  # lua/autoclaim.lua


def eval_keys(script: str, keys: list[str], args: Sequence[Arg]) -> list[Arg]:
    """``eval_line`` for keys given as text."""
    return eval_line(script, [encode(k) for k in keys], args)


XDELEX = lua.script("xdelex")  # lua/xdelex.lua

XACKDEL = lua.script("xackdel")  # lua/xackdel.lua

TRIM_DELREF = lua.script("trim_delref")  # lua/trim_delref.lua

CLAIM_READ = lua.script("claim_read")  # lua/claim_read.lua

APPEND_DELREF = lua.script("append_delref")  # lua/append_delref.lua
