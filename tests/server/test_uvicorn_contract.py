"""What the server (app/server/connections.py, server.py) takes from uvicorn is still there.

The protocol subclasses uvicorn's ``HttpToolsProtocol``, which is not a public API: it was read
in uvicorn 0.54's source. pyproject.toml pins uvicorn to the versions it was read against. An
upgrade that renames a method the subclass overrides would leave the override never called (no
header or body deadline, silently). One that renames an attribute it reads would fail only
when a deadline passes. These tests fail at once instead: raise the pin only with them green.

The names are taken from the subclass's own source, so a new override or a new read is
checked without editing this file.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import tomllib
from importlib.metadata import version
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from uvicorn.config import Config
from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle
from uvicorn.server import ServerState

from app.server import connections
from app.server.accept import FairServer
from app.server.connections import HttpProtocol, Limits, protocol_class
from app.server.server import Server

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ast.parse(Path(connections.__file__).read_text())
LIMITS = Limits(
    header_timeout_ms=60_000, body_timeout_ms=60_000, keepalive_timeout_ms=5_000, max_connections=8
)
HEAD = b"POST /v1/streams/s HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n"


def _protocol_class() -> ast.ClassDef:
    return next(
        n for n in SOURCE.body if isinstance(n, ast.ClassDef) and n.name == HttpProtocol.__name__
    )


def _own(name: str) -> bool:
    """A name of the subclass's own (``_timer``, ``_check``): not uvicorn's to change."""
    return name.startswith("_") and not name.startswith("__")


def _overrides() -> list[str]:
    return [
        name
        for name, value in vars(HttpProtocol).items()
        if inspect.isfunction(value) and not _own(name)
    ]


def _reads(owner: str) -> set[str]:
    """Attributes of ``owner`` (``self``, or the request ``cycle``) the module uses."""
    names = set()
    for node in ast.walk(SOURCE):
        if not isinstance(node, ast.Attribute):
            continue
        base = node.value
        if isinstance(base, ast.Name) and base.id == owner:
            names.add(node.attr)
        elif owner == "cycle" and isinstance(base, ast.Attribute) and base.attr == "cycle":
            names.add(node.attr)  # self.cycle.<name>
    return names


class _Transport(asyncio.Transport):
    """A transport that keeps what is written, as a socket's would send it."""

    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()
        self.closing = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 50000), "sockname": ("127.0.0.1", 8080)}.get(
            name, default
        )

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += data

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def _app(scope: Any, receive: Any, send: Any) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


def test_uvicorn_is_pinned_to_the_versions_read() -> None:
    """pyproject gives uvicorn an upper bound, and the installed uvicorn is inside the range."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = [Requirement(d) for d in project["dependencies"] if Requirement(d).name == "uvicorn"]
    assert len(pins) == 1
    bounds = {spec.operator for spec in pins[0].specifier}
    assert "<" in bounds or "==" in bounds or "~=" in bounds, pins[0]
    assert pins[0].specifier.contains(version("uvicorn")), (version("uvicorn"), pins[0])


def test_every_override_still_overrides_a_method_of_the_same_signature() -> None:
    names = _overrides()
    assert {"connection_made", "on_headers_complete", "on_message_complete"} <= set(names)
    for name in names:
        base = getattr(HttpToolsProtocol, name, None)
        assert callable(base), f"uvicorn's HttpToolsProtocol has no {name} any more"
        ours, theirs = inspect.signature(getattr(HttpProtocol, name)), inspect.signature(base)
        assert [(p.name, p.kind, p.default) for p in ours.parameters.values()] == [
            (p.name, p.kind, p.default) for p in theirs.parameters.values()
        ], name


async def test_what_the_protocol_reads_is_still_set_by_uvicorn() -> None:
    """A real protocol (the bound subclass over uvicorn's) meets a request head; every
    attribute the module reads of it, its flow control and its request cycle is there."""
    config = Config(_app, log_config=None)
    state = ServerState()
    protocol = protocol_class(LIMITS)(config, state, {}, asyncio.get_running_loop())
    transport = _Transport()
    protocol.connection_made(transport)
    protocol.data_received(HEAD)
    cycle = protocol.cycle
    try:
        assert isinstance(cycle, RequestResponseCycle) and cycle.scope is protocol.scope
        inherited = _reads("self") - set(vars(HttpProtocol)) - {"limits"}
        missing = {n for n in inherited if not _own(n) and not hasattr(protocol, n)}
        assert missing == set(), "uvicorn's protocol no longer sets these"
        missing = {n for n in _reads("cycle") if not hasattr(cycle, n)}
        assert missing == set(), "uvicorn's request cycle no longer sets these"
        assert isinstance(protocol.flow, FlowControl)
        assert isinstance(protocol.flow.read_paused, bool)
        assert protocol.server_state.default_headers is not None
        assert cycle.more_body is True  # the body deadline was armed from this flag
    finally:
        protocol.connection_lost(None)
        await asyncio.gather(*state.tasks)


def test_own_names_do_not_shadow_uvicorns() -> None:
    """The subclass's own methods and attributes (``_timer``, ``_check``, ``limits``) are not
    names uvicorn uses: a clash would silently replace uvicorn's."""
    config = Config(_app, log_config=None)
    base = HttpToolsProtocol(config, ServerState(), {}, asyncio.new_event_loop())
    try:
        base.connection_made(_Transport())
        own = {n for n in _reads("self") | set(vars(HttpProtocol)) if _own(n)} | {"limits"}
        assert {"_head_since", "_timer", "_arm", "_check"} <= own  # the source was read
        assert {n for n in own if hasattr(base, n)} == set()
    finally:
        base.loop.close()


async def test_uvicorn_starts_the_lifespan_without_sockets_and_the_server_serves_its_own() -> None:
    """``Server.startup`` hands uvicorn an empty list of sockets: uvicorn must still run the
    app's lifespan, create no server of its own and mark itself started; the server then
    binds port 0, serves it through ``FairServer``, logs uvicorn's line and reports the port
    it got. A uvicorn that changed any of that fails here, not in production."""
    started: list[int] = []
    lifespan: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                lifespan.append(message["type"])
                await send({"type": message["type"] + ".complete"})
                if message["type"] == "lifespan.shutdown":
                    return
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    config = Config(app, host="127.0.0.1", port=0, log_config=None, lifespan="on")
    config.load()
    server = Server(config, on_shutdown=lambda: None, on_started=started.append)
    assert callable(server._log_started_message)  # called for the sockets bound here
    server.lifespan = config.lifespan_class(config)  # as uvicorn's ``_serve`` sets it
    await server.startup()
    try:
        assert server.started and lifespan == ["lifespan.startup"]
        (fair,) = server.servers
        assert isinstance(fair, FairServer)
        (port,) = started
        assert port == fair.sockets[0].getsockname()[1] != 0
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert (await reader.readline()).startswith(b"HTTP/1.1 204")
        writer.close()
    finally:
        await server.shutdown()
    assert lifespan == ["lifespan.startup", "lifespan.shutdown"]
