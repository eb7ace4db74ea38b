"""The SparkSession the spark engine runs on: the caller's active session when there is
one (a Databricks notebook, a cluster job), otherwise a ``local[*]`` session created for
the evaluation and stopped afterwards. pyspark is imported only here, lazily."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .._optional import require

logger = logging.getLogger(__name__)


def active_session() -> Any:
    """The active SparkSession (raises when there is none: open one with :func:`session`)."""
    require("pyspark", "the spark engine", "spark")
    from pyspark.sql import SparkSession

    spark = SparkSession.getActiveSession()
    if spark is None:
        raise RuntimeError("the spark engine has no active SparkSession")
    return spark


@contextmanager
def session() -> Iterator[Any]:
    """The active SparkSession, or a new ``local[*]`` one stopped on exit."""
    require("pyspark", "the spark engine", "spark")
    from pyspark.sql import SparkSession

    spark = SparkSession.getActiveSession()
    if spark is not None:
        yield spark
        return
    logger.info("no active SparkSession: starting a local[*] session for this evaluation")
    spark = SparkSession.builder.master("local[*]").appName("mlflow-metacompress").getOrCreate()
    try:
        yield spark
    finally:
        spark.stop()
