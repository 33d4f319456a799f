"""Webhooks on Redis: a group's push consumers (``app.engine.delivery.Webhook``), kept in
the hash that holds its stream's policies (``delivery.policy_key``: the stream's slot).

Each webhook is a field ``w:<bytes of the group's name>:<group><name>`` holding its
``as_json`` form (the secret with it: Redis is the store, as the journal is on the embedded
engine). The length makes the group's part unambiguous whatever bytes the names hold, so a
group's webhooks are the fields of one prefix. Each operation is one script that checks the
group exists, as the engine's does; a listing shows only groups that still exist (one
destroyed outside xstreams leaves its fields, which a new group of its name would find).
They go with their group or stream as the policy does (``delivery.forget_lines``: DEL,
UNLINK and XGROUP DESTROY through xstreams; FLUSHDB removes everything).
"""

from __future__ import annotations

import json

from app.backends.redis.delivery import Delivery, policy_key
from app.backends.redis.parse import Arg, Raw, decode, encode
from app.backends.redis.routing import Router
from app.backends.redis.scripts import NEWER_HELPERS, eval_line
from app.engine.commands.groups import no_such_group
from app.engine.delivery import Webhook
from app.engine.listpack import utf8

__all__ = ["WEBHOOK", "Webhooks", "webhook_field"]

# KEYS: the stream, its policy hash. ARGV: what ('list', 'set', 'del'), the group, then for
# 'list' whether to list one group ('1') or all, for 'set' / 'del' the name (and the value).
# 'list' answers [group, name, value, ...]; 'set' / 'del' {1, new / removed} or {0}: no group.
WEBHOOK = (
    NEWER_HELPERS
    + """
local key, pkey, what, group = KEYS[1], KEYS[2], ARGV[1], ARGV[2]
local is_stream = redis.call('TYPE', key)['ok'] == 'stream'
if what == 'list' then
  if not is_stream then return {} end
  local live = {}
  for _, g in ipairs(redis.call('XINFO', 'GROUPS', key)) do live[field(g, 'name')] = true end
  local out = {}
  local cursor = '0'
  repeat
    local page = redis.call('HSCAN', pkey, cursor, 'MATCH', 'w:*', 'COUNT', 1000)
    cursor = page[1]
    local kv = page[2]
    for i = 1, #kv, 2 do
      local f = kv[i]
      local colon = string.find(f, ':', 3, true)
      local n = colon and tonumber(string.sub(f, 3, colon - 1))
      if n then
        local g = string.sub(f, colon + 1, colon + n)
        if live[g] and (ARGV[3] ~= '1' or g == group) then
          out[#out + 1] = g
          out[#out + 1] = string.sub(f, colon + n + 1)
          out[#out + 1] = kv[i + 1]
        end
      end
    end
  until cursor == '0'
  return out
end
if not is_stream or not find_group(redis.call('XINFO', 'GROUPS', key), group) then
  return {0}
end
local f = 'w:' .. #group .. ':' .. group .. ARGV[3]
if what == 'set' then return {1, redis.call('HSET', pkey, f, ARGV[4])} end
return {1, redis.call('HDEL', pkey, f)}
"""
)


def webhook_field(group: str, name: str) -> bytes:
    """The policy hash's field of a webhook (as WEBHOOK and FORGET_GROUP spell it)."""
    g = encode(group)
    return b"w:%d:" % len(g) + g + encode(name)


class Webhooks:
    """The Backend's webhook methods, on ``router`` (``delivery`` finds the policy hashes)."""

    def __init__(self, router: Router, delivery: Delivery) -> None:
        self._router = router
        self._delivery = delivery

    async def _script(self, key: str, words: list[Arg], write: bool) -> Raw:
        line = eval_line(WEBHOOK, [encode(key), encode(policy_key(key))], words)
        if write:
            return await self._router.write(key, *line)
        return await self._router.call(key, *line)

    async def _of_stream(self, key: str, group: str | None) -> list[Webhook]:
        words: list[Arg] = ["list", encode(group or ""), "0" if group is None else "1"]
        raw = await self._script(key, words, write=False)
        return [
            Webhook.from_json(key, decode(raw[i]), decode(raw[i + 1]), json.loads(raw[i + 2]))
            for i in range(0, len(raw or []), 3)
        ]

    async def webhooks(self, key: str | None = None, group: str | None = None) -> list[Webhook]:
        if key is not None:
            out = await self._of_stream(key, group)
        else:
            out = []
            for stream in await self._delivery.policy_streams():
                out += await self._of_stream(stream, None)
        out.sort(key=lambda h: (utf8(h.stream), utf8(h.group), utf8(h.name)))
        return out

    async def set_webhook(self, hook: Webhook) -> bool:
        value = json.dumps(hook.as_json(), separators=(",", ":"))
        words: list[Arg] = ["set", encode(hook.group), encode(hook.name), value]
        raw = await self._script(hook.stream, words, write=True)
        if raw[0] == 0:
            raise no_such_group(hook.stream, hook.group)
        return bool(raw[1])

    async def delete_webhook(self, key: str, group: str, name: str) -> bool:
        raw = await self._script(key, ["del", encode(group), encode(name)], write=True)
        if raw[0] == 0:
            raise no_such_group(key, group)
        return bool(raw[1])
