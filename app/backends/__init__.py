"""Backends: what the surfaces call (``Backend``) and what stands behind it."""

from app.backends.base import Backend, Gone, JsonReply

__all__ = ["Backend", "Gone", "JsonReply"]
