"""A RESP-to-HTTP bridge: Redis clients (redis-cli, Redis's own Tcl test suite) speak to the
command endpoint through it.

    python -m tests.tools.resp_bridge --port 7379 --url http://127.0.0.1:8000 [--token T]

It listens on a TCP port, reads each command a client sends in RESP, posts it to the command
endpoint (``POST /`` with ``Upstash-Encoding: base64``, so every byte comes back exactly) and
writes the reply back in RESP. Commands of one connection run in order, one at a time, as
redis-server runs them; a blocking XREAD simply waits for its HTTP answer.

What the bridge answers itself, because it belongs to the connection and not the keyspace:

- MULTI / EXEC / DISCARD: commands between MULTI and EXEC are queued (``+QUEUED``) and sent
  together to ``/multi-exec``;
- SELECT: xstreams has one keyspace, so every database number is that keyspace;
- FUNCTION FLUSH and SCRIPT FLUSH (sent by the Tcl suite before each file): there are no
  functions or scripts to flush.

The reply's RESP type is read back from the Upstash shape: ``{"error"}`` is an error, a JSON
integer an integer, null a nil bulk string, an array an array; the literal ``OK`` (never
base64-encoded by the protocol) a status, any other string a bulk string.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import time
from typing import Any

import hiredis
import httpx


def encode(reply: Any) -> bytes:
    """One reply, decoded from the Upstash shape (base64 strings), as RESP2."""
    if reply is None:
        return b"$-1\r\n"
    if isinstance(reply, bool):  # not in the protocol; kept readable
        return b":1\r\n" if reply else b":0\r\n"
    if isinstance(reply, int):
        return b":%d\r\n" % reply
    if isinstance(reply, str):
        if reply == "OK":
            return b"+OK\r\n"
        data = base64.b64decode(reply)
        return b"$%d\r\n%s\r\n" % (len(data), data)
    if isinstance(reply, list):
        return b"*%d\r\n" % len(reply) + b"".join(encode(x) for x in reply)
    if isinstance(reply, float):  # not in the protocol; as a bulk string
        return encode(base64.b64encode(repr(reply).encode()).decode())
    raise TypeError(f"no RESP shape for {reply!r}")


def error(text: str) -> bytes:
    line = text.replace("\r", " ").replace("\n", " ")
    return b"-" + line.encode("utf-8", "surrogateescape") + b"\r\n"


def item(doc: dict[str, Any]) -> bytes:
    if "error" in doc:
        return error(doc["error"])
    return encode(doc["result"])


def _body(commands: Any) -> bytes:
    # Bytes that are not UTF-8 travel as the \udcNN escapes the endpoint reads back.
    return json.dumps(commands).encode()


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _text(arg: bytes) -> str:
    return arg.decode("utf-8", "surrogateescape")


class Connection:
    """One client's connection: its own MULTI queue, commands forwarded in order."""

    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http
        self.queue: list[list[str]] | None = None  # inside MULTI

    async def post(self, path: str, commands: Any) -> Any:
        response = await self.http.post(path, content=_body(commands))
        if response.status_code == 401:
            return {"error": "NOAUTH Authentication required."}
        return response.json()

    async def handle(self, argv: list[bytes]) -> bytes:
        if not argv:
            return error("ERR empty command")
        args = [_text(a) for a in argv]
        name = args[0].lower()
        if name == "multi":
            if self.queue is not None:
                return error("ERR MULTI calls can not be nested")
            self.queue = []
            return b"+OK\r\n"
        if name in ("exec", "discard"):
            if self.queue is None:
                return error(f"ERR {name.upper()} without MULTI")
            queued, self.queue = self.queue, None
            if name == "discard":
                return b"+OK\r\n"
            if not queued:
                return b"*0\r\n"
            doc = await self.post("/multi-exec", queued)
            if isinstance(doc, dict):
                return error(doc["error"])
            return b"*%d\r\n" % len(doc) + b"".join(item(d) for d in doc)
        if self.queue is not None:
            self.queue.append(args)
            return b"+QUEUED\r\n"
        if name == "select":
            return b"+OK\r\n"
        if name in ("function", "script") and len(args) >= 2 and args[1].lower() == "flush":
            return b"+OK\r\n"
        if name == "time" and len(args) == 1:
            micros = time.time_ns() // 1000
            return encode([_b64(str(micros // 1_000_000)), _b64(str(micros % 1_000_000))])
        return item(await self.post("/", args))


async def serve_client(
    http: httpx.AsyncClient, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    parser = hiredis.Reader()
    conn = Connection(http)
    try:
        while data := await reader.read(65536):
            parser.feed(data)
            while (argv := parser.gets()) is not False:
                writer.write(await conn.handle(argv))
            await writer.drain()
    except (ConnectionError, hiredis.ProtocolError):
        pass
    finally:
        writer.close()


async def main(host: str, port: int, url: str, token: str | None) -> None:
    headers = {"upstash-encoding": "base64", "content-type": "application/json"}
    if token:
        headers["authorization"] = f"Bearer {token}"
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=64)
    async with httpx.AsyncClient(
        base_url=url, headers=headers, timeout=None, limits=limits
    ) as http:
        server = await asyncio.start_server(lambda r, w: serve_client(http, r, w), host, port)
        async with server:
            await server.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=7379)
    parser.add_argument("--url", default="http://127.0.0.1:8000", help="the xstreams service")
    parser.add_argument("--token", default=None, help="a credential, if the service needs one")
    ns = parser.parse_args()
    asyncio.run(main(ns.host, ns.port, ns.url, ns.token))
