"""Exact replies from redis-server, and ``ExactPair``, which compares xstreams against them.

redis-py is not used to read replies: its error parser strips the code of some errors
(``ERR unknown command ...`` reaches a test as ``unknown command ...``) and it speaks RESP3.
The Upstash protocol carries Redis's error text verbatim, so the comparison needs
redis-server's own bytes: ``RespClient`` speaks RESP2 over a plain socket and keeps every
reply exactly as the server sent it.
"""

from __future__ import annotations

import re
import socket
from typing import Any

import hiredis
import redis

from tests.conftest import ReplyError
from tests.differential.support import MASKED_KEYS, mask

ID_RE = re.compile(r"^\d+-\d+$")


class RespClient:
    """A minimal RESP2 client: one socket, replies as str/int/None/list/ReplyError, parsed
    by hiredis (C: the random walks read millions of elements). Bytes that are not UTF-8
    (a DUMP payload) come back as lone surrogates, the form xstreams carries them in."""

    def __init__(self, host: str, port: int, db: int = 0) -> None:
        self.sock = socket.create_connection((host, port), timeout=10)
        self.reader = hiredis.Reader(
            encoding="utf-8", errors="surrogateescape", replyError=ReplyError
        )
        if db:
            assert self("SELECT", db) == "OK"

    def __call__(self, *args: Any) -> Any:
        return self.pipeline([args])[0]

    def pipeline(self, commands: list[tuple[Any, ...]]) -> list[Any]:
        """Sends all ``commands`` at once, then reads their replies in order."""
        out = []
        for args in commands:
            parts = [str(a).encode("utf-8", "surrogateescape") for a in args]
            out.append(b"*%d\r\n" % len(parts))
            for p in parts:
                out.append(b"$%d\r\n%s\r\n" % (len(p), p))
        self.sock.sendall(b"".join(out))
        return [self._read() for _ in commands]

    def _read(self) -> Any:
        reply = self.reader.gets()
        while reply is False:
            data = self.sock.recv(1 << 16)
            if not data:
                raise ConnectionError("connection closed by redis-server")
            self.reader.feed(data)
            reply = self.reader.gets()
        return reply

    def close(self) -> None:
        self.sock.close()


def resp_for(client: redis.Redis) -> RespClient:
    """A ``RespClient`` on the same host, port and database as a redis-py client."""
    kw = client.connection_pool.connection_kwargs
    return RespClient(kw.get("host", "127.0.0.1"), int(kw.get("port", 6379)), int(kw.get("db", 0)))


class RedisCommands:
    """A stand-in for xstreams backed by another redis-server (to check the suite itself)."""

    def __init__(self, host: str, port: int) -> None:
        self.resp = RespClient(host, port)
        assert self.resp("FLUSHALL") == "OK"

    def __call__(self, *args: Any) -> Any:
        return self.resp(*args)

    def pipeline(self, commands: list[tuple[Any, ...]]) -> list[Any]:
        return self.resp.pipeline(commands)

    def close(self) -> None:
        self.resp.close()


class ExactPair:
    """Runs each command on both servers and asserts the masked replies are equal, with
    redis-server's replies read verbatim (error codes included)."""

    def __init__(
        self,
        xs: Any,
        rr: redis.Redis | None,
        masked: frozenset[str] = MASKED_KEYS,
        resp: RespClient | None = None,
    ) -> None:
        self.xs = xs
        self.rr = rr
        if resp is None:
            assert rr is not None, "redis-server through redis-py or a RespClient"
            resp = resp_for(rr)
        self.resp = resp
        # XINFO keys not compared (``support.MASKED_KEYS``; the random walks compare
        # radix-tree-keys too: the engine keeps Redis's nodes, one for one).
        self.masked = masked

    def both(self, *args: Any) -> tuple[Any, Any]:
        """Sends ``args`` to both; returns (redis reply, xstreams reply), unmasked."""
        return self.resp(*args), self.xs(*args)

    def __call__(self, *args: Any) -> Any:
        expected, actual = self.both(*args)
        return self.compare(args, expected, actual)

    def compare(self, args: tuple[Any, ...], expected: Any, actual: Any) -> Any:
        """Asserts ``actual`` (xstreams) equals ``expected`` (redis-server), masked."""
        if isinstance(expected, ReplyError):
            assert isinstance(actual, ReplyError), (args, expected, actual)
        else:
            assert not isinstance(actual, ReplyError), (args, expected, actual)
        masked = self.masked
        assert mask(args, actual, masked) == mask(args, expected, masked), (args, expected, actual)
        return actual

    def many(self, commands: list[tuple[Any, ...]]) -> list[Any]:
        """Runs ``commands`` in order, each reply compared as ``__call__`` does: one pipeline
        to redis-server, one call at a time to xstreams (not its fused ``/pipeline``)."""
        expected = self.resp.pipeline(commands)
        return [
            self.compare(args, exp, self.xs(*args))
            for args, exp in zip(commands, expected, strict=True)
        ]

    def err(self, *args: Any) -> str:
        """Sends a command that must fail on both; returns the (equal) error text."""
        reply = self(*args)
        assert isinstance(reply, ReplyError), (args, reply)
        return str(reply)

    def run(self, *commands: tuple[Any, ...]) -> list[Any]:
        """Runs several commands in order, comparing each reply."""
        return [self(*c) for c in commands]

    def bulk(self, commands: list[tuple[Any, ...]]) -> list[Any]:
        """Runs ``commands`` in one round trip on each side (xstreams: ``POST /pipeline``)
        and compares every reply, as ``__call__`` does."""
        expected = self.resp.pipeline(commands)
        if hasattr(self.xs, "pipeline"):
            actual = self.xs.pipeline(commands)
        else:
            body = [[str(a) for a in args] for args in commands]
            r = self.xs.client.post("/pipeline", json=body)
            assert r.status_code == 200, (r.status_code, r.text)
            actual = [
                ReplyError(item["error"]) if "error" in item else item["result"]
                for item in r.json()
            ]
        assert len(actual) == len(expected)
        for args, exp, act in zip(commands, expected, actual, strict=True):
            assert isinstance(act, ReplyError) == isinstance(exp, ReplyError), (args, exp, act)
            assert mask(args, act, self.masked) == mask(args, exp, self.masked), (args, exp, act)
        return actual

    def fill(self, key: str, n: int, *fields: Any, start: int = 1, seq: int = 0) -> None:
        """Adds ``n`` entries with IDs ``start-seq`` .. ``start+n-1-seq`` to ``key`` on both."""
        body = fields or ("f", "v")
        self.bulk([("XADD", key, f"{i}-{seq}", *body) for i in range(start, start + n)])

    def close(self) -> None:
        self.resp.close()
