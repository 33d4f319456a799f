"""Names in /v1 paths: split on the raw ``/``, then each segment percent-decoded.

A stream key, group or consumer name is any bytes, ``/`` included (the Durable Streams
surface makes keys like ``v1/stream/orders``). A client puts such a name in one path segment,
``/`` as ``%2F``. The server decodes ``scope["path"]`` before routing, so ``%2F`` would become
a separator and the route would not match. So the path is read from the raw bytes instead, in
two steps that meet at one spelling:

- ``RawPaths`` (middleware) rewrites a /v1 request's ``scope["path"]``: each raw segment is
  percent-decoded, keeping bytes that are not UTF-8 (``unquote_name``), and then the two
  characters that would change how the path splits or decodes, ``%`` and ``/``, are written
  back as ``%25`` and ``%2F`` (``_escaped``). Every layer and route within sees segments that
  hold no ``/`` of a name, so routing, the route table's depth index, the ``Allow`` of the
  /v1 fallback and the access check work as for any name.
- ``Segment`` (the ``segment`` path convertor) turns a matched segment back into the name.
  ``RestRoute`` gives it to every plain parameter of a /v1 path (``segmented``): one rule for
  every REST and SSE route, which no route can forget.

A literal ``/`` stays a separator: ``/v1/streams/a/b/entries`` matches no route (404), it is
never the stream ``a/b``. The server's own scope is left as it was (its access log cannot
quote a lone surrogate); the app gets a copy.
"""

from __future__ import annotations

import re
from typing import Any

from starlette.convertors import StringConvertor, register_url_convertor
from starlette.types import ASGIApp, Receive, Scope, Send

from app.api.binary import quote_name, unquote_name

__all__ = ["SEGMENT", "RawPaths", "Segment", "segmented"]

REST_PREFIX = "/v1"
SEGMENT = "segment"


def _escaped(name: str) -> str:
    """A decoded segment with the characters that would split or decode again escaped."""
    return name.replace("%", "%25").replace("/", "%2F")


_ESCAPE = re.compile("%25|%2F")
_UNESCAPED = {"%25": "%", "%2F": "/"}


def routed_path(path: str) -> str:
    """A raw (still percent-encoded) path as routing sees it: each segment decoded, with the
    ``%`` and ``/`` of names escaped again (``_escaped``)."""
    return "/".join(_escaped(unquote_name(part)) for part in path.split("/"))


class Segment(StringConvertor):
    """One path segment holding a name (the ``segment`` convertor): it matches as ``str``
    does, and gives the name with ``%2F`` and ``%25`` decoded, the only escapes ``RawPaths``
    leaves in a path. A URL built from a route quotes the name whole (``quote_name``)."""

    def convert(self, value: str) -> str:
        return _ESCAPE.sub(lambda m: _UNESCAPED[m[0]], value)

    def to_string(self, value: Any) -> str:
        text = str(value)
        if not text:
            raise ValueError("a name in a path must not be empty")
        return quote_name(text)


register_url_convertor(SEGMENT, Segment())

_PLAIN = re.compile(r"{(\w+)}")


def segmented(path: str) -> str:
    """A route path with each plain ``{param}`` made a ``{param:segment}`` (a parameter that
    names a convertor keeps it: the /v1 fallback's ``{rest:path}``)."""
    return _PLAIN.sub(rf"{{\1:{SEGMENT}}}", path)


class RawPaths:
    """Route /v1 requests on the raw path (``routed_path``).

    Also keeps bytes that are not UTF-8: the server decodes ``scope["path"]`` replacing them
    with U+FFFD, so ``/v1/streams/%FF`` and ``/v1/streams/%FE`` would both be one stream
    ``"\\ufffd"``. A path with no ``%`` is left alone: it holds no escape to keep.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            raw: bytes | None = scope.get("raw_path")
            root: str = scope.get("root_path", "")
            path = scope["path"] if raw is None else raw.decode("latin-1")
            if "%" in path and path[len(root) :].startswith(REST_PREFIX):
                if raw is None:  # already decoded: only a name's ``%`` to escape
                    routed = "/".join(_escaped(part) for part in path.split("/"))
                else:
                    routed = routed_path(path)
                inner = {**scope, "path": routed}
                try:
                    await self.app(inner, receive, send)
                finally:
                    # The route matched, for the layers outside (metrics, the access line).
                    for key in ("route", "endpoint"):
                        if key in inner:
                            scope[key] = inner[key]
                return
        await self.app(scope, receive, send)
