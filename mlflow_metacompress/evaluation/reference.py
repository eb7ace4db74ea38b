"""The reference model (issue 42): a second model of the teacher's task, judged against the
teacher on exactly the rows the student is judged on.

MetaCompress (Awal, Rochan, Roy, arXiv 2511.05476) takes the teacher as the oracle; a
teacher retrained with another seed disagrees with the first one on a sizeable share of
transformed inputs, so the student's rates are read against such a model's
(``evaluator_config["reference"]``, or ``reference_prob_columns`` in static mode). This
module predicts the reference on every variant of the :class:`~.predictions.PredictionTable`
(the original, each transformation, each attack's adversarial rows; a pooled variant is its
members' rows), puts its relation columns into the per-sample table beside the student's
(``reference_<column>``) and adds the paired families of :mod:`mlflow_metacompress.paired`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..adapters.checks import MetaCompressInputError, check_probabilities
from ..relations import evaluate_relations
from .predictions import ORIGINAL

if TYPE_CHECKING:
    from ..adapters.predictors import Predictor
    from .config_model import EvaluatorConfig
    from .judge import Judged
    from .predictions import PredictionTable
    from .variant_types import VariantSet

ReferenceProbabilities = dict[str, np.ndarray]
"""Variant name → the reference's probabilities on its rows (the teacher's class order)."""


def _aligned(probs: np.ndarray, names: list[str] | None, table: PredictionTable) -> np.ndarray:
    """The reference's columns in the teacher's class order (by name when both name their
    classes, else by position), or a :class:`MetaCompressInputError` naming the reference."""
    k = len(table.classes)
    if probs.ndim != 2 or probs.shape[1] != k:
        raise MetaCompressInputError(
            f"the reference and the teacher disagree on the number of classes: the teacher has {k} "
            f"({table.class_names}), the reference {probs.shape[1] if probs.ndim == 2 else probs.shape}"
        )
    if table.class_names is not None and names is not None:
        if set(names) != set(table.classes):
            only_r, only_t = sorted(set(names) - set(table.classes)), sorted(set(table.classes) - set(names))
            raise MetaCompressInputError(
                f"reference classes {names} and teacher classes {table.classes} differ: only in the reference "
                f"{only_r}, only in the teacher {only_t}"
            )
        return probs[:, [names.index(c) for c in table.classes]]
    return probs


def static_reference(df: pd.DataFrame, cfg: EvaluatorConfig, table: PredictionTable) -> ReferenceProbabilities:
    """Static mode: the reference's probabilities on the original rows, read from
    ``reference_prob_columns`` (the i-th column is class i, as the teacher's)."""
    cols = list(cfg.reference_prob_columns or ())
    probs = check_probabilities(df[cols].to_numpy(dtype=np.float64, na_value=np.nan), "reference (static columns)")
    return {ORIGINAL: _aligned(probs, None, table)}


def predict_reference(
    reference: Predictor, table: PredictionTable, frames: dict[str, pd.DataFrame], code_columns: list[str]
) -> ReferenceProbabilities:
    """The reference on every variant's ``frames`` (by name; the rows the student is judged
    on), in the teacher's class order."""
    out: ReferenceProbabilities = {}
    for name, frame in frames.items():
        probs, names = reference.predict(frame, code_columns)
        out[name] = _aligned(np.asarray(probs, dtype=np.float64), names, table)
    return out


def variant_frames(sets: list[VariantSet]) -> dict[str, pd.DataFrame]:
    """Every judged variant's frame by name (pooled variants are their members' rows)."""
    return {v.name: v.frame for produced in sets for v in produced.variants}


def add_reference(
    judged: Judged, table: PredictionTable, probs: ReferenceProbabilities, cfg: EvaluatorConfig, n: int
) -> None:
    """The reference's per-sample columns (``reference_prob_<c>``, ``reference_pred`` and
    every relation column, prefixed ``reference_``) beside the student's, then the families
    ``reference/``, ``excess/`` and ``increment/`` (:func:`mlflow_metacompress.paired.paired_metrics`)."""
    from ..paired import REFERENCE_COLUMN, paired_metrics

    per = judged.per_sample
    variant = per["variant"].to_numpy().astype(str)
    columns: dict[str, np.ndarray] = {}
    for name in dict.fromkeys(variant.tolist()):
        mask = variant == name
        if name not in probs:
            raise MetaCompressInputError(f"the reference was not predicted on variant {name!r}")
        p_r, p_t = probs[name], table.probabilities(name, "teacher")
        if len(p_r) != int(mask.sum()) or len(p_r) != len(p_t):
            raise MetaCompressInputError(f"variant {name!r}: the reference gave {len(p_r)} rows for {len(p_t)}")
        result = evaluate_relations(p_t, p_r, None, cfg.relation_config)
        part: dict[str, Any] = {f"{REFERENCE_COLUMN}prob_{c}": p_r[:, j] for j, c in enumerate(table.classes)}
        part[f"{REFERENCE_COLUMN}pred"] = result.per_sample["student_pred"]
        part.update({f"{REFERENCE_COLUMN}{k}": v for k, v in result.per_sample.items() if not k.endswith("_pred")})
        for key, values in part.items():
            if key not in columns:
                columns[key] = np.zeros(len(per), dtype=np.asarray(values).dtype)
            columns[key][mask] = values
    judged.per_sample = pd.concat([per, pd.DataFrame(columns, index=per.index)], axis=1)
    metrics = paired_metrics(judged.per_sample, n, judged.pooled, cfg.bootstrap_samples, cfg.seed, cfg.relation_config)
    judged.metrics.update(metrics)
    judged.notes["reference"] = {
        "judged": "against the teacher, on the rows the student is judged on",
        "families": ["reference/<m>", "excess/<m>", "increment/<m>", "reference/increment/<m>", "excess/increment/<m>"],
        "bootstrap_samples": cfg.bootstrap_samples,
        "seed": cfg.seed,
    }
