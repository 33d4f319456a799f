"""Idempotency-Key: a retried write runs once, and every retry gets the first response.

HTTP clients retry: the Upstash SDKs after a network error, browsers and functions after a
timeout. A write whose first attempt was applied must not be applied again. Following the
IETF httpapi draft "The Idempotency-Key HTTP Header Field", a POST, PUT, PATCH or DELETE that
carries ``Idempotency-Key: <1-255 printable characters>`` (a structured-field string, quoted,
is taken too) runs once; its response (status, headers, body) is kept with a fingerprint of
the request, and a retry with the same key and the same request gets it again, byte for
byte, with ``Idempotent-Replayed: true``. The same key with another request is 422; a retry
while the first still runs is 409 with ``Retry-After``.

Keys are scoped per credential: the stored name is the credential's identity
(``Principal.identity``: an API key's id, a JWT's issuer and ``sub``, a JWT without ``sub``
the token itself) and the key, so one tenant can neither replay nor probe another's. The
fingerprint covers the method, the path and query, the body and that identity.

An answer the key already has (the kept response, 422, 409) is not sent from here: the app
runs with it in the scope, and the route sends it once its access check passed for the
caller who sends this request (app/api/replay). Identity is who; the grant, which may differ
between two tokens of one ``sub`` or change between attempts, is asked every time.

This layer is a pure ASGI middleware inside the access gate (it needs the principal). It
buffers the body (within ``max_body_bytes``; a larger one passes through to be refused by
the route), asks the backend (``Backend.idempotent``), runs the app with the body replayed,
and keeps what the app answered unless it was the service's trouble (5xx), nobody's (499)
or a spent budget (429, app/api/meter.py: nothing ran, and the wait passes): those leave
nothing kept, so a retry runs again, and on the Redis backend it then meets the
replies its first attempt's writes got (app/backends/redis/idempotent.py). How the kept
response is made durable with the write is the backend's (app/backends/idempotency.py).
"""

from __future__ import annotations

import hashlib
import re
import struct
from urllib.parse import unquote_to_bytes

import orjson
from starlette.routing import Router
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.access_gate import principal_of, tenant_of
from app.api.errors import error_body
from app.api.replay import REPLAYED, SCOPE_KEY, KeyAnswer
from app.api.rest.fallback import unrouted
from app.api.rest.paths import table_of
from app.api.services import Services
from app.backends.errors import BackendUnavailable, StorageUnavailable
from app.backends.idempotency import KeyReused, StillRunning, Ticket
from app.engine.commands.table import lookup
from app.engine.errors import CommandError

__all__ = ["HEADER", "Idempotency", "decode_response", "encode_response"]

HEADER = b"idempotency-key"
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
MAX_KEY = 255
# Headers a kept response does not carry: they describe one exchange, not the answer.
_NOT_KEPT = frozenset({b"date", b"server", b"x-request-id", b"connection", b"keep-alive"})
_HEAD = struct.Struct(">HI")  # status, length of the headers' JSON


def encode_response(status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> bytes:
    """A response as kept: status, headers (latin-1, as HTTP carries them), body."""
    kept = orjson.dumps([[k.decode("latin-1"), v.decode("latin-1")] for k, v in headers])
    return _HEAD.pack(status, len(kept)) + kept + body


def decode_response(data: bytes) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    status, size = _HEAD.unpack_from(data)
    start = _HEAD.size
    pairs = orjson.loads(data[start : start + size])
    headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in pairs]
    return status, headers, data[start + size :]


_KEY = re.compile(rb"[\x20-\x7e]{1,%d}" % MAX_KEY)


def parse_key(raw: bytes) -> str | None:
    """The key, or None when it is not 1-255 printable ASCII characters. A structured-field
    string (``"abc"``, as the draft spells it) is taken without its quotes."""
    if len(raw) >= 2 and raw[0] == raw[-1] == 0x22:  # '"'
        raw = raw[1:-1]
    return raw.decode("ascii") if _KEY.fullmatch(raw) else None


class Idempotency:
    def __init__(self, app: ASGIApp, services: Services) -> None:
        self.app = app
        self.services = services

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in WRITE_METHODS:
            await self.app(scope, receive, send)
            return
        raw = next((v for k, v in scope["headers"] if k == HEADER), None)
        if raw is None:
            await self.app(scope, receive, send)
            return
        key = parse_key(raw)
        if key is None:
            await _answer_error(
                scope,
                send,
                400,
                "ERR Idempotency-Key must be 1 to 255 printable ASCII characters",
            )
            return
        body, more = await _buffer(receive, self.services.settings.max_body_bytes)
        replay = _Replay(body, more, receive)
        if more is not None:  # past the body limit: the route refuses it (413), nothing runs
            await self.app(scope, replay.receive, send)
            return
        await self._run(scope, replay, send, key, body)

    async def _run(self, scope: Scope, replay: _Replay, send: Send, key: str, body: bytes) -> None:
        services = self.services
        metrics = services.metrics
        scope_name = principal_of(scope).identity
        ticket = Ticket(
            name=f"{scope_name}\n{key}",
            fingerprint=_fingerprint(scope, scope_name, body),
            anchor=_anchor(scope, body) if services.backend.name == "redis-cluster" else None,
        )
        captured = _Captured()
        answer: KeyAnswer | None = None
        try:
            async with services.backend.idempotent(ticket) as run:
                if run.stored is not None:
                    answer = KeyAnswer(*decode_response(run.stored), replayed=True)
                else:
                    await self.app(scope, replay.receive, captured.send)
                    routed = scope.get("endpoint") is not unrouted  # the fallback's 404 / 405
                    if (
                        routed
                        and captured.complete
                        and captured.status < 500
                        and captured.status not in (429, 499)
                    ):
                        run.keep(
                            encode_response(captured.status, captured.headers, captured.body())
                        )
                        metrics.idempotent("resumed" if run.resumed else "kept")
        except KeyReused:
            answer = _error_answer(
                scope,
                422,
                "ERR this Idempotency-Key was used for a different request: use a new key for"
                " a new request",
            )
            outcome = "reused"
        except StillRunning:
            answer = _error_answer(
                scope,
                409,
                "ERR the first request with this Idempotency-Key is still running: retry later",
                retry_after=1,
            )
            outcome = "running"
        except (StorageUnavailable, BackendUnavailable) as e:
            # Not acknowledged: a kept response (if any) is there for the retry once it is back.
            await _answer_error(scope, send, 503, getattr(e, "text", str(e)), retry_after=1)
            return
        else:
            outcome = "replayed"
        if answer is not None:
            # The route sends the key's answer once its access check passed for this caller
            # (app/api/replay); a caller it refuses, or a method or path no route serves,
            # gets the app's own answer, as without the key.
            scope[SCOPE_KEY] = answer
            await self.app(scope, replay.receive, send)
            if answer.taken:
                metrics.idempotent(outcome)
            return
        headers = [*captured.headers, REPLAYED] if run.resumed else captured.headers
        await _send(send, captured.status, headers, captured.body())


def _fingerprint(scope: Scope, scope_name: str, body: bytes) -> bytes:
    """What identifies the request: method, path, query, credential, body (lengths first,
    so no two requests share the bytes hashed)."""
    method = scope["method"].encode()
    path = scope.get("raw_path") or scope["path"].encode("utf-8", "surrogateescape")
    query = scope.get("query_string", b"")
    who = scope_name.encode("utf-8", "surrogateescape")
    head = _LENGTHS.pack(len(method), len(path), len(query), len(who))
    return hashlib.sha256(b"".join((head, method, path, query, who, body))).digest()


_LENGTHS = struct.Struct(">4Q")


def _anchor(scope: Scope, body: bytes) -> str | None:
    """A key the request names, for Redis Cluster to keep its response in that key's slot
    (so one script writes both): the stream of the /v1 route that serves it, or the command
    endpoint's first key. Which route serves it is the app's routing's to say (``table_of``),
    not this layer's: it runs before the routing. Keys are the server's: a credential's
    prefix in front (app/access/prefix.py), as the request will run them."""
    tenant = tenant_of(scope)
    router = getattr(scope.get("app"), "router", None)
    served = table_of(router).serving(scope) if isinstance(router, Router) else None
    route = getattr(served[0], "path", None) if served is not None else None
    if served is not None and isinstance(route, str) and route.startswith("/v1"):
        stream = served[1].get("path_params", {}).get("stream")
        return tenant.inward(stream) if stream else None
    path: str = scope["path"]
    try:
        if route in ("/pipeline", "/multi-exec"):
            commands = [[str(a) for a in c] for c in orjson.loads(body) if isinstance(c, list)]
        elif route == "/":
            commands = [[str(a) for a in orjson.loads(body)]]
        else:
            raw = scope.get("raw_path") or path.encode()
            commands = [
                [
                    unquote_to_bytes(p).decode("utf-8", "surrogateescape")
                    for p in raw.split(b"/")
                    if p
                ]
            ]
        for args in commands:
            if not args:
                continue
            cmd = lookup(args)
            keys = cmd.keys(tenant.argv(cmd, args))
            if keys:
                return keys[0]
    except (CommandError, ValueError, TypeError, orjson.JSONDecodeError):
        return None
    return None


async def _buffer(receive: Receive, limit: int) -> tuple[bytes, list[Message] | None]:
    """The whole body, or (past ``limit``) what was read so far and the messages to replay."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), [message]
        chunk = message.get("body", b"")
        size += len(chunk)
        chunks.append(chunk)
        if size > limit:
            return b"", [{"type": "http.request", "body": b"".join(chunks), "more_body": True}]
        if not message.get("more_body", False):
            return b"".join(chunks), None


class _Replay:
    """The request's body again for the app, then the client's own messages (disconnect)."""

    def __init__(self, body: bytes, pending: list[Message] | None, receive: Receive) -> None:
        self._messages: list[Message] = (
            list(pending) if pending is not None else [{"type": "http.request", "body": body}]
        )
        self._receive = receive

    async def receive(self) -> Message:
        if self._messages:
            return self._messages.pop(0)
        return await self._receive()


class _Captured:
    """What the app answered, held until it is kept."""

    def __init__(self) -> None:
        self.status = 500
        self.headers: list[tuple[bytes, bytes]] = []
        self.chunks: list[bytes] = []
        self.complete = False

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.headers = [  # Starlette's names are lower case already
                (k, v) for k, v in message.get("headers", []) if k not in _NOT_KEPT
            ]
        elif message["type"] == "http.response.body":
            self.chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                self.complete = True

    def body(self) -> bytes:
        return b"".join(self.chunks)


async def _send(send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _error_answer(
    scope: Scope, status: int, text: str, retry_after: int | None = None
) -> KeyAnswer:
    media, body = error_body(scope["path"], status, text)
    headers: list[tuple[bytes, bytes]] = [
        (b"content-type", media.encode()),
        (b"content-length", str(len(body)).encode()),
    ]
    if retry_after is not None:
        headers.append((b"retry-after", str(retry_after).encode()))
    return KeyAnswer(status, headers, body, replayed=False)


async def _answer_error(
    scope: Scope, send: Send, status: int, text: str, retry_after: int | None = None
) -> None:
    answer = _error_answer(scope, status, text, retry_after)
    await _send(send, answer.status, answer.headers, answer.body)
