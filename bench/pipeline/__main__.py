"""``python -m bench.pipeline [--entries N] [--quick] [--out DIR]``: the Spark pipeline's batch
read and archive throughput, each figure beside anchors measured in the same run.

The question (issue: pipeline throughput) is how fast the ``xstreams`` data source reads and the
archive job archives a million entries on ``local[2]``, and whether partitions read in
parallel. A Spark figure alone says little on a shared 2-core machine, so every run also
measures what the same range costs without Spark: one Python process paging it over HTTP with
the source's own client, two such processes reading the halves (what two cores can pull over
HTTP), and redis-py paging it from redis-server. The CPU of the server, of this process tree
(driver, JVM, Python workers, anchor readers) and of the whole machine is sampled around every
timed read, so the report can say which side was the limit.

Outputs: a table on stdout, ``pipeline.json`` under ``--out`` (default bench/results/,
git-ignored) and the generated section of bench/PIPELINE.md.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from bench.machine import facts
from bench.pipeline.data import REDIS_DB, log_stderr
from bench.pipeline.runner import Plan, run
from bench.pipeline.tables import markdown, update_report

BENCH = Path(__file__).resolve().parent.parent  # bench/: results/ and PIPELINE.md live there
VENV_BIN = Path(sys.executable).parent


def machine() -> dict[str, Any]:
    """What a reader needs to judge the figures: cores, load, versions."""
    return facts(
        ("xstreams", "pyspark", "pyarrow", "httpx", "redis", "uvicorn"),
        {"java": ["java", "-version"], "redis-server": ["redis-server", "--version"]},
    )


@contextmanager
def xstreams_service(fsync: str = "off") -> Iterator[tuple[str, int]]:
    """``xstreams serve`` on a free loopback port with a temporary data folder; (url, pid)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    with tempfile.TemporaryDirectory(prefix="xstreams-bench-pipeline-") as data:
        cmd = [str(VENV_BIN / "xstreams"), "serve", "--host", "127.0.0.1", "--port", str(port),
               "--data-dir", data, "--log-level", "warning", "--fsync", fsync]  # fmt: skip
        proc = subprocess.Popen(cmd, start_new_session=True)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 30
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"xstreams exited with {proc.returncode}")
                try:
                    if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError("xstreams did not become healthy within 30 s")
                time.sleep(0.1)
            yield url, proc.pid
        finally:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.pipeline",
                                     description=__doc__.splitlines()[0])  # fmt: skip
    parser.add_argument("--entries", type=int, default=None, help="default 1,000,000")
    parser.add_argument("--quick", action="store_true", help="100,000 entries")
    parser.add_argument("--page-size", type=int, default=5000)
    parser.add_argument("--no-trim", action="store_true", help="skip the trim=True archive")
    parser.add_argument("--out", type=Path, default=BENCH / "results", help="output folder")
    parser.add_argument("--no-report", action="store_true", help="leave bench/PIPELINE.md")
    args = parser.parse_args()
    entries = args.entries or (100_000 if args.quick else 1_000_000)
    plan = Plan(entries=entries, page_size=args.page_size, trim=not args.no_trim,
                quick=args.quick)  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    facts = machine()

    import redis

    from app.pipeline.session import spark_session

    r = redis.Redis(host="127.0.0.1", port=6379, db=REDIS_DB, decode_responses=True)
    try:
        r.ping()
        r.flushdb()
    except redis.ConnectionError:
        log_stderr("redis-server is not reachable on 127.0.0.1:6379: no redis anchor")
        r = None  # type: ignore[assignment]
    log_stderr("starting Spark (local[2]) and xstreams serve --fsync off")
    spark = spark_session(
        "xstreams-bench-pipeline",
        "local[2]",
        {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4",
         "spark.driver.memory": "2g"},
        progress=False,
    )  # fmt: skip
    spark.sparkContext.setLogLevel("ERROR")
    try:
        with (
            xstreams_service("off") as (url, pid),
            tempfile.TemporaryDirectory(prefix="xstreams-bench-archive-") as work,
        ):
            figures = run(spark, url, pid, r, plan, Path(work))
    finally:
        spark.stop()
        if r is not None:
            r.flushdb()
            r.close()
    figures["machine"] = facts
    figures["server_mode"] = "xstreams serve --fsync off"
    (args.out / "pipeline.json").write_text(json.dumps(figures, indent=2) + "\n")
    table = markdown(figures)
    if not args.no_report:
        update_report(BENCH / "PIPELINE.md", table)
    print(table)
    log_stderr(f"wrote {args.out}/pipeline.json ({figures['seconds_total']} s)")


if __name__ == "__main__":
    main()
