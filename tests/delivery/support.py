"""Webhook receivers for the runner's tests: real uvicorn servers on loopback, each in a
thread of its own (so a receiver that stalls never stalls the runner's loop), answering as
a script says and recording every request."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import orjson
import uvicorn

from tests.conftest import free_port
from tests.support.waiting import until, until_async


@dataclass(frozen=True)
class Hit:
    """One request a receiver got."""

    at: float  # time.monotonic()
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body)


@dataclass(frozen=True)
class Answer:
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    delay_s: float = 0.0  # how long the receiver takes before it answers


Script = Callable[[int, Hit], Answer]  # (index of the request, the request) -> the answer


def ok(n: int, hit: Hit) -> Answer:
    return Answer()


@dataclass
class Receiver:
    script: Script = ok
    url: str = ""
    hits: list[Hit] = field(default_factory=list)
    active: int = 0
    max_active: int = 0
    gate: threading.Event | None = None  # set: requests are answered; clear: they wait
    lock: threading.Lock = field(default_factory=threading.Lock)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        hit = Hit(time.monotonic(), scope["path"], headers, body)
        with self.lock:
            n = len(self.hits)
            self.hits.append(hit)
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            answer = self.script(n, hit)
            if self.gate is not None:  # held until the test opens it (at the latest on exit)
                await until_async(self.gate.is_set, 60, "the receiver's gate opened", 0.005)
            if answer.delay_s:
                await asyncio.sleep(answer.delay_s)
            await send(
                {
                    "type": "http.response.start",
                    "status": answer.status,
                    "headers": [(k.encode(), v.encode()) for k, v in answer.headers],
                }
            )
            await send({"type": "http.response.body", "body": b""})
        finally:
            with self.lock:
                self.active -= 1

    def bodies(self) -> list[Any]:
        return [h.json() for h in self.hits]


@contextmanager
def receiving(
    script: Script = ok, path: str = "/hook", tls: tuple[str, str] | None = None
) -> Iterator[Receiver]:
    """A receiver served on 127.0.0.1 at a free port; ``url`` ends with ``path``; ``tls``:
    a certificate and key file to serve https with."""
    receiver = Receiver(script)
    port = free_port()
    config = uvicorn.Config(
        receiver,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        lifespan="off",
        timeout_graceful_shutdown=1,
        ssl_certfile=tls[0] if tls else None,
        ssl_keyfile=tls[1] if tls else None,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    until(lambda: server.started, 10, "the receiver started")
    receiver.url = f"{'https' if tls else 'http'}://127.0.0.1:{port}{path}"
    try:
        yield receiver
    finally:
        if receiver.gate is not None:
            receiver.gate.set()
        server.should_exit = True
        thread.join(10)
