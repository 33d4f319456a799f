"""Helpers shared by the HTTP-protocol tests (Upstash REST shape checks, base64, error texts).

Kept out of ``tests/conftest.py`` on purpose: that file is owned elsewhere, and these helpers only
describe what a reply of the Upstash REST protocol must look like.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Coroutine
from typing import Any, TypeVar

import httpx

T = TypeVar("T")

# Redis 7.0.15's own texts, checked with redis-cli (re-checked live by `redis`-marked tests).
WRONG_ARITY_XADD = "ERR wrong number of arguments for 'xadd' command"
NOT_AN_INTEGER = "ERR value is not an integer or out of range"
XADD_ID_TOO_SMALL = (
    "ERR The ID specified in XADD is equal or smaller than the target stream top item"
)
XADD_ID_ZERO = "ERR The ID specified in XADD must be greater than 0-0"
NOGROUP_WHILE_BLOCKED = "NOGROUP the consumer group this client was blocked on no longer exists"
STREAM_DELETED_WHILE_BLOCKED = "UNBLOCKED the stream key no longer exists"


def json_body(resp: httpx.Response) -> Any:
    """The parsed JSON body; fails on HTML, empty or non-JSON bodies (framework default pages)."""
    assert resp.content, f"empty body with status {resp.status_code}"
    ctype = resp.headers.get("content-type", "")
    assert ctype.startswith("application/json"), (resp.status_code, ctype, resp.text[:200])
    try:
        return resp.json()
    except ValueError as e:  # pragma: no cover - the assertion message is the point
        raise AssertionError(f"body is not JSON: {resp.text[:200]!r}") from e


def error_text(resp: httpx.Response, *statuses: int) -> str:
    """Assert ``resp`` is an Upstash error reply ``{"error": "<text>"}`` and return the text.

    ``statuses`` lists the acceptable HTTP codes (400 when not given). FastAPI's ``{"detail": ...}``
    or any extra key fails here, because Upstash clients only look at ``error``/``result``.
    """
    allowed = statuses or (400,)
    body = json_body(resp)
    assert isinstance(body, dict), body
    assert set(body) == {"error"}, body
    assert isinstance(body["error"], str), body
    assert body["error"], body
    assert resp.status_code in allowed, (resp.status_code, body)
    return body["error"]


def result_of(resp: httpx.Response) -> Any:
    """Assert ``resp`` is a successful single-command reply ``{"result": ...}`` (200)."""
    body = json_body(resp)
    assert isinstance(body, dict), body
    assert set(body) == {"result"}, (resp.status_code, body)
    assert resp.status_code == 200, (resp.status_code, body)
    return body["result"]


def b64(text: str) -> str:
    """Base64 of the UTF-8 bytes of ``text``, as Upstash sends it."""
    return base64.b64encode(text.encode()).decode()


def b64_reply(value: Any) -> Any:
    """What ``Upstash-Encoding: base64`` makes of a plain reply.

    Every string is encoded, recursively, except a bare ``"OK"`` (the simple-string status reply);
    integers and nulls are left as they are.
    """
    if isinstance(value, str):
        return value if value == "OK" else b64(value)
    if isinstance(value, list):
        return [b64_reply(v) for v in value]
    return value


class RespError(str):
    """An error reply read straight off the socket, with its code prefix (``ERR ...``) intact."""

    __slots__ = ()


def redis_exact(host: str, port: int, db: int, *commands: list[str]) -> list[Any]:
    """Send ``commands`` to redis-server over raw RESP2 and return the replies, error texts whole.

    redis-py strips the ``ERR `` prefix from error messages (its ``str(ResponseError)``), which is
    exactly the part these tests compare, so this speaks the protocol itself.
    """
    import socket

    with socket.create_connection((host, port), timeout=5) as sock:
        f = sock.makefile("rb")
        out: list[Any] = []
        for cmd in [["SELECT", str(db)], *commands]:
            parts = [f"*{len(cmd)}\r\n".encode()]
            for a in cmd:
                b = a.encode()
                parts.append(b"$%d\r\n%b\r\n" % (len(b), b))
            sock.sendall(b"".join(parts))
            out.append(_read_reply(f))
        return out[1:]


def _read_reply(f: Any) -> Any:
    line: bytes = f.readline()
    kind, rest = line[:1], line[1:-2].decode()
    if kind == b"+":
        return rest
    if kind == b"-":
        return RespError(rest)
    if kind == b":":
        return int(rest)
    if kind == b"$":
        n = int(rest)
        if n < 0:
            return None
        data: bytes = f.read(n + 2)
        return data[:-2].decode()
    if kind == b"*":
        n = int(rest)
        return None if n < 0 else [_read_reply(f) for _ in range(n)]
    raise AssertionError(f"unexpected RESP line {line!r}")


class Background:
    """Tasks started by a test; whatever is still running at teardown is cancelled and awaited.

    A failing blocking test would otherwise leave a pending request task behind, and its
    "Task was destroyed but it is pending" warning (an error under ``filterwarnings = error``)
    would be blamed on some later test.
    """

    def __init__(self) -> None:
        self.tasks: list[asyncio.Task[Any]] = []

    def spawn(self, coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        task = asyncio.create_task(coro)
        self.tasks.append(task)
        return task

    async def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
