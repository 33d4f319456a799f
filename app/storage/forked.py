"""A snapshot encoded in a forked child, as redis-server's BGSAVE does.

Encoding a large keyspace is Python work: in a worker thread it shares the GIL with the event
loop (a 2M-entry snapshot held requests up for up to ~0.3 s), and taking the view alone held the
loop ~50 ms. ``fork`` gives a child the parent's memory as it is at that instant (copy-on-write),
so the parent does nothing but the fork on the loop: the child takes the view, encodes it and
writes the bytes to an anonymous file, then leaves with ``os._exit``. The state the child sees is
the state after the last record appended when ``fork`` returned, exactly.

The child is a copy of a process with threads (the journal writer, SQLAlchemy's pool, the
executor's workers), of which only the forking thread exists in it. So it touches none of them
and nothing they may have held locked: no database connection, no logging handler, no asyncio,
no atexit handlers and no buffered stream flushes (``os._exit``); it closes its copies of the
parent's descriptors first. It runs with the collector off, so its own reference counting is
all that copies the parent's pages.

A child killed midway (or failing) exits without status 0, and the parent then stores nothing:
the snapshot is stored in one transaction from the complete bytes only.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import tempfile
import warnings
from dataclasses import dataclass
from typing import NoReturn

from app.engine.snapshot import encode_snapshot
from app.engine.store import Store

# The child's exit status when encoding or writing failed (its reason goes to stderr).
FAILED = 3
_MAX_FD = os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 65536


class ChildFailed(Exception):
    """The child did not write a complete snapshot (it failed or was killed)."""


@dataclass(frozen=True, slots=True)
class Child:
    """A forked encoder: its pid and the anonymous file it writes the snapshot to."""

    pid: int
    fd: int

    def collect(self) -> bytes:
        """Wait for the child (blocking: run in a worker thread), reap it and return the
        snapshot it wrote; raises ``ChildFailed`` unless it exited with status 0."""
        try:
            _, status = os.waitpid(self.pid, 0)
            code = os.waitstatus_to_exitcode(status)
            if code != 0:
                how = f"killed by signal {-code}" if code < 0 else f"exited with status {code}"
                raise ChildFailed(f"the snapshot child {self.pid} {how}")
            size = os.fstat(self.fd).st_size
            data = os.pread(self.fd, size, 0)  # one call below 2 GiB (Linux's cap per read)
            if len(data) < size:
                parts = [data]
                while (done := sum(map(len, parts))) < size:
                    part = os.pread(self.fd, size - done, done)
                    if not part:
                        raise ChildFailed(f"the snapshot child's file ended at {done} of {size}")
                    parts.append(part)
                data = b"".join(parts)
            return data
        finally:
            os.close(self.fd)

    def kill(self) -> None:
        """Stop the child (a snapshot abandoned); ``collect`` still reaps it."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)


def _anonymous_file() -> int:
    """A file descriptor of a file with no name: nothing to clean up after a crash."""
    if hasattr(os, "memfd_create"):
        with contextlib.suppress(OSError):
            return os.memfd_create("xstreams-snapshot", os.MFD_CLOEXEC)
    fd, path = tempfile.mkstemp(prefix="xstreams-snapshot-")
    os.unlink(path)
    return fd


def fork_encoder(store: Store) -> Child | None:
    """Fork a child that encodes ``store``'s snapshot as it is now; None where ``fork`` is
    not available or fails (the caller then encodes in process)."""
    if not hasattr(os, "fork"):
        return None
    try:
        fd = _anonymous_file()
    except OSError:
        return None
    try:
        with warnings.catch_warnings():
            # Python 3.12 warns on fork in a process with threads; the child uses none of
            # them and nothing they lock (module docstring).
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
    except OSError:
        os.close(fd)
        return None
    if pid == 0:
        _child(store, fd)
    return Child(pid, fd)


def _child(store: Store, fd: int) -> NoReturn:
    """The child's whole life: encode, write, ``os._exit``; nothing else of the parent's."""
    code = FAILED
    try:
        gc.disable()
        with contextlib.suppress(ValueError):  # forked off the main thread: none were set
            signal.set_wakeup_fd(-1)  # the parent loop's, not to be woken by the child
            # A terminal's Ctrl-C reaches the whole process group: the parent decides (a
            # clean stop waits for this snapshot). SIGTERM ends it; nothing is stored then.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
        # The parent's sockets and files: a connection the parent closes must close now, not
        # when the child is done (a socket closes with its last descriptor).
        os.closerange(3, fd)
        os.closerange(fd + 1, _MAX_FD)
        data = memoryview(encode_snapshot(store.snapshot_view()))
        while data:
            data = data[os.write(fd, data) :]
        code = 0
    except BaseException as e:  # the child reports and exits, whatever it was
        with contextlib.suppress(BaseException):
            os.write(2, f"xstreams: the snapshot child failed: {e!r}\n".encode())
    finally:
        os._exit(code)
