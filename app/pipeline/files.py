"""File operations on the archive through Hadoop's FileSystem API, reached via the driver's JVM.

Going through Hadoop rather than ``os`` lets the same archive job commit to a local folder,
HDFS or an object store (``s3a://``, ``gs://`` with their connectors on the classpath): the path's
scheme picks the file system, exactly as it does for Spark's own writers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson


@dataclass
class Files:
    """One file system (the one ``root`` lives on) and the few operations the archive needs."""

    spark: Any
    root: str

    def __post_init__(self) -> None:
        jvm = self.spark.sparkContext._jvm
        self._jvm = jvm
        self._fs = self._path(self.root).getFileSystem(
            self.spark.sparkContext._jsc.hadoopConfiguration()
        )

    def _path(self, path: str) -> Any:
        return self._jvm.org.apache.hadoop.fs.Path(path)

    def join(self, *parts: str) -> str:
        return "/".join([self.root.rstrip("/"), *parts])

    def exists(self, path: str) -> bool:
        return bool(self._fs.exists(self._path(path)))

    def mkdirs(self, path: str) -> None:
        self._fs.mkdirs(self._path(path))

    def delete(self, path: str) -> None:
        self._fs.delete(self._path(path), True)

    def rename(self, src: str, dst: str) -> None:
        """Move one file, creating the target's folder; an existing target is replaced."""
        target = self._path(dst)
        self._fs.mkdirs(target.getParent())
        if self._fs.exists(target):
            self._fs.delete(target, False)
        if not self._fs.rename(self._path(src), target):
            raise OSError(f"cannot move {src} to {dst}")

    def children(self, path: str) -> list[str]:
        """Names directly under ``path`` (none when it does not exist)."""
        p = self._path(path)
        if not self._fs.exists(p):
            return []
        return sorted(str(s.getPath().getName()) for s in self._fs.listStatus(p))

    def data_files(self, path: str) -> list[str]:
        """Parquet files under ``path``, as paths relative to it."""
        base = self._path(path)
        if not self._fs.exists(base):
            return []
        prefix = str(self._fs.makeQualified(base).toString()).rstrip("/") + "/"
        found: list[str] = []
        it = self._fs.listFiles(base, True)
        while it.hasNext():
            full = str(it.next().getPath().toString())
            name = full.rsplit("/", 1)[-1]
            if name.endswith(".parquet") and not name.startswith((".", "_")):
                found.append(full.removeprefix(prefix))
        return sorted(found)

    def write_json(self, path: str, value: Any) -> None:
        """Write through a temporary name and rename: readers see all of it or none of it."""
        tmp = path + ".tmp"
        self._write(self._fs.create(self._path(tmp), True), value)
        if self._fs.exists(self._path(path)):
            raise FileExistsError(path)
        if not self._fs.rename(self._path(tmp), self._path(path)):
            raise OSError(f"cannot commit {path}")

    def create_json(self, path: str, value: Any) -> bool:
        """Create ``path`` only if it does not exist yet; False when it already does."""
        try:
            stream = self._fs.create(self._path(path), False)
        except Exception:  # Hadoop's FileAlreadyExistsException, through py4j
            if self.exists(path):
                return False
            raise
        self._write(stream, value)
        return True

    @staticmethod
    def _write(stream: Any, value: Any) -> None:
        """Write, flush to the disks (hsync), close: durable before anyone renames it."""
        try:
            stream.write(bytearray(orjson.dumps(value, option=orjson.OPT_INDENT_2)))
            stream.hsync()
        finally:
            stream.close()

    def read_json(self, path: str) -> Any:
        stream = self._fs.open(self._path(path))
        try:
            data = self._jvm.org.apache.commons.io.IOUtils.toByteArray(stream)
        finally:
            stream.close()
        return orjson.loads(bytes(data))
