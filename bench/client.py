"""The asyncio load client, for what wrk and redis-benchmark cannot do: a reply feeds the next
request (XREADGROUP then XACK of the IDs it returned) or a fixed number of entries is wanted.

Run by the harness in its own process so its CPU is measured apart from the server's; it prints
one JSON line. Raw HTTP/1.1 keep-alive and raw RESP (parsed by hiredis), never a full client
library, so the client stays well below the server's cost per request.

    python -m bench.client fill --port P --stream s --entries 100000
    python -m bench.client consume --port P --kind cmd|rest|redis --stream s --group g
        --consumers 10 --count 100 --seconds 3
    python -m bench.client singles --port P --stream s --requests 50000 [--keyed]
    python -m bench.client streams --port P --kind http|redis --streams 100000
    python -m bench.client pages --port P --kind scan|keys|rest|redis-scan|redis-keys|bare
        --streams 100000

``streams`` makes ``--streams`` streams of one entry each, named ks:000000, ks:000001...;
``pages`` times one request at a time over that keyspace (workload 8): a whole SCAN or REST
cursor walk, or KEYS with 100-key patterns from all over the keyspace, and prints each page's
latency percentiles.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

import hiredis
import orjson

FIELDS = ["f1", "v1", "f2", "v2", "f3", "v3"]  # three small fields, as the issue says


class Http:
    """One keep-alive HTTP/1.1 connection, one request in flight."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, token: str | None = None
    ) -> None:
        self.reader, self.writer = reader, writer
        self.auth = f"Authorization: Bearer {token}\r\n" if token is not None else ""

    @classmethod
    async def open(cls, port: int, token: str | None = None) -> Http:
        return cls(*await asyncio.open_connection("127.0.0.1", port), token)

    async def post(self, path: str, body: bytes, key: str | None = None) -> Any:
        extra = self.auth + (f"Idempotency-Key: {key}\r\n" if key is not None else "")
        self.writer.write(
            f"POST {path} HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
            f"{extra}Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        return await self._reply(path)

    async def get(self, path: str) -> Any:
        self.writer.write(f"GET {path} HTTP/1.1\r\nHost: bench\r\n\r\n".encode())
        return await self._reply(path)

    async def _reply(self, path: str) -> Any:
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
        self.writer.write(_resp(args))
        return await self._reply()

    async def pipeline(self, commands: list[list[str]]) -> list[Any]:
        self.writer.write(b"".join(_resp(c) for c in commands))
        return [await self._reply() for _ in commands]

    async def _reply(self) -> Any:
        while (reply := self.parser.gets()) is False:
            self.parser.feed(await self.reader.read(1 << 16))
        if isinstance(reply, hiredis.ReplyError):
            raise RuntimeError(str(reply))
        return reply

    def close(self) -> None:
        self.writer.close()


def _resp(args: list[str] | tuple[str | bytes, ...]) -> bytes:
    parts = [f"*{len(args)}\r\n".encode()]
    for a in args:
        b = a.encode() if isinstance(a, str) else a
        parts.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(parts)


def stream_name(i: int) -> str:
    """The name of the i-th stream of workload 8's keyspace."""
    return f"ks:{i:06d}"


def key_patterns(streams: int, calls: int) -> list[str]:
    """KEYS patterns matching 100 streams each (ks:0012* is ks:001200 to ks:001299), spread
    evenly over the keyspace."""
    blocks = streams // 100
    return [f"ks:{blocks * k // calls:04d}*" for k in range(calls)]


async def streams(kind: str, port: int, n: int, batch: int = 1000) -> int:
    """``n`` streams of one entry each, ``batch`` XADDs to a request (or RESP pipeline)."""
    conn: Http | Resp = await (Resp.open(port) if kind == "redis" else Http.open(port))
    for start in range(0, n, batch):
        commands = [
            ["XADD", stream_name(i), "*", *FIELDS] for i in range(start, min(n, start + batch))
        ]
        if isinstance(conn, Resp):
            await conn.pipeline(commands)
        else:
            await conn.post("/pipeline", orjson.dumps(commands))
    conn.close()
    return n


async def pages(kind: str, port: int, n: int, count: int, calls: int) -> dict[str, Any]:
    """Time each request of one walk: SCAN / REST cursor pages until the cursor comes back
    to 0, or ``calls`` KEYS (or bare GET) requests. Checks that a walk saw all ``n`` keys
    and that each KEYS call matched 100."""
    redis = kind.startswith("redis")
    conn: Http | Resp = await (Resp.open(port) if redis else Http.open(port))
    took: list[float] = []
    seen: set[str] = set()
    cursor = "0"

    async def one() -> Any:
        t0 = time.perf_counter()
        if isinstance(conn, Resp):
            if kind == "redis-scan":
                reply = await conn.call("SCAN", cursor, "COUNT", str(count))
            else:
                reply = await conn.call("KEYS", patterns[len(took)])
        elif kind == "scan":
            reply = (await conn.post("/", orjson.dumps(["SCAN", cursor, "COUNT", count])))["result"]
        elif kind == "keys":
            reply = (await conn.post("/", orjson.dumps(["KEYS", patterns[len(took)]])))["result"]
        elif kind == "rest":
            reply = await conn.get(f"/v1/streams?cursor={cursor}&count={count}")
        else:
            reply = await conn.get("/")
        took.append((time.perf_counter() - t0) * 1000)
        return reply

    patterns = key_patterns(n, calls)
    if kind in ("scan", "redis-scan", "rest"):
        while True:
            reply = await one()
            if kind == "rest":
                seen.update(s["name"] for s in reply["streams"])
                cursor = str(reply["next_cursor"] or 0)
            else:
                found = reply[1]
                seen.update(k.decode() if isinstance(k, bytes) else k for k in found)
                cursor = reply[0].decode() if isinstance(reply[0], bytes) else str(reply[0])
            if cursor == "0":
                break
        if len(seen) != n:
            raise RuntimeError(f"{kind}: a walk saw {len(seen)} streams of {n}")
    else:
        for _ in range(calls):
            reply = await one()
            if kind != "bare" and len(reply) != 100:
                raise RuntimeError(f"{kind}: KEYS {patterns[len(took) - 1]} matched {len(reply)}")
    conn.close()
    cuts = statistics.quantiles(took, n=100, method="inclusive")
    return {"requests": len(took), "p50_ms": statistics.median(took), "p99_ms": cuts[98],
            "max_ms": max(took)}  # fmt: skip


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


async def singles(port: int, stream: str, n: int, keyed: bool, connections: int) -> int:
    """``n`` single XADDs on the command endpoint, each under a key of its own (``keyed``)
    or none: what the memory per kept response is measured with (bench/idempotency.py)."""
    body = orjson.dumps(["XADD", stream, "*", *FIELDS])
    counter = iter(range(n))

    async def worker() -> None:
        http = await Http.open(port)
        for i in counter:
            await http.post("/", body, f"{stream}-{i}" if keyed else None)
        http.close()

    await asyncio.gather(*(worker() for _ in range(connections)))
    return n


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
    one = sub.add_parser("singles")
    one.add_argument("--port", type=int, required=True)
    one.add_argument("--stream", required=True)
    one.add_argument("--requests", type=int, required=True)
    one.add_argument("--keyed", action="store_true", help="an Idempotency-Key per request")
    one.add_argument("--connections", type=int, default=8)
    k = sub.add_parser("streams")
    k.add_argument("--port", type=int, required=True)
    k.add_argument("--kind", choices=["http", "redis"], required=True)
    k.add_argument("--streams", type=int, required=True)
    g = sub.add_parser("pages")
    g.add_argument("--port", type=int, required=True)
    g.add_argument(
        "--kind",
        choices=["scan", "keys", "rest", "redis-scan", "redis-keys", "bare"],
        required=True,
    )
    g.add_argument("--streams", type=int, required=True)
    g.add_argument("--count", type=int, default=100, help="SCAN COUNT / REST count")
    g.add_argument("--calls", type=int, default=50, help="KEYS or bare requests")
    args = parser.parse_args()
    if args.mode == "streams":
        made = asyncio.run(streams(args.kind, args.port, args.streams))
        print(orjson.dumps({"streams": made}).decode())
    elif args.mode == "pages":
        got = asyncio.run(pages(args.kind, args.port, args.streams, args.count, args.calls))
        print(orjson.dumps(got).decode())
    elif args.mode == "singles":
        t0 = time.perf_counter()
        n = asyncio.run(
            singles(args.port, args.stream, args.requests, args.keyed, args.connections)
        )
        elapsed = time.perf_counter() - t0
        print(orjson.dumps({"requests": n, "seconds": elapsed, "rate": n / elapsed}).decode())
    elif args.mode == "fill":
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
