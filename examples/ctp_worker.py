"""Consume, transform, produce, exactly once: a worker that survives kill -9 anywhere.

Each entry of an input stream, read as a consumer of a group, becomes some output entries.
The worker must not lose an input (the group's PEL keeps it until acknowledged) nor write
its outputs twice (a retry after a lost answer, or a restart after a kill, would). So:

1. Read with XREADGROUP: first the consumer's own history (ID ``0``: what it was given and
   did not acknowledge before it died or lost an answer), then new entries (``>``). A read
   carries no Idempotency-Key: reading again is harmless, since history gives back what
   was delivered, and a blocking read could not carry one anyway (400).
2. For each entry, one ``POST /multi-exec``: the XADDs of its outputs and the XACK of the
   input, atomic, under ``Idempotency-Key: ctp:<group>:<stream>:<id>``. The key names the
   input, so every attempt for it (a retry, or a new worker process redoing it from
   history) is the same request: it runs once, and later attempts get its first answer.
   The body must be the same each time, so the transform must be deterministic.
3. Retry every request on a network error, 5xx, 409 (the first attempt still runs) and
   429, with back-off. On Redis Cluster, name the streams with one hash tag
   (``{orders}:in``, ``{orders}:out``): the request's keys must sit in one slot.

Run: ``python examples/ctp_worker.py --url http://127.0.0.1:8000 --stream '{o}:in'
--group g --consumer c1 --out '{o}:out'``. ``--exit-when-idle`` stops once nothing is
left (the tests use it); ``--no-key`` drops the header, to see the duplicates it prevents.
Needs httpx (``pip install httpx``).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from typing import Any

import httpx

RETRIED = frozenset({409, 429, 500, 502, 503, 504})
MAX_BACKOFF_S = 1.0


def send(client: httpx.Client, path: str, body: Any, key: str | None = None) -> Any:
    """POST ``body`` until the service answers something that is not its trouble; the
    decoded answer, a Redis error (400 ``{"error": ...}``) included. Any other 4xx is the
    caller's mistake: raised."""
    headers = {"Idempotency-Key": key} if key is not None else {}
    delay = 0.05
    while True:
        try:
            reply = client.post(path, json=body, headers=headers)
        except httpx.TransportError:
            reply = None
        if reply is not None and reply.status_code not in RETRIED:
            if reply.status_code == 400 and "error" in reply.json():
                return reply.json()
            reply.raise_for_status()
            return reply.json()
        wait = delay
        if reply is not None and "retry-after" in reply.headers:
            wait = max(wait, min(float(reply.headers["retry-after"]), MAX_BACKOFF_S))
        time.sleep(wait * random.uniform(0.5, 1.0))
        delay = min(delay * 2, MAX_BACKOFF_S)


def transform(entry_id: str, fields: list[str]) -> list[list[str]]:
    """The outputs of one input: two entries that name it (``src``). Deterministic: every
    attempt for an input must send the same request."""
    pairs = dict(zip(fields[::2], fields[1::2], strict=True))
    n = int(pairs.get("n", "0"))
    return [
        ["src", entry_id, "part", "0", "double", str(2 * n)],
        ["src", entry_id, "part", "1", "square", str(n * n)],
    ]


def produce(
    client: httpx.Client, args: argparse.Namespace, entry_id: str, fields: list[str]
) -> None:
    """The outputs and the ack of one input, in one transaction, once."""
    commands: list[list[str]] = [["XADD", args.out, "*", *f] for f in transform(entry_id, fields)]
    commands.append(["XACK", args.stream, args.group, entry_id])
    key = None if args.no_key else f"ctp:{args.group}:{args.stream}:{entry_id}"
    results = send(client, "/multi-exec", commands, key)
    if isinstance(results, dict):  # the transaction was refused whole
        raise RuntimeError(f"multi-exec for {entry_id} refused: {results}")
    failed = [r["error"] for r in results if "error" in r]
    if failed:
        raise RuntimeError(f"multi-exec for {entry_id} failed: {failed}")


def read(client: httpx.Client, args: argparse.Namespace, start: str) -> list[Any]:
    """A page of entries: the consumer's history from ``0``, or new ones (``>``)."""
    command = ["XREADGROUP", "GROUP", args.group, args.consumer, "COUNT", str(args.count)]
    if start == ">" and args.block_ms:
        command += ["BLOCK", str(args.block_ms)]
    reply = send(client, "/", [*command, "STREAMS", args.stream, start])
    if "error" in reply:
        raise RuntimeError(reply["error"])
    result = reply["result"]
    return result[0][1] if result else []


def run(args: argparse.Namespace) -> int:
    """Work until stopped (or, with ``--exit-when-idle``, until nothing is left); the number
    of inputs handled."""
    handled = 0
    with httpx.Client(base_url=args.url, timeout=args.timeout_s) as client:
        # The group may exist already (another worker, or this one before a restart).
        reply = send(client, "/", ["XGROUP", "CREATE", args.stream, args.group, "0", "MKSTREAM"])
        if "error" in reply and not reply["error"].startswith("BUSYGROUP"):
            raise RuntimeError(reply["error"])
        history = True
        while True:
            entries = read(client, args, "0" if history else ">")
            if history and not entries:
                history = False  # nothing left from before: new entries from now on
                continue
            if not entries:
                if args.exit_when_idle:
                    return handled
                continue
            for entry_id, fields in entries:
                if fields is None:  # deleted while pending: nothing to transform
                    send(client, "/", ["XACK", args.stream, args.group, entry_id])
                    continue
                produce(client, args, entry_id, fields)
                handled += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--stream", required=True, help="the input stream")
    parser.add_argument("--group", required=True)
    parser.add_argument(
        "--consumer", required=True, help="this worker's name: keep it across restarts"
    )
    parser.add_argument("--out", required=True, help="the output stream")
    parser.add_argument("--count", type=int, default=10, help="entries per read")
    parser.add_argument(
        "--block-ms",
        type=int,
        default=5000,
        help="a read of new entries waits this long (0: no wait)",
    )
    parser.add_argument("--timeout-s", type=float, default=10.0, help="one request's timeout")
    parser.add_argument("--exit-when-idle", action="store_true", help="stop when nothing is left")
    parser.add_argument(
        "--no-key", action="store_true", help="no Idempotency-Key (shows duplicates)"
    )
    args = parser.parse_args()
    handled = run(args)
    print(f"done: {handled} inputs", flush=True)
    sys.exit(0)


if __name__ == "__main__":
    main()
