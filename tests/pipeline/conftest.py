"""One SparkSession (``local[2]``) for every pipeline test: starting Spark costs seconds.

The pipeline tests skip when PySpark or Java is absent, unless ``XSTREAMS_REQUIRE_SERVICES=1``
(set by .ci/run), which turns the skip into a failure. A test module that imports pyarrow or
PySpark (directly, or through app.pipeline's schema) calls ``need`` first, so that
``pytest -m "not spark"`` still collects without the pipeline extra.
"""

from __future__ import annotations

import importlib
import importlib.util
import shutil
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

from tests.conftest import REQUIRE_SERVICES


def need(name: str) -> ModuleType:
    """Import ``name`` for a test module; without it, skip the module (``pytest.importorskip``),
    or fail under ``XSTREAMS_REQUIRE_SERVICES=1``: CI never passes by skipping."""
    if not REQUIRE_SERVICES:
        return pytest.importorskip(
            name, reason=f"{name} is not installed (pip install -e '.[dev]')"
        )
    try:
        return importlib.import_module(name)
    except ImportError as e:
        pytest.fail(f"{name} is not installed ({e}) and XSTREAMS_REQUIRE_SERVICES=1", pytrace=False)


def _missing() -> str | None:
    if importlib.util.find_spec("pyspark") is None:
        return "PySpark is not installed (pip install -e '.[dev]')"
    if shutil.which("java") is None:
        return "Java is not installed (Spark needs Java 17)"
    return None


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    missing = _missing()
    if missing:
        if REQUIRE_SERVICES:
            pytest.fail(missing + " and XSTREAMS_REQUIRE_SERVICES=1")
        pytest.skip(missing)
    from app.pipeline.session import spark_session

    session = spark_session(
        "xstreams-tests",
        "local[2]",
        {
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "4",
            "spark.driver.memory": "1g",
        },
        progress=False,
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
