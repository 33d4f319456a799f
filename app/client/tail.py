"""``xstreams tail``: follow a stream, or consume through a group, over Server-Sent Events.

A dropped connection or a restarted service does not end it: it reconnects with back-off and
resumes after the last entry it printed (``Last-Event-ID``), so each entry prints once, in
order. Through a group it acknowledges each entry once printed; on reconnect the consumer's
pending entries come first (the service's history), and any it already printed are acked,
not printed again."""

from __future__ import annotations

import json
import time
from typing import Annotated, Any

import httpx
import typer
from httpx_sse import SSEError

from app.client.commands import Stream, group_path, stream_path
from app.client.http import Service, ServiceError, Unreachable, segment
from app.client.output import Output
from app.client.session import DEFAULT_URL, Json, Token, Url, session

FIRST_BACKOFF_S = 0.1
MAX_BACKOFF_S = 5.0
GIVE_UP_STATUS = range(400, 500)  # the request is wrong (no group, no access): retrying won't help


def _key(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


class Follower:
    """The state of one tail across connections: where it is and how many it printed."""

    def __init__(
        self,
        service: Service,
        out: Output,
        stream: str,
        start: str,
        count: int | None,
        group: str | None,
        consumer: str | None,
    ) -> None:
        self.service, self.out, self.stream = service, out, stream
        self.start, self.left = start, count
        self.group, self.consumer = group, consumer
        self.last: str | None = None  # the last entry printed
        self.connected = False  # once it has been, an unreachable service is waited for
        self.unacked: str | None = None  # the last entry of a --count, acked after closing

    def path_and_params(self) -> tuple[str, dict[str, Any]]:
        if self.group is None:
            return f"{stream_path(self.stream)}/events", {"last_id": self.start}
        assert self.consumer is not None
        path = f"{group_path(self.stream, self.group)}/consumers/{segment(self.consumer)}/events"
        params: dict[str, Any] = {"last_id": "0"}  # its pending entries, then new ones
        if self.left is not None:
            # One entry in hand at a time: the service sends the next once this one is acked,
            # so stopping after N leaves nothing delivered but unprinted in the consumer's PEL.
            params["max_unacked"] = 1
        return path, params

    def ack(self, entry_id: str) -> None:
        assert self.group is not None
        self.service.post(f"{group_path(self.stream, self.group)}/acks", {"ids": [entry_id]})

    def seen(self, entry_id: str) -> bool:
        return self.last is not None and _key(entry_id) <= _key(self.last)

    def take(self, event: str, data: dict[str, Any]) -> None:
        """Print one event's entry (or say what else came) and count it."""
        if event == "error":
            raise ServiceError(0, str(data.get("error") or data))
        if event == "gap":
            self.out.note(
                f"entries after {data.get('after')} were removed; first: {data.get('first_id')}"
            )
            return
        if event not in ("entry", "deleted"):
            return
        entry_id = data["id"]
        if self.seen(entry_id):  # delivered again after a reconnect: printed already
            if self.group is not None:
                self.ack(entry_id)
            return
        if event == "deleted":
            self.out.note(f"pending entry {entry_id} was deleted from the stream")
        else:
            self.out.entry(data)
        self.last = entry_id
        if self.left is not None:
            self.left -= 1
        if self.group is not None:
            if self.done():  # acked once the connection is closed, or the next could come
                self.unacked = entry_id
            else:
                self.ack(entry_id)

    def done(self) -> bool:
        return self.left is not None and self.left <= 0

    def connection(self) -> bool:
        """Read one connection until it ends; True once an event came through it."""
        path, params = self.path_and_params()
        resume = self.last if self.group is None else None
        got = False
        with self.service.events(path, params, resume) as events:
            self.connected = True
            for sse in events:
                if sse.event not in ("entry", "deleted", "gap", "error"):
                    continue
                got = True
                self.take(sse.event, json.loads(sse.data))
                if self.done():
                    break
        if self.unacked is not None:
            self.ack(self.unacked)
            self.unacked = None
        return got

    def resolve_start(self) -> None:
        """``$`` as the ID it stands for now, so a reconnect before the first entry still
        starts there, not at a later ``$`` past what was appended meanwhile."""
        if self.group is not None or self.start != "$":
            return
        try:
            self.start = self.service.get(stream_path(self.stream))["last_generated_id"]
        except ServiceError as exc:
            if exc.status != 404:
                raise
            self.start = "0-0"  # no stream yet: everything it will hold is new

    def run(self) -> None:
        self.resolve_start()
        backoff = FIRST_BACKOFF_S
        while not self.done():
            try:
                if self.connection():
                    backoff = FIRST_BACKOFF_S
                if self.done():
                    return
                reason = "the service closed the stream"
            except ServiceError as exc:
                if exc.status in GIVE_UP_STATUS or exc.status == 0:
                    raise
                reason = f"{exc.status} {exc.detail}"
            except Unreachable:
                if not self.connected:
                    raise
                reason = "the service is unreachable"
            except (httpx.TransportError, SSEError) as exc:
                reason = str(exc) or type(exc).__name__
            self.out.note(f"{reason}; reconnecting in {backoff:.1f} s")
            time.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF_S)


def tail(
    stream: Stream,
    start: Annotated[
        str, typer.Option("--from", help="Start after this ID (`$`: only new, `0`: all).")
    ] = "$",
    count: Annotated[int | None, typer.Option(min=1, help="Stop after this many entries.")] = None,
    group: Annotated[
        str | None, typer.Option(help="Consume through this group (acks what it prints).")
    ] = None,
    consumer: Annotated[
        str | None, typer.Option(help="The consumer's name (with --group).")
    ] = None,
    url: Url = DEFAULT_URL,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Follow a stream live, resuming after a dropped connection; `--json` prints JSON lines."""
    if (group is None) != (consumer is None):
        raise typer.BadParameter("--group and --consumer go together")
    with session(url, token, as_json) as (service, out):
        try:
            Follower(service, out, stream, start, count, group, consumer).run()
        except KeyboardInterrupt:
            raise typer.Exit(130) from None
