"""Variants: every way the evaluator produces inputs, behind one interface.

A variant is a set of rows (positions into the evaluation data) with possibly rewritten
code; the same relations judge every variant (MetaCompress, arXiv 2511.05476, checks its
relations on original, transformed and adversarial code). Three producers:

- :func:`original_variant`: the data as given;
- :func:`transformed`: one variant per semantics-preserving transformation (NatGen,
  Chakraborty et al., FSE 2022; CODA, Tian et al., ASE 2023; Rabin et al., IST 2021),
  judged also pooled as ``/metamorphic`` (MORPH's prediction flips, Panichella, ICSE 2025);
- :func:`adversarial`: the student's adversarial examples from each attack (MHM, ALERT,
  WIR-Random, CODA, as in MetaCompress's robustness study). Attacks query the models
  while they search, so this producer receives the :class:`~.pair.ModelPair`.

A producer never predicts for the evaluator and never touches an outcome: it returns a
:class:`~.variant_types.VariantSet` (its variants plus its own metrics and tables); :mod:`.predict` puts
both models' probabilities on them into the :class:`~.predictions.PredictionTable` and
:mod:`.judge` judges the table (:func:`~.loop.run_evaluation` runs the three steps). What a
variant is: :mod:`.variant_types`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..adapters.checks import MetaCompressInputError
from .column_transforms import ColumnTransforms, column_transforms
from .variant_types import AttackReports, ComputeColumns, SourceInputs, Variant, VariantSet, VariantSource

if TYPE_CHECKING:
    from ..attacks.results import AttackReport
    from .pair import ModelPair

logger = logging.getLogger(__name__)


def original_variant(df: pd.DataFrame, code_columns: tuple[str, ...] | list[str] | None) -> Variant:
    """Every row as given (no code columns in static mode without code: an empty frame)."""
    if not code_columns:
        return Variant("original", "original", np.arange(len(df)), pd.DataFrame(index=range(len(df))), "")
    frame = df[list(code_columns)].reset_index(drop=True)
    return Variant("original", "original", np.arange(len(df)), frame, code_columns[0])


@dataclass(frozen=True, eq=False)
class TransformOutcome:
    """Transformed variants plus what could not be transformed."""

    variants: list[Variant]
    applicable_rate: dict[str, float]
    parse_failures: list[int] = field(default_factory=list)
    language: str | None = None
    over_limit: dict[int, str] = field(default_factory=dict)  # row -> too_large / too_deep


def transform_variants(
    df: pd.DataFrame,
    code_columns: list[str],
    transform_columns: list[str],
    names: list[str],
    language: str,
    seed: int = 0,
    progress: bool = True,
    computed: dict[str, ColumnTransforms] | None = None,
) -> TransformOutcome:
    """Apply each named transformation to ``transform_columns`` (each sample parsed once).

    A row enters variant ``t`` only when ``t`` changed it; rows that do not parse are
    skipped for every transformation and reported in ``parse_failures``, and rows over the
    transformation library's size or nesting limits likewise in ``over_limit``.
    ``computed``: the per-column results already computed elsewhere (the spark engine).
    """
    base = df[list(code_columns)].reset_index(drop=True)
    results = computed or {
        col: column_transforms(base[col].tolist(), names, language, seed, progress) for col in transform_columns
    }
    failed = np.zeros(len(base), dtype=bool)
    for col in transform_columns:
        failed |= results[col].failed
    over: dict[int, str] = {}
    for col in transform_columns:
        for i, reason in enumerate(results[col].over):
            if reason is not None and not failed[i]:
                over.setdefault(i, reason)
    skipped = failed.copy()
    skipped[list(over)] = True
    variants, rates = [], {}
    for name in names:
        changed = np.zeros(len(base), dtype=bool)
        frame = base.copy()
        for col in transform_columns:
            col_changed = results[col].changed[name]
            frame.loc[col_changed, col] = [c for c, k in zip(results[col].codes[name], col_changed, strict=True) if k]
            changed |= col_changed
        changed &= ~skipped
        rates[name] = float(changed.sum() / max(1, (~skipped).sum()))
        positions = np.flatnonzero(changed)
        variants.append(
            Variant(name, "transform", positions, frame.iloc[positions].reset_index(drop=True), transform_columns[0])
        )
    if failed.any():
        logger.warning(
            "%d of %d samples do not parse as %s and were skipped for transformations",
            failed.sum(),
            len(base),
            language,
        )
    if over:
        logger.warning(
            "%d of %d samples exceed the transformation size/depth limits and were skipped", len(over), len(base)
        )
    return TransformOutcome(variants, rates, np.flatnonzero(failed).tolist(), language, over)


def transformed(
    inputs: SourceInputs, models: ModelPair | None = None, compute: ComputeColumns | None = None
) -> VariantSet:
    """One variant per transformation that changed some sample, pooled as ``/metamorphic``;
    metrics ``transform_parse_failures``, ``transform_over_limit`` and
    ``transform_applicable_rate/<t>``. Needs no model. ``compute``: where the transformations
    run, when not here (the Spark engine's executors, :mod:`.spark_transforms`); the results
    are the same."""
    cfg = inputs.cfg
    names = cfg.transform_names()
    language = cfg.language
    if not names or language is None:  # transform_names() refuses transformations without a language
        return VariantSet()
    code_columns, transform_columns = list(cfg.code_columns or ()), list(cfg.transform_columns or ())
    computed = None
    if compute is not None:
        computed = compute(inputs.df, transform_columns, names, language, cfg.seed)
    result = transform_variants(
        inputs.df, code_columns, transform_columns, names, language, cfg.seed, cfg.progress, computed
    )
    metrics = {
        "transform_parse_failures": float(len(result.parse_failures)),
        "transform_over_limit": float(len(result.over_limit)),
    }
    metrics.update({f"transform_applicable_rate/{name}": rate for name, rate in result.applicable_rate.items()})
    tables = {}
    if result.parse_failures:
        codes = inputs.df[transform_columns[0]].iloc[result.parse_failures].to_numpy()
        tables["transform_parse_failures"] = pd.DataFrame({"row": result.parse_failures, "code": codes})
    if result.over_limit:
        rows = sorted(result.over_limit)
        tables["transform_over_limit"] = pd.DataFrame({"row": rows, "reason": [result.over_limit[r] for r in rows]})
    used = tuple(v for v in result.variants if len(v.positions))
    if not used:
        logger.warning("no transformation applied to any sample; no /<transform> metrics are logged")
        return VariantSet(metrics=metrics, tables=tables)
    from .trained import pooled_set

    return pooled_set(used, cfg, metrics, tables)


def adversarial(
    inputs: SourceInputs, models: ModelPair | None, attack_reports: AttackReports | None = None
) -> VariantSet:
    """Attack teacher and student separately with each configured attack; the student's
    successful adversarial examples become variant ``attack_<a>``.

    Metrics ``attack_<a>/<teacher|student>_<m>`` (ASR, queries, accuracy under attack and
    its drop), ``attack_<a>/excess_drop`` (student drop − teacher drop) and, when the
    teacher's accuracy dropped, ``attack_<a>/excess_drop_pct``; table ``attacks/<a>``.
    ``attack_reports``: where the attacks run, when not here (with ``attack_engine="spark"`` the
    Spark engine attacks the samples on executors, :mod:`.spark_attacks`, with the same
    results): ``{(attack, role): AttackReport}`` for every configured attack and role.
    """
    cfg = inputs.cfg
    if not cfg.attacks:
        return VariantSet()
    if models is None or inputs.labels is None or inputs.base is None:
        raise MetaCompressInputError("attacks need both models and labels (targets=<label column>)")
    base = inputs.base
    language = cfg.language
    if language is None:  # parse_config detects it whenever attacks are asked for
        raise MetaCompressInputError("attacks need the code's language; set evaluator_config['language']")
    from ..artifact_names import attack_table

    code_columns = list(cfg.code_columns or ())
    frame = inputs.df[code_columns].reset_index(drop=True)
    if cfg.attack_max_samples is not None:
        frame = frame.iloc[: cfg.attack_max_samples]
    y = inputs.labels[: len(frame)]
    metrics: dict[str, float] = {}
    tables: dict[str, pd.DataFrame] = {}
    variants = []
    elsewhere = attack_reports(frame, y, cfg, inputs.classes) if attack_reports is not None else None
    for attack in cfg.attacks:
        drops, reports = {}, {}
        for role, predictor, probs in (
            ("teacher", models.teacher, base.teacher),
            ("student", models.student, base.student),
        ):
            clean_accuracy = float((probs[: len(frame)].argmax(axis=1) == y).mean())
            report = _attack_report(attack, role, predictor, frame, y, inputs, language, elsewhere)
            attack_metrics = report.metrics(clean_accuracy)
            metrics.update({f"attack_{attack}/{role}_{k}": float(v) for k, v in attack_metrics.items()})
            drops[role] = float(attack_metrics["accuracy_drop"])
            reports[role] = report
        metrics[f"attack_{attack}/excess_drop"] = drops["student"] - drops["teacher"]
        if drops["teacher"] > 0:
            metrics[f"attack_{attack}/excess_drop_pct"] = (
                100.0 * (drops["student"] - drops["teacher"]) / drops["teacher"]
            )
        else:
            logger.warning(
                "attack %s: the teacher's accuracy did not drop, so excess_drop_pct is undefined and not logged", attack
            )
        tables[attack_table(attack)] = reports["student"].table()
        adv = reports["student"].adversarial_frame()
        if len(adv):
            variants.append(
                Variant(
                    f"attack_{attack}",
                    "attack",
                    adv.index.to_numpy(),
                    adv[code_columns].reset_index(drop=True),
                    code_columns[0],
                )
            )
    return VariantSet(tuple(variants), None, metrics, tables)


def _attack_report(
    attack: str,
    role: str,
    predictor: Any,
    frame: pd.DataFrame,
    y: np.ndarray,
    inputs: SourceInputs,
    language: str,
    elsewhere: Mapping[tuple[str, str], Any] | None,
) -> AttackReport:
    """``role``'s report under ``attack``: the one run elsewhere (``attack_reports``), else
    the one remembered for the same model, samples and settings, else a fresh run here."""
    from ..attacks.memo import recall, remember, teacher_report_key
    from ..attacks.runner import run_attack
    from .pair import attack_victim

    cfg, code_columns = inputs.cfg, list(inputs.cfg.code_columns or ())
    memo = teacher_report_key(
        role, predictor, attack, frame, y, (language, cfg.attack_budget, cfg.seed, cfg.attack_mlm)
    )
    if elsewhere is not None:
        return elsewhere[(attack, role)]
    folder = cfg.cache_path
    if (report := recall(memo, folder)) is None:
        report = run_attack(
            attack,
            attack_victim(predictor, code_columns, inputs.classes),
            frame,
            code_columns,
            y,
            language,
            budget=cfg.attack_budget,
            seed=cfg.seed,
            progress=cfg.progress,
            mlm=cfg.attack_mlm,
        )
        remember(memo, report, folder)
    return report


SOURCES: tuple[VariantSource, ...] = (transformed, adversarial)
"""The producers run after the original, in order (their variants' rows follow in per_sample)."""
