"""Semantics-preserving transformations on Spark executors (``mapInPandas``).

The spark engine's half of :func:`~.variants.transformed`: each executor task imports the
transformation library (tree-sitter) itself and runs
:func:`~.column_transforms.column_transforms` on its partition, so the driver never parses code.
Results are per sample and independent of the partitioning (NatGen, Chakraborty et al.,
FSE 2022; Rabin et al., IST 2021: every transformation rewrites one sample at a time), so
the collected arrays equal the local engine's. What comes back to the driver is one row
per sample and code column: flags, a limit reason and the rewritten code where a
transformation changed the sample (the per-sample table logs that code anyway).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

import numpy as np
import pandas as pd

from .column_transforms import ColumnTransforms

ROW = "_mc_row"


def _schema(names: list[str]) -> str:
    changed = ", ".join(f"changed_{i} boolean, code_{i} string" for i in range(len(names)))
    return f"{ROW} long, failed boolean, over string, {changed}"


def _transform_partition(
    batches: Iterator[pd.DataFrame], column: str, names: list[str], language: str, seed: int
) -> Iterator[pd.DataFrame]:
    """Runs on an executor: the transformations of one partition's samples of ``column``."""
    from mlflow_metacompress.evaluation.column_transforms import column_transforms  # imported on the executor

    for batch in batches:
        if not len(batch):
            continue
        result = column_transforms(batch[column].tolist(), names, language, seed)
        out = {ROW: batch[ROW].to_numpy(dtype=np.int64), "failed": result.failed, "over": result.over}
        for i, name in enumerate(names):
            out[f"changed_{i}"] = result.changed[name]
            out[f"code_{i}"] = result.codes[name]
        yield pd.DataFrame(out)


def spark_column_transforms(
    df: pd.DataFrame, columns: list[str], names: list[str], language: str, seed: int = 0
) -> dict[str, ColumnTransforms]:
    """:func:`~.column_transforms.column_transforms` of each column in ``columns``, computed with
    ``mapInPandas`` on the active SparkSession (the spark engine opens one first)."""
    from .spark_session import active_session

    spark = active_session()
    out: dict[str, ColumnTransforms] = {}
    for column in columns:
        pdf = pd.DataFrame({ROW: np.arange(len(df), dtype=np.int64), column: df[column].astype(str).to_numpy()})
        sdf = spark.createDataFrame(pdf)
        fn = functools.partial(_transform_partition, column=column, names=list(names), language=language, seed=seed)
        got = sdf.mapInPandas(fn, schema=_schema(list(names))).toPandas().sort_values(ROW).reset_index(drop=True)
        if len(got) != len(df) or not np.array_equal(got[ROW].to_numpy(), np.arange(len(df))):
            raise RuntimeError(f"spark transformations returned {len(got)} rows for {len(df)} samples of {column!r}")
        out[column] = ColumnTransforms(
            failed=got["failed"].to_numpy(dtype=bool),
            over=[None if v is None or (isinstance(v, float) and np.isnan(v)) else str(v) for v in got["over"]],
            changed={n: got[f"changed_{i}"].to_numpy(dtype=bool) for i, n in enumerate(names)},
            codes={
                n: [None if v is None or (isinstance(v, float) and np.isnan(v)) else v for v in got[f"code_{i}"]]
                for i, n in enumerate(names)
            },
        )
    return out
