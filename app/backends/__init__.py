"""Backends: what the surfaces call (``Backend``) and what stands behind it."""

from app.backends.base import Backend, ClientGone, Gone, JsonReply

__all__ = ["Backend", "ClientGone", "Gone", "JsonReply"]
