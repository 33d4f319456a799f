"""Webhooks (a group's push consumers) as engine operations; the type is
``app.engine.delivery.Webhook``, the delivery is app/delivery's.

A webhook lives in its group (``ConsumerGroup.webhooks``), so it goes with it: XGROUP
DESTROY, DEL, FLUSHALL drop it, RENAME carries it (the reads below give it its stream's
current name). Setting and removing one are journaled (``WebhookSet``) and snapshotted with
the group. None of these is a Redis command; the surfaces reach them through the Backend.
"""

from __future__ import annotations

from dataclasses import replace

from app.engine.commands.groups import find_group
from app.engine.delivery import Webhook
from app.engine.effects import WebhookSet
from app.engine.keyspace import Keyspace
from app.engine.listpack import utf8

__all__ = ["delete_webhook", "set_webhook", "webhooks"]


def set_webhook(ks: Keyspace, hook: Webhook) -> bool:
    """Create or replace the webhook ``hook.name`` of its group; whether it was new
    (NOGROUP when the group is missing)."""
    _, g = find_group(ks, hook.stream, hook.group)
    new = hook.name not in g.webhooks
    g.webhooks[hook.name] = hook
    ks.record(WebhookSet(key=hook.stream, group=hook.group, name=hook.name, webhook=hook))
    return new


def delete_webhook(ks: Keyspace, key: str, group: str, name: str) -> bool:
    """Remove a webhook; whether there was one (NOGROUP when the group is missing). Its
    consumer and what that holds stay, as any consumer's do."""
    _, g = find_group(ks, key, group)
    if g.webhooks.pop(name, None) is None:
        return False
    ks.record(WebhookSet(key=key, group=group, name=name, webhook=None))
    return True


def webhooks(ks: Keyspace, key: str | None = None, group: str | None = None) -> list[Webhook]:
    """The webhooks set: every one (``key`` None), a stream's, or a group's (none for a
    missing stream or group), ordered by stream, group and name as bytes (Redis's order)."""
    if key is None:
        streams = list(ks.streams.items())
    else:
        stream = ks.get(key)
        streams = [] if stream is None else [(key, stream)]
    out: list[Webhook] = []
    for name, stream in streams:
        for g in stream.groups.values():
            if group is not None and g.name != group:
                continue
            for hook in g.webhooks.values():
                # A RENAME moved the group: the hook takes its stream's name now.
                out.append(hook if hook.stream == name else replace(hook, stream=name))
    out.sort(key=lambda h: (utf8(h.stream), utf8(h.group), utf8(h.name)))
    return out
