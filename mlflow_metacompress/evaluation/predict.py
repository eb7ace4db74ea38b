"""Step two of the evaluation: both models' probabilities on every variant, into the
:class:`~.predictions.PredictionTable`.

Model mode runs the :class:`~.pair.ModelPair` (the student's columns in the teacher's
class order; the teacher is MetaCompress's oracle, arXiv 2511.05476) unless the engine
already predicted a variant (the Spark engine's ``spark_udf`` pass, handed over as a table
of its own); static mode reads the probabilities from columns of the data and knows the
original variant only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..adapters.checks import MetaCompressInputError, check_probabilities, encode_labels
from .predictions import ORIGINAL, PairPredictions, PredictionTable

if TYPE_CHECKING:
    from .config_model import EvaluatorConfig
    from .pair import ModelPair
    from .variant_types import Variant


def static_table(df: pd.DataFrame, cfg: EvaluatorConfig, y: np.ndarray | None) -> PredictionTable:
    """Static mode: the original variant's probabilities read from columns already in the
    data; the i-th column of each list is class i (labels are class indices)."""
    t_cols, s_cols = list(cfg.teacher_prob_columns or ()), list(cfg.student_prob_columns or ())
    p_t = check_probabilities(df[t_cols].to_numpy(dtype=np.float64, na_value=np.nan), "teacher (static columns)")
    p_s = check_probabilities(df[s_cols].to_numpy(dtype=np.float64, na_value=np.nan), "student (static columns)")
    k = p_t.shape[1]
    labels = encode_labels(y, None, k) if y is not None else None
    table = PredictionTable(len(df), [str(j) for j in range(k)], labels, named=False)
    table.add(ORIGINAL, np.arange(len(df)), PairPredictions(p_t, p_s))
    return table


def original_table(
    original: Variant, y: np.ndarray | None, models: ModelPair, ahead: PredictionTable | None = None
) -> PredictionTable:
    """Model mode: a table holding both models on the original inputs, with the labels
    encoded as the teacher's class indices (``ahead``: what the engine already predicted)."""
    if ahead is not None and ORIGINAL in ahead:
        preds, named = ahead.base, ahead.class_names
    else:
        preds, named = models.predict(original.frame)
    k = preds.teacher.shape[1]
    index_labels = bool(getattr(models.teacher, "index_labels", False))
    labels = encode_labels(y, named, k, index_labels=index_labels) if y is not None else None
    table = PredictionTable(len(original.positions), named or [str(j) for j in range(k)], labels, named is not None)
    table.add(ORIGINAL, original.positions, preds)
    return table


def predict_variants(
    table: PredictionTable,
    variants: tuple[Variant, ...],
    models: ModelPair | None,
    ahead: PredictionTable | None = None,
) -> None:
    """Both models on each variant not yet in ``table`` (from ``ahead`` when the engine
    predicted it already), added under the variant's name."""
    for variant in variants:
        if variant.name in table:
            continue
        if ahead is not None and variant.name in ahead:
            table.add(variant.name, variant.positions, ahead.pair(variant.name))
        elif models is None:
            raise MetaCompressInputError(
                f"variant {variant.name!r} needs models; static mode only judges the given probabilities"
            )
        else:
            table.add(variant.name, variant.positions, models.predict(variant.frame)[0])
