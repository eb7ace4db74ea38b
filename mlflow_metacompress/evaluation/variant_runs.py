"""Transformed and adversarial variants run through the same relations.

Transformations: NatGen (Chakraborty et al., FSE 2022), CODA (Tian et al., ASE 2023)
and Rabin et al. (IST 2021) rewrites, with MORPH's prediction flips (Panichella, ICSE
2025). Attacks: MHM, ALERT, WIR-Random, CODA, as in MetaCompress's robustness study.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .validation import MetaCompressInputError
from .variants import Variant, detect_language, pooled_variant, resolve_transform_names, transform_variants

if TYPE_CHECKING:
    from .config import EvaluatorConfig
    from .engine import Comparison, Outcome, PairPredictions

logger = logging.getLogger(__name__)


def _language(df: pd.DataFrame, cfg: EvaluatorConfig) -> str:
    if cfg.language is None:
        cfg.language = detect_language(df[cfg.code_columns[0]].tolist())
    return cfg.language


def _split(preds: PairPredictions, sizes: list[int]) -> list[PairPredictions]:
    from .engine import PairPredictions

    cuts = np.cumsum(sizes)[:-1]
    return [PairPredictions(t, s) for t, s in zip(np.split(preds.teacher, cuts), np.split(preds.student, cuts))]


def run_transform_variants(
    df: pd.DataFrame, cfg: EvaluatorConfig, comparison: Comparison, base: PairPredictions,
    labels: np.ndarray | None, outcome: Outcome,
) -> list[pd.DataFrame]:
    """Metrics suffixed ``/t`` per transformation and ``/metamorphic`` pooled."""
    if cfg.transforms in (None, [], (), ""):
        return []
    language = _language(df, cfg)
    names = resolve_transform_names(cfg.transforms, language)
    if not names:
        return []
    missing = [c for c in cfg.transform_columns or [] if c not in (cfg.code_columns or [])]
    if missing:
        raise MetaCompressInputError(f"transform_columns {missing} are not code columns {cfg.code_columns}")
    result = transform_variants(df, cfg.code_columns, cfg.transform_columns, names, language, cfg.seed, cfg.progress)
    metrics = outcome.metrics
    metrics["transform_parse_failures"] = float(len(result.parse_failures))
    for name, rate in result.applicable_rate.items():
        metrics[f"transform_applicable_rate/{name}"] = rate
    if result.parse_failures:
        outcome.extra_tables["transform_parse_failures"] = pd.DataFrame(
            {"row": result.parse_failures, "code": df[cfg.transform_columns[0]].iloc[result.parse_failures].to_numpy()}
        )
    used = [v for v in result.variants if len(v.positions)]
    if not used:
        logger.warning("no transformation applied to any sample; no /<transform> metrics are logged")
        return []
    pooled = pooled_variant(used)
    preds = comparison.predict(pooled.frame)
    rows = []
    for variant, part in zip(used, _split(preds, [len(v.positions) for v in used])):
        m, r = comparison.judge(variant, part, labels, base)
        metrics.update(m)
        rows.append(r)
    m, _ = comparison.judge(pooled, preds, labels, base)
    metrics.update(m)
    outcome.notes["language"] = language
    return rows


def run_attack_variants(
    df: pd.DataFrame, cfg: EvaluatorConfig, comparison: Comparison, base: PairPredictions,
    labels: np.ndarray | None, outcome: Outcome,
) -> list[pd.DataFrame]:
    """Attack teacher and student separately; judge the student's adversarial examples."""
    if not cfg.attacks:
        return []
    if labels is None:
        raise MetaCompressInputError("attacks need labels: pass targets=<label column> to mlflow.models.evaluate")
    from ..attacks.runner import list_attacks, run_attack

    unknown = [a for a in cfg.attacks if a not in list_attacks()]
    if unknown:
        raise MetaCompressInputError(f"unknown attacks {unknown}; available: {list_attacks()}")
    language = _language(df, cfg)
    frame = df[cfg.code_columns].reset_index(drop=True)
    if cfg.attack_max_samples is not None:
        frame = frame.iloc[: cfg.attack_max_samples]
    y = labels[: len(frame)]
    rows = []
    for attack in cfg.attacks:
        drops: dict[str, float] = {}
        reports = {}
        for role, predictor, probs in (("teacher", comparison.teacher, base.teacher), ("student", comparison.student, base.student)):
            clean_accuracy = float((probs[: len(frame)].argmax(axis=1) == y).mean())
            fn = predictor.uncached()
            report = run_attack(attack, lambda d, fn=fn: fn.predict(d, cfg.code_columns)[0], frame, cfg.code_columns, y,
                                language, budget=cfg.attack_budget, seed=cfg.seed, progress=cfg.progress, mlm=cfg.attack_mlm)
            attack_metrics = report.metrics(clean_accuracy)
            for k, v in attack_metrics.items():
                outcome.metrics[f"attack_{attack}/{role}_{k}"] = float(v)
            drops[role] = float(attack_metrics["accuracy_drop"])
            reports[role] = report
        outcome.metrics[f"attack_{attack}/excess_drop"] = drops["student"] - drops["teacher"]
        if drops["teacher"] > 0:
            outcome.metrics[f"attack_{attack}/excess_drop_pct"] = 100.0 * (drops["student"] - drops["teacher"]) / drops["teacher"]
        else:
            logger.warning("attack %s: the teacher's accuracy did not drop, so excess_drop_pct is undefined and not logged", attack)
        outcome.extra_tables[f"attacks/{attack}"] = reports["student"].table()
        adv = reports["student"].adversarial_frame()
        if len(adv):
            positions = adv.index.to_numpy()
            variant = Variant(f"attack_{attack}", "attack", positions, adv[cfg.code_columns].reset_index(drop=True), cfg.code_columns[0])
            m, r = comparison.judge(variant, comparison.predict(variant.frame), labels, base)
            outcome.metrics.update(m)
            rows.append(r)
    return rows
