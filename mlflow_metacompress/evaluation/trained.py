"""``evaluator_config["trained_transforms"]``: judge a student on rewrites it never trained on.

A student distilled on rewritten code (``fidelity``, ``repair``; MORPH's augmentation,
Panichella, ICSE 2025) has seen some of the transformations the evaluation applies, so
part of its lower violation rate on them is overlap between training and test. With this
key the pooled ``…/metamorphic`` metrics (the headline, the gates' usual target) pool only
the **unseen** transformations; the seen ones are pooled apart as ``…/metamorphic_seen``;
per-transformation metrics are unchanged; and the deviation search
(``evaluator_config["deviation"]``) composes only unseen operators.

Values: ``None`` (the default: nothing is held apart), a list of rewrite names (the
transformations of :mod:`mlflow_metacompress.transforms` or the deviation search's
``rename_identifier``), or ``"auto"``: the names the student's training run recorded in
its :data:`~mlflow_metacompress.artifact_names.TRAINED_TRANSFORMS_TAG` tag (none when the
run has no such tag, e.g. a Compressor student).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..adapters.checks import MetaCompressInputError
from ..artifact_names import TRAINED_TRANSFORMS_TAG

if TYPE_CHECKING:
    import pandas as pd

    from .config_model import EvaluatorConfig
    from .variant_types import Variant, VariantSet  # noqa: F401 - annotations

logger = logging.getLogger(__name__)

KEY = "trained_transforms"
AUTO = "auto"
SEEN_POOL = "metamorphic_seen"
"""The variant name of the seen transformations pooled (``mr1_violation_rate/metamorphic_seen``)."""


def check_value(value: Any) -> None:
    """The key's type: None, ``"auto"``, a name or a list of names (checked against the
    language by :func:`check_names` once the language is known)."""
    if value is None or value == AUTO:
        return
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) and n for n in names):
        raise MetaCompressInputError(
            f"evaluator_config['{KEY}'] must be 'auto', a rewrite name or a list of names; got {value!r}"
        )


def names_of(cfg: EvaluatorConfig) -> tuple[str, ...]:
    """The rewrites held apart: none for None or an unresolved ``"auto"``."""
    value = cfg.trained_transforms
    if value is None or value == AUTO:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


def check_names(cfg: EvaluatorConfig) -> None:
    """Every held-apart name is a rewrite of ``cfg.language`` (a transformation or the
    deviation search's identifier rename), and so is every ``deviation.operators`` name, with
    one left to search; the error names the unknown ones and the known. Before any model runs."""
    from .deviation_settings import parse_deviation

    settings = parse_deviation(cfg.deviation)
    if settings is not None:
        unseen_operators(cfg, settings.operators)
    names = names_of(cfg)
    if not names or cfg.language is None:
        return
    from ..attacks.deviation.space import default_operators

    known = default_operators(cfg.language)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise MetaCompressInputError(
            f"evaluator_config['{KEY}'] names {unknown}, which are not rewrites of {cfg.language!r}; known: {known}"
        )


def resolve(cfg: EvaluatorConfig, model: Any) -> EvaluatorConfig:
    """``cfg`` with ``"auto"`` replaced by the names the student's training run recorded
    (``model``: the student as MLflow passes it, a loaded pyfunc or a model URI)."""
    if cfg.trained_transforms != AUTO:
        return cfg
    run_id = _run_id(model)
    names: tuple[str, ...] = ()
    if run_id is not None:
        from mlflow import MlflowClient

        tag = MlflowClient().get_run(run_id).data.tags.get(TRAINED_TRANSFORMS_TAG, "")
        names = tuple(n for n in tag.split(",") if n)
    logger.info(
        "trained_transforms='auto': the student's run %s names %s", run_id, list(names) if names else "no rewrite"
    )
    sources = tuple(s for s in cfg.sources if s[0] != KEY) + ((KEY, "detected"),)
    resolved = replace(cfg, trained_transforms=names, sources=sources)
    check_names(resolved)
    return resolved


def _run_id(model: Any) -> str | None:
    metadata = getattr(model, "metadata", None)
    run_id = getattr(metadata, "run_id", None)
    if run_id:
        return str(run_id)
    if isinstance(model, str):
        import mlflow

        return mlflow.models.get_model_info(model).run_id or None
    return None


def split(names: list[str], cfg: EvaluatorConfig) -> tuple[list[str], list[str]]:
    """``(unseen, seen)``: ``names`` (variant names) without and with the held-apart rewrites."""
    held = set(names_of(cfg))
    return [n for n in names if n not in held], [n for n in names if n in held]


def unseen_operators(cfg: EvaluatorConfig, given: tuple[str, ...] | None = None) -> tuple[str, ...] | None:
    """The deviation search's operators: ``given`` (``deviation.operators``; None: every rewrite
    of the language) without the held-apart rewrites; None when nothing restricts them."""
    held = set(names_of(cfg))
    if (not held and given is None) or cfg.language is None:
        return given
    from ..attacks.deviation.space import default_operators

    known = default_operators(cfg.language)
    unknown = [o for o in given or () if o not in known]
    if unknown:
        raise MetaCompressInputError(
            f"evaluator_config['deviation']['operators'] names {unknown}, not rewrites of {cfg.language!r}; "
            f"known: {known}"
        )
    left = tuple(o for o in (given or known) if o not in held)
    if not left:
        raise MetaCompressInputError(
            f"evaluator_config['{KEY}'] holds apart every rewrite the deviation search may use ({list(given or known)})"
        )
    return left


def pooled_set(
    used: tuple[Variant, ...], cfg: EvaluatorConfig, metrics: dict[str, float], tables: dict[str, pd.DataFrame]
) -> VariantSet:
    """The transformed variants with their pooled views: ``/metamorphic`` over all of them, or,
    with ``trained_transforms``, over the unseen ones and ``/metamorphic_seen`` over the seen."""
    from .variant_types import VariantSet, pooled_variant

    notes: dict[str, Any] = {"language": cfg.language}
    if not names_of(cfg):
        return VariantSet(used, pooled_variant(list(used)), metrics, tables, notes)
    unseen, seen = split([v.name for v in used], cfg)
    by_name = {v.name: v for v in used}
    pooled = pooled_variant([by_name[n] for n in unseen])
    seen_pool = pooled_variant([by_name[n] for n in seen], SEEN_POOL)
    notes["trained_transforms"] = {"unseen": unseen, "seen": seen}
    if pooled is None:
        logger.warning("every applied transformation is one the student trained on: no /metamorphic metrics")
    members = {}
    if pooled is not None:
        members[pooled.name] = tuple(unseen)
    if seen_pool is not None:
        members[SEEN_POOL] = tuple(seen)
    more = (seen_pool,) if seen_pool is not None else ()
    return VariantSet(used, pooled, metrics, tables, notes, more, members)
