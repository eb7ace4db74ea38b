"""Input validation: every check runs before any model does, and names what is wrong.

Nothing is logged to the run when one of these raises (the evaluator validates first).
The checks of model outputs and labels (and :class:`MetaCompressInputError`) live in the
model-adapter layer (:mod:`mlflow_metacompress.adapters.checks`), shared with the attacks;
import them from there.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..adapters.checks import MetaCompressInputError

__all__ = ["check_code_columns", "check_nonempty", "check_probability_columns"]


def check_nonempty(df: pd.DataFrame) -> None:
    if len(df) == 0:
        raise MetaCompressInputError("the evaluation dataset is empty: it has 0 rows")


def check_code_columns(df: pd.DataFrame, columns: Sequence[str]) -> None:
    """Every code column exists and holds only strings (first offending row is named)."""
    if not 1 <= len(columns) <= 2:
        raise MetaCompressInputError(
            f"code_columns must name one column (classification) or two (clone pairs); got {list(columns)}"
        )
    for col in columns:
        if col not in df.columns:
            raise MetaCompressInputError(
                f"code column {col!r} is missing from the data; columns are {list(df.columns)}"
            )
        for problem, test in (
            ("must hold strings", lambda v: isinstance(v, str)),
            ("must hold non-empty code", lambda v: bool(v.strip())),
            ("must hold valid UTF-8 text (no lone surrogates)", _utf8),
        ):
            bad = ~df[col].map(test).to_numpy(dtype=bool)
            if bad.any():
                pos = int(np.argmax(bad))
                value = df[col].iloc[pos]
                raise MetaCompressInputError(
                    f"code column {col!r} {problem}; row {df.index[pos]!r} holds {type(value).__name__} {value!r:.60}"
                )


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_probability_columns(df: pd.DataFrame, columns: Sequence[str]) -> None:
    """Static mode: every probability column holds numbers (the first bad cell is named)."""
    for col in columns:
        values = df[col]
        numeric = values.map(
            lambda v: isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
        )
        if not numeric.all():
            pos = int(np.argmax(~numeric.to_numpy(dtype=bool)))
            raise MetaCompressInputError(
                f"probability column {col!r} must hold numbers; row {df.index[pos]!r} holds "
                f"{type(values.iloc[pos]).__name__} {values.iloc[pos]!r:.60}"
            )
