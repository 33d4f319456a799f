"""Whether an event-stream's peer really takes bytes: the send timeout's measure (Linux).

A write that returns has only moved bytes into the transport's buffer, the kernel's send
buffer (autotuned up to ``net.ipv4.tcp_wmem``'s maximum, 4 MB by default) and the peer's
receive buffer. Measured: a subscriber that reads nothing after its response head leaves
~800 KB of events sitting in the kernel with every write "done", so a watchdog that watches
writes alone never fires while the writer still finds room. Progress is therefore read from
the kernel:

- outstanding: bytes the peer has not acknowledged yet, in the transport's buffer plus the
  socket's send queue (``ioctl(SIOCOUTQ)``, unsent + unacknowledged);
- delivered: ``tcpi_bytes_acked`` from ``getsockopt(TCP_INFO)`` (Linux 4.1+), the bytes the
  peer's TCP has acknowledged, which stops growing once its receive buffer is full (zero
  window probes acknowledge nothing new).

A connection makes progress when nothing is outstanding or delivered bytes grew; one that made
none for the send timeout is stalled, and is aborted with a reset (``SO_LINGER`` 0): a plain
close would keep the connection, and the kernel memory behind it, until the buffers drained,
which they never do. A slow reader keeps acknowledging something and is never cut, however full
its buffers stay; comparing "outstanding" samples instead would mistake it for a stalled one
whenever the writer refills what it took.

The SSE socket's ``SO_SNDBUF`` is left to the kernel's autotuning: capping it would make a stall
show no sooner (the measure above does not depend on buffer size) and hold less memory for at
most the send timeout, at the cost of every subscriber's throughput on a long path (a send
buffer below the bandwidth-delay product caps a stream at buffer / round trip).

Found through uvicorn's request cycle (``receive.__self__.transport``), as ``sse_flush`` does;
elsewhere (another server, no TCP_INFO) ``peer_progress`` is None and the stream falls back to
timing its own sends.
"""

from __future__ import annotations

import contextlib
import fcntl
import socket
import struct
import termios
from typing import Any

__all__ = ["PeerProgress", "peer_progress", "transport_progress"]

_BYTES_ACKED_AT = 120  # offset of tcpi_bytes_acked (u64) in struct tcp_info
_TCP_INFO_LEN = _BYTES_ACKED_AT + 8
_SIOCOUTQ = termios.TIOCOUTQ  # the same request number for sockets
_LINGER_RESET = struct.pack("ii", 1, 0)  # close at once, with a reset


class PeerProgress:
    """One connection's socket, sampled by the event stream's watchdog."""

    __slots__ = ("_acked", "_progress_at", "_sock", "_transport")

    def __init__(self, transport: Any, sock: Any, now: float) -> None:
        self._transport = transport
        self._sock = sock
        self._acked = -1
        self._progress_at = now

    def outstanding(self) -> int:
        """Bytes written to this connection that its peer has not acknowledged."""
        queued = struct.unpack("i", fcntl.ioctl(self._sock.fileno(), _SIOCOUTQ, b"\0" * 4))[0]
        return int(self._transport.get_write_buffer_size()) + int(queued)

    def acked(self) -> int:
        """Bytes the peer has acknowledged since the connection opened."""
        info = self._sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_LEN)
        return int(struct.unpack_from("<Q", info, _BYTES_ACKED_AT)[0])

    def stalled(self, now: float, timeout_s: float) -> bool:
        """Whether the peer has taken nothing for ``timeout_s`` while bytes waited for it."""
        if self._transport.is_closing():
            return False  # closed already: the disconnect is on its way
        try:
            acked = self.acked()
            if acked != self._acked or self.outstanding() == 0:
                self._acked, self._progress_at = acked, now
        except OSError:
            return False  # the socket is gone: the disconnect is on its way
        return now - self._progress_at >= timeout_s

    def abort(self) -> None:
        """Drop the connection with a reset, releasing its buffers at once."""
        with contextlib.suppress(OSError):
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RESET)
        self._transport.abort()


def peer_progress(receive: Any, now: float) -> PeerProgress | None:
    """The measure for this response's connection, where uvicorn and Linux TCP give it."""
    return transport_progress(getattr(getattr(receive, "__self__", None), "transport", None), now)


def transport_progress(transport: Any, now: float) -> PeerProgress | None:
    """The measure for a connection's transport, where Linux TCP gives it."""
    # uvloop's transports are not asyncio.Transport instances: checked by what they offer.
    needed = ("get_write_buffer_size", "get_extra_info", "is_closing", "abort")
    if not all(hasattr(transport, a) for a in needed) or transport.is_closing():
        return None
    sock = transport.get_extra_info("socket")
    if sock is None or getattr(sock, "type", None) != socket.SOCK_STREAM:
        return None
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_LEN)
        fcntl.ioctl(sock.fileno(), _SIOCOUTQ, b"\0" * 4)
    except (OSError, AttributeError):
        return None
    if len(info) < _TCP_INFO_LEN:
        return None  # a kernel older than 4.1
    return PeerProgress(transport, sock, now)
