"""The Lua scripts of delivery policies and retention, by name (their text: lua/; delivery.py
says when each runs).

A group's policy lives in a hash in its stream's slot (``delivery.policy_key``), so one
script reads it and moves entries atomically: several front-ends never move an entry twice.
The hash's fields, by group name ``g``: ``p:g`` the policy (``DeliveryPolicy.as_json``),
``r:g`` / ``d:g`` its counters (redelivered, dead-lettered), ``n:g`` the last release
number, ``o:g\\0id`` for a released entry: ``seq\\0consumer`` (its release's number, for
FIFO among releases of one millisecond, and the consumer that held it); and the group's
webhooks (``webhooks.py``: ``w:<length>:g<name>``), which FORGET_GROUP removes too. The
rules mirror app/engine/delivery.py, which defines them.
"""

from __future__ import annotations

from app.backends.redis import lua

POLICY_HELPERS = lua.include("policy_helpers")  # lua/includes/policy_helpers.lua

POLICY_READ_BODY = lua.include("policy_read_body")  # lua/includes/policy_read_body.lua


def policy_read_script(fallback_source: str | None) -> str:
    """``POLICY_READ_BODY`` with ``fallback_source`` (a script of scripts.py) inlined."""
    if fallback_source is None:
        head = "local fallback = nil\n"
    else:
        head = f"local function fallback(KEYS, ARGV)\n{fallback_source}\nend\n"
    return POLICY_HELPERS + head + POLICY_READ_BODY


XNACK = lua.script("xnack")  # lua/xnack.lua

POLICY = lua.script("policy")  # lua/policy.lua

FORGET_GROUP = lua.script("forget_group")  # lua/forget_group.lua

REDRIVE = lua.script("redrive")  # lua/redrive.lua

RETENTION = lua.script("retention")  # lua/retention.lua
