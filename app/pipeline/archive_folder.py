"""The archive folder's bookkeeping: committed runs, recovery of a dead run, the run lock.

Layout under OUT: the data in ``stream=S/date=D/``, each committed run's manifest in
``_xstreams/runs/RUN.json`` (the commit point: written by one atomic rename), a run's files in
``_staging/RUN/`` until they are moved into place, and ``_xstreams/lock`` while a run works.
Spark's readers skip folders that start with ``_``, so only published data is ever read.
"""

from __future__ import annotations

import os
import socket
from datetime import UTC, datetime
from typing import Any

from app.engine.ids import StreamID, parse_strict_id
from app.pipeline.files import Files

RUNS = "_xstreams/runs"
STAGING = "_staging"
LOCK = "_xstreams/lock"


class ArchiveError(RuntimeError):
    """The run stopped before committing; the archive and the stream are as they were."""


def now_iso() -> str:
    return datetime.now(UTC).isoformat()


class Archive:
    """The archive folder: committed runs, and recovery from a run that died."""

    def __init__(self, spark: Any, out: str) -> None:
        self.spark = spark
        self.files = Files(spark, out)

    def lock(self) -> None:
        """One run at a time per archive folder: a run's recovery deletes staging it does not
        know, which would be another live run's. A lock left by a dead process on this host
        is taken over; one from another host must be removed by hand once that run is gone."""
        path = self.files.join(LOCK)
        me = {"host": socket.gethostname(), "pid": os.getpid(), "since": now_iso()}
        if self.files.create_json(path, me):
            return
        holder = self.files.read_json(path)
        if holder.get("host") == me["host"] and not _alive(int(holder.get("pid", 0))):
            self.files.delete(path)
            if self.files.create_json(path, me):
                return
        raise ArchiveError(
            f"another archive run holds {path} (host {holder.get('host')}, pid "
            f"{holder.get('pid')}, since {holder.get('since')}); if it is gone, delete that file"
        )

    def unlock(self) -> None:
        self.files.delete(self.files.join(LOCK))

    def manifests(self) -> list[dict[str, Any]]:
        runs = self.files.join(RUNS)
        return [
            self.files.read_json(f"{runs}/{name}")
            for name in self.files.children(runs)
            if name.endswith(".json")
        ]

    def archived_through(self, stream: str) -> StreamID | None:
        marks = [parse_strict_id(m["through"]) for m in self.manifests() if m["stream"] == stream]
        return max(marks, default=None)

    def recover(self) -> list[str]:
        """Roll committed runs forward and uncommitted ones back; the runs touched."""
        touched: list[str] = []
        committed = {m["run"]: m for m in self.manifests()}
        for run, manifest in committed.items():
            staged = self.files.join(STAGING, run)
            moved = False
            for rel in manifest["files"]:
                final, source = self.files.join(rel), f"{staged}/{rel}"
                if self.files.exists(source):
                    self.files.rename(source, final)
                    moved = True
                elif not self.files.exists(final):
                    raise ArchiveError(f"run {run}: file {rel} is missing from the archive")
            if self.files.exists(staged):
                self.files.delete(staged)
                moved = True
            if moved:
                touched.append(run)
        for run in self.files.children(self.files.join(STAGING)):
            if run not in committed:
                self.files.delete(self.files.join(STAGING, run))
                touched.append(run)
        return touched

    def commit(self, manifest: dict[str, Any]) -> None:
        """The commit point of a run: its manifest appears whole or not at all."""
        self.files.write_json(self.files.join(RUNS, f"{manifest['run']}.json"), manifest)

    def publish(self, run: str, files: list[str]) -> None:
        staged = self.files.join(STAGING, run)
        for rel in files:
            self.files.rename(f"{staged}/{rel}", self.files.join(rel))
        self.files.delete(staged)


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
