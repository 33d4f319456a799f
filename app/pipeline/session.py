"""One place that builds the SparkSession the jobs and tests use.

The master URL decides where the work runs: ``local[*]`` on a laptop, ``spark://host:7077`` or
``yarn`` on a cluster. Under ``spark-submit`` the master and configuration come from it, so
nothing here overrides a value that is already set.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"


class PipelineSetupError(RuntimeError):
    """Spark cannot start here: PySpark or Java is missing, or a setting is malformed."""


def parse_conf(pairs: Iterable[str]) -> dict[str, str]:
    """``--conf key=value`` pairs, as spark-submit takes them."""
    conf: dict[str, str] = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key.strip():
            raise PipelineSetupError(f"--conf expects key=value, got {pair!r}")
        conf[key.strip()] = value
    return conf


def spark_session(
    app_name: str,
    master: str | None = None,
    conf: dict[str, str] | None = None,
    *,
    progress: bool = True,
) -> SparkSession:
    """Get or create the session, with the ``xstreams`` data source registered.

    Executors run the data source's Python code, so on a local master they must use this
    interpreter (the one with xstreams installed), not whatever ``python3`` is on PATH.
    """
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise PipelineSetupError(
            "PySpark is not installed: pip install 'xstreams[pipeline]'"
        ) from exc
    if not os.environ.get("JAVA_HOME") and not _on_path("java"):
        raise PipelineSetupError(
            "Spark needs Java 17 or newer: install it (apt-get install openjdk-17-jre-headless) "
            "or set JAVA_HOME"
        )
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ  # under spark-submit, which decides
    if not submitted and (master or DEFAULT_MASTER).startswith("local"):
        # One machine: workers use this interpreter, and Spark stays on loopback. (On a
        # cluster the nodes' own Python with xstreams installed is used instead.)
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    elif not submitted:
        builder = builder.master(DEFAULT_MASTER)
    settings = {
        "spark.ui.showConsoleProgress": "true" if progress else "false",
        "spark.sql.session.timeZone": "UTC",  # archive dates are UTC days of the entry IDs
        **(conf or {}),
    }
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    from app.pipeline.source import XStreamsDataSource

    spark.dataSource.register(XStreamsDataSource)
    return spark


def _on_path(program: str) -> bool:
    import shutil

    return shutil.which(program) is not None


_OURS = re.compile(r"\b(?:SourceError|MissingStream|ReplyError|OptionError|ArchiveError): (.+)")


def failure_text(exc: BaseException) -> str:
    """The one line that explains a failed Spark job: the pipeline's own error message when a
    Python worker raised one (Spark wraps it in a JVM stack trace), else the first line."""
    text = str(exc)
    ours = _OURS.findall(text)
    if ours:
        return str(ours[-1]).strip()
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__
