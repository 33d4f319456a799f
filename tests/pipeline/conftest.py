"""One SparkSession (``local[2]``) for every pipeline test: starting Spark costs seconds.

The pipeline tests skip when PySpark or Java is absent, unless ``XSTREAMS_REQUIRE_SERVICES=1``
(set by .ci/run), which turns the skip into a failure.
"""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import REQUIRE_SERVICES


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
