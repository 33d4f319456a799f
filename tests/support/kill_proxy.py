"""A loopback TCP proxy that can kill the service between applying a write and answering it.

Killing a server at a random moment rarely lands in the one window that makes a retry
dangerous: the write was applied (committed, fsynced) but its answer never reached the
client, so the client sends it again. This proxy makes that window certain. It forwards
bytes both ways, notes which requests start with a watched prefix (``POST /multi-exec``),
and when the answer to the n-th of them comes back (so the service has applied it) and n is
one of ``kill_at``, it calls ``on_kill`` (kill -9 the service) and closes the client's
connection instead of forwarding the answer. The client sees a network error and retries.

It also gives the client one address that outlives the service: a restarted server listens
on another port, and ``upstream`` is pointed at it.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterable

CHUNK = 65536


class KillProxy:
    """``127.0.0.1:<port>`` forwarding to ``127.0.0.1:<upstream>``."""

    def __init__(self, watch: bytes, kill_at: Iterable[int], on_kill: Callable[[], None]) -> None:
        self.watch = watch
        self.kill_at = set(kill_at)
        self.on_kill = on_kill
        self.upstream = 0
        self.answered = 0  # watched requests whose answer came back (forwarded or not)
        self.killed = 0  # answers dropped with the service killed behind them
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._closed = True
        self._listener.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            server = socket.create_connection(("127.0.0.1", self.upstream), timeout=5)
        except OSError:
            client.close()  # the service is down: the client sees a network error
            return
        server.settimeout(None)
        for s in (client, server):  # forward each write at once, as a direct connection would
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        watched = [False]  # the request in flight on this connection is a watched one
        threading.Thread(target=self._up, args=(client, server, watched), daemon=True).start()
        self._down(client, server, watched)

    def _up(self, client: socket.socket, server: socket.socket, watched: list[bool]) -> None:
        """Client to service; a chunk that starts a request tells whether it is watched."""
        try:
            while data := client.recv(CHUNK):
                if data[:4] in (b"POST", b"GET ", b"PUT ", b"DELE", b"PATC"):
                    watched[0] = data.startswith(self.watch)
                server.sendall(data)
        except OSError:
            pass
        _close(client, server)

    def _down(self, client: socket.socket, server: socket.socket, watched: list[bool]) -> None:
        """Service to client; the first bytes of a watched request's answer may be dropped
        with the service killed."""
        try:
            while data := server.recv(CHUNK):
                if watched[0]:
                    watched[0] = False
                    with self._lock:
                        self.answered += 1
                        kill = self.answered in self.kill_at
                        if kill:
                            self.killed += 1
                            self.on_kill()
                    if kill:
                        break
                client.sendall(data)
        except OSError:
            pass
        _close(client, server)


def _close(*sockets: socket.socket) -> None:
    for s in sockets:
        with contextlib.suppress(OSError):
            s.shutdown(socket.SHUT_RDWR)
        s.close()
