"""The asyncio load client, for what wrk and redis-benchmark cannot do: a reply feeds the next
request (XREADGROUP then XACK of the IDs it returned) or a fixed number of entries is wanted.

Run by the harness in its own process so its CPU is measured apart from the server's; it prints
one JSON line. Raw HTTP/1.1 keep-alive and raw RESP (parsed by hiredis), never a full client
library, so the client stays well below the server's cost per request.

    python -m bench.client fill --port P --stream s --entries 100000
    python -m bench.client consume --port P --kind cmd|rest|redis --stream s --group g
        --consumers 10 --count 100 --seconds 3
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

import hiredis
import orjson

FIELDS = ["f1", "v1", "f2", "v2", "f3", "v3"]  # three small fields, as the issue says


class Http:
    """One keep-alive HTTP/1.1 connection, one request in flight."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int) -> Http:
        return cls(*await asyncio.open_connection("127.0.0.1", port))

    async def post(self, path: str, body: bytes) -> Any:
        self.writer.write(
            f"POST {path} HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        head = await self.reader.readuntil(b"\r\n\r\n")
        low = head.lower()
        i = low.index(b"content-length:") + 15
        payload = await self.reader.readexactly(int(low[i : low.index(b"\r\n", i)]))
        if head[9:10] != b"2":
            raise RuntimeError(f"{path}: {head[:12]!r} {payload[:300]!r}")
        return orjson.loads(payload)

    def close(self) -> None:
        self.writer.close()


class Resp:
    """One RESP connection to redis-server, replies parsed by hiredis."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.parser = hiredis.Reader()

    @classmethod
    async def open(cls, port: int) -> Resp:
        return cls(*await asyncio.open_connection("127.0.0.1", port))

    async def call(self, *args: str | bytes) -> Any:
        parts = [f"*{len(args)}\r\n".encode()]
        for a in args:
            b = a.encode() if isinstance(a, str) else a
            parts.append(b"$%d\r\n%s\r\n" % (len(b), b))
        self.writer.write(b"".join(parts))
        while (reply := self.parser.gets()) is False:
            self.parser.feed(await self.reader.read(1 << 16))
        if isinstance(reply, hiredis.ReplyError):
            raise RuntimeError(str(reply))
        return reply

    def close(self) -> None:
        self.writer.close()


async def fill(port: int, stream: str, entries: int, batch: int, connections: int) -> int:
    """Append ``entries`` entries through /pipeline, ``batch`` XADDs a request."""
    body = orjson.dumps([["XADD", stream, "*", *FIELDS]] * batch)
    left = entries

    async def worker() -> None:
        nonlocal left
        http = await Http.open(port)
        while left > 0:
            n = min(batch, left)
            left -= n
            await http.post(
                "/pipeline",
                body if n == batch else orjson.dumps([["XADD", stream, "*", *FIELDS]] * n),
            )
        http.close()

    await asyncio.gather(*(worker() for _ in range(connections)))
    return entries


async def consume(
    kind: str, port: int, stream: str, group: str, consumers: int, count: int, seconds: float
) -> dict[str, float]:
    """``consumers`` loops of read-COUNT-new-entries then ack-them, until time or entries end."""
    deadline = time.perf_counter() + seconds
    acked = 0
    reads = 0

    async def worker(i: int) -> None:
        nonlocal acked, reads
        name = f"c{i}"
        if kind == "redis":
            conn = await Resp.open(port)
            while time.perf_counter() < deadline:
                reply = await conn.call(
                    "XREADGROUP", "GROUP", group, name, "COUNT", str(count), "STREAMS", stream, ">"
                )
                reads += 1
                if not reply:
                    break
                ids = [entry[0] for entry in reply[0][1]]
                # (await first: ``acked += await ...`` would read ``acked`` before yielding)
                n = await conn.call("XACK", stream, group, *ids)
                acked += n
            conn.close()
            return
        http = await Http.open(port)
        read_path = f"/v1/streams/{stream}/groups/{group}/consumers/{name}/reads"
        ack_path = f"/v1/streams/{stream}/groups/{group}/acks"
        read_body = orjson.dumps({"count": count})
        read_cmd = orjson.dumps(
            ["XREADGROUP", "GROUP", group, name, "COUNT", count, "STREAMS", stream, ">"]
        )
        while time.perf_counter() < deadline:
            reads += 1
            if kind == "rest":
                got = (await http.post(read_path, read_body))["entries"]
                if not got:
                    break
                ids = [e["id"] for e in got]
                n = (await http.post(ack_path, orjson.dumps({"ids": ids})))["acknowledged"]
                acked += n
            else:
                result = (await http.post("/", read_cmd))["result"]
                if not result:
                    break
                ids = [e[0] for e in result[0][1]]
                n = (await http.post("/", orjson.dumps(["XACK", stream, group, *ids])))["result"]
                acked += n
        http.close()

    t0 = time.perf_counter()
    await asyncio.gather(*(worker(i) for i in range(consumers)))
    elapsed = time.perf_counter() - t0
    return {"entries": acked, "seconds": elapsed, "rate": acked / elapsed, "reads": reads}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    f = sub.add_parser("fill")
    f.add_argument("--port", type=int, required=True)
    f.add_argument("--stream", required=True)
    f.add_argument("--entries", type=int, required=True)
    f.add_argument("--batch", type=int, default=1000)
    f.add_argument("--connections", type=int, default=4)
    c = sub.add_parser("consume")
    c.add_argument("--port", type=int, required=True)
    c.add_argument("--kind", choices=["cmd", "rest", "redis"], required=True)
    c.add_argument("--stream", required=True)
    c.add_argument("--group", required=True)
    c.add_argument("--consumers", type=int, default=10)
    c.add_argument("--count", type=int, default=100)
    c.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    if args.mode == "fill":
        t0 = time.perf_counter()
        n = asyncio.run(fill(args.port, args.stream, args.entries, args.batch, args.connections))
        elapsed = time.perf_counter() - t0
        print(orjson.dumps({"entries": n, "seconds": elapsed, "rate": n / elapsed}).decode())
    else:
        result = asyncio.run(
            consume(
                args.kind,
                args.port,
                args.stream,
                args.group,
                args.consumers,
                args.count,
                args.seconds,
            )
        )
        print(orjson.dumps(result).decode())


if __name__ == "__main__":
    main()
