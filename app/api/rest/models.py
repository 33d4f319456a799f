"""The Redis command each REST and SSE operation models, by operationId.

It is what the permission check asks about (``app.access.check_keys``: the command's access
category from the command table, with the stream the path names as its key), and it is
written into the OpenAPI document as ``x-redis-command``. A /v1 route whose operation is
missing here cannot be registered (``RestRoute`` raises), so no operation goes unchecked.
"""

from __future__ import annotations

from app.engine.commands.table import Access, Command, Flag, named

__all__ = ["CALLER", "MODELS", "SERVICE", "model_of"]

CALLER = {
    "acl|whoami": Command("acl|whoami", 2, frozenset(), access=Access.NONE),
    "acl|list": Command("acl|list", 2, frozenset(), access=Access.ADMIN),
}
"""Operations about credentials rather than a stream, modelled on Redis's ACL WHOAMI, which
any authenticated connection may run, and ACL LIST, the admin's. The engine knows no
callers, so the commands are not in its table (the command endpoint does not answer them);
their entries here say what the one check needs: no key, and no verb or ``admin``."""

_READS = frozenset({Flag.READONLY})
_WRITES = frozenset({Flag.WRITE})
SERVICE = {
    c.name: c
    for c in (
        Command("xpolicy|get", 4, _READS, access=Access.READ),
        Command("xpolicy|set", -5, _WRITES, access=Access.ADMIN),
        Command("xpolicy|del", 4, _WRITES, access=Access.ADMIN),
        Command("xretention|get", 3, _READS, access=Access.READ),
        Command("xretention|set", -4, _WRITES, access=Access.ADMIN),
        Command("xretention|del", 3, _WRITES, access=Access.ADMIN),
        Command("xredrive", -2, _WRITES, access=Access.WRITE),
        Command("xwebhook|list", 4, _READS, access=Access.READ),
        Command("xwebhook|get", 5, _READS, access=Access.READ),
        Command("xwebhook|set", -6, _WRITES, access=Access.ADMIN),
        Command("xwebhook|pause", 6, _WRITES, access=Access.ADMIN),
        Command("xwebhook|del", 5, _WRITES, access=Access.ADMIN),
    )
}
"""The service's own operations (issue 27: delivery policies, retention, redrive; issue 28:
webhooks), which no Redis command models and the command endpoint does not answer: their
entries say what the one check needs. Reading a policy, a retention or a webhook is ``read``
on the stream; setting, pausing or removing one is ``admin`` (a policy also needs ``write``
on its dead-letter stream, checked by the route, as that stream is in the body); a redrive
is ``write`` on the dead-letter stream here and, in its route, on every stream it appends
to."""

MODELS = {
    "list_streams": "scan",
    "get_stream": "xinfo|stream",
    "delete_stream": "del",
    "trim_stream": "xtrim",
    "set_last_id": "xsetid",
    "configure_stream": "xcfgset",
    "append_entries": "xadd",
    "list_entries": "xrange",  # its long poll is XREAD BLOCK: the same verb, read
    "get_entry": "xrange",
    "delete_entry": "xdel",  # XDELEX with a `policy`: the same verb, write
    "delete_entries": "xdel",
    "read_streams": "xread",
    "list_groups": "xinfo|groups",
    "create_group": "xgroup|create",
    "get_group": "xinfo|groups",
    "set_group_id": "xgroup|setid",
    "delete_group": "xgroup|destroy",
    "list_consumers": "xinfo|consumers",
    "create_consumer": "xgroup|createconsumer",
    "delete_consumer": "xgroup|delconsumer",
    "read_group": "xreadgroup",
    "ack_entries": "xack",
    "ack_delete_entries": "xackdel",  # consume and write: it acknowledges and deletes
    "nack_entries": "xnack",
    "get_pending": "xpending",
    "claim_entries": "xclaim",
    "autoclaim_entries": "xautoclaim",
    "tail_stream_events": "xread",
    "tail_streams_events": "xread",
    "consume_group_events": "xreadgroup",
    "whoami": "acl|whoami",
    "list_key_usage": "acl|list",
    "get_policy": "xpolicy|get",
    "set_policy": "xpolicy|set",
    "delete_policy": "xpolicy|del",
    "get_retention": "xretention|get",
    "set_retention": "xretention|set",
    "delete_retention": "xretention|del",
    "redrive_entries": "xredrive",
    "list_webhooks": "xwebhook|list",
    "get_webhook": "xwebhook|get",
    "set_webhook": "xwebhook|set",
    "pause_webhook": "xwebhook|pause",
    "delete_webhook": "xwebhook|del",
}


def model_of(operation_id: str) -> Command:
    """The command table's entry for the command an operation models."""
    try:
        name = MODELS[operation_id]
        return CALLER.get(name) or SERVICE.get(name) or named(name)
    except KeyError:
        raise LookupError(
            f"REST operation {operation_id!r} names no Redis command in app/api/rest/models.py"
        ) from None
