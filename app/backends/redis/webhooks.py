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

Their health (app/engine/webhook_health.py) is kept apart, in a hash of its own in the
stream's slot (``health_key``), by webhook and URL (``health_field``), as the text
``health_text`` writes; ``HEALTH`` merges an update into it in one script (one call per
update), so every front-end's attempts add up. The hash expires ``HEALTH_TTL_MS`` after its
last update, so the health of webhooks gone with their stream or group does not stay.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from redis.crc import key_slot

from app.backends.redis import lua
from app.backends.redis.delivery import RedisDelivery, policy_key
from app.backends.redis.idempotent import slot_tag
from app.backends.redis.lua import Reply
from app.backends.redis.parse import Arg, Raw, decode, encode
from app.backends.redis.scripts import eval_line
from app.engine.commands.groups import no_such_group
from app.engine.delivery import Webhook
from app.engine.listpack import utf8
from app.engine.webhook_health import HealthUpdate, WebhookHealth, health_from_text

__all__ = ["HEALTH", "WEBHOOK", "Webhooks", "health_field", "health_key", "webhook_field"]

WEBHOOK = lua.script("webhook")  # lua/webhook.lua


HEALTH_PREFIX = "xs:wh:"
HEALTH_TTL_MS = 7 * 24 * 3600 * 1000

HEALTH = lua.script("health")  # lua/health.lua


def health_key(stream: str) -> str:
    """The hash of the health of ``stream``'s webhooks, in its slot (as ``policy_key``)."""
    return f"{HEALTH_PREFIX}{{{slot_tag(key_slot(encode(stream)))}}}:{stream}"


def health_field(hook: Webhook) -> bytes:
    """A webhook's field in ``health_key``: its group, name and URL, each length-prefixed but
    the last, so no names make two fields alike."""
    n = encode(hook.name)
    return webhook_field(hook.group, "") + b"%d:" % len(n) + n + encode(hook.url)


def webhook_field(group: str, name: str) -> bytes:
    """The policy hash's field of a webhook (as WEBHOOK and FORGET_GROUP spell it)."""
    g = encode(group)
    return b"w:%d:" % len(g) + g + encode(name)


class Webhooks(RedisDelivery):
    """The Backend's webhook methods: kept in the policy hashes, beside the groups' policies
    (``RedisDelivery`` finds those hashes)."""

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
            for stream in await self.policy_streams():
                out += await self._of_stream(stream, None)
        out.sort(key=lambda h: (utf8(h.stream), utf8(h.group), utf8(h.name)))
        return out

    async def set_webhook(self, hook: Webhook) -> bool:
        value = json.dumps(hook.as_json(), separators=(",", ":"))
        words: list[Arg] = ["set", encode(hook.group), encode(hook.name), value]
        raw = await self._script(hook.stream, words, write=True)
        if raw[0] == Reply.NO_GROUP:
            raise no_such_group(hook.stream, hook.group)
        return bool(raw[1])

    async def delete_webhook(self, key: str, group: str, name: str) -> bool:
        raw = await self._script(key, ["del", encode(group), encode(name)], write=True)
        if raw[0] == Reply.NO_GROUP:
            raise no_such_group(key, group)
        return bool(raw[1])

    async def webhook_health(self, hooks: Sequence[Webhook]) -> list[WebhookHealth | None]:
        out: list[WebhookHealth | None] = [None] * len(hooks)
        by_stream: dict[str, list[int]] = {}
        for i, hook in enumerate(hooks):
            by_stream.setdefault(hook.stream, []).append(i)
        for stream, at in by_stream.items():
            fields = [health_field(hooks[i]) for i in at]
            raw = await self._router.call(stream, "HMGET", encode(health_key(stream)), *fields)
            for i, value in zip(at, raw, strict=True):
                out[i] = None if value is None else health_from_text(decode(value))
        return out

    async def record_webhook_health(self, hook: Webhook, update: HealthUpdate) -> None:
        def n(v: int | None) -> str:
            return "" if v is None else str(v)

        words: list[Arg] = [
            health_field(hook),
            "1" if update.reset else "0",
            str(update.failures),
            n(update.last_status),
            b"" if update.last_error is None else b"!" + _text(update.last_error),
            n(update.attempt_at_ms),
            n(update.success_at_ms),
            str(HEALTH_TTL_MS),
        ]
        line = eval_line(HEALTH, [encode(health_key(hook.stream))], words)
        await self._router.call_plain(hook.stream, *line)


def _text(error: str) -> bytes:
    """An error's text as bytes: any lone surrogate other than a byte's kept visibly."""
    try:
        return encode(error)
    except UnicodeEncodeError:
        return error.encode("utf-8", "backslashreplace")
