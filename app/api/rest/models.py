"""The Redis command each REST and SSE operation models, by operationId.

It is what the permission check asks about (``app.access.check_keys``: the command's access
category from the command table, with the stream the path names as its key), and it is
written into the OpenAPI document as ``x-redis-command``. A /v1 route whose operation is
missing here cannot be registered (``RestRoute`` raises), so no operation goes unchecked.
"""

from __future__ import annotations

from app.engine.commands.table import Access, Command, named

__all__ = ["CALLER", "MODELS", "model_of"]

CALLER = {"acl|whoami": Command("acl|whoami", 2, frozenset(), access=Access.NONE)}
"""Operations about the caller rather than a stream, modelled on Redis's ACL WHOAMI, which
any authenticated connection may run. The engine knows no callers, so the command is not in
its table (the command endpoint does not answer it); its entry here says what the one check
needs: no verb, no key."""

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
}


def model_of(operation_id: str) -> Command:
    """The command table's entry for the command an operation models."""
    try:
        name = MODELS[operation_id]
        return CALLER[name] if name in CALLER else named(name)
    except KeyError:
        raise LookupError(
            f"REST operation {operation_id!r} names no Redis command in app/api/rest/models.py"
        ) from None
