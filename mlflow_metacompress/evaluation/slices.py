"""Relation rates per value of a data column: ``evaluator_config["slice_columns"]``.

Slicing by segment (Giskard, Deepchecks) shows *where* a student departs from its teacher,
for example per CWE class on vulnerability data. For each column ``c`` in ``slice_columns``
and each of its ``max_slice_values`` most frequent values ``v`` this logs::

    mr1_violation_rate/slice:<c>:<v>   mr2_violation_rate/slice:<c>:<v>
    mr3_violation_rate/slice:<c>:<v>   mr4_violation_rate/slice:<c>:<v>
    any_violation_rate/slice:<c>:<v>

(one ``<key>_violation_rate`` per registered relation, :mod:`mlflow_metacompress.relations`)

(``slice:``, not the ``slice=`` first proposed: MLflow refuses ``=`` in a metric name.)

**Original inputs only.** Slices are judged on the data as given, not on metamorphic or
adversarial variants: one rate per (relation, value) stays readable and gateable, where
every transformation would multiply the keys by 13. ``per_sample.parquet``'s ``row`` joins
any variant back to the data for other cuts.

**Same judgement, restricted.** Each slice rate is the mean of the same per-sample flags the
overall rate averages (MetaCompress, arXiv 2511.05476): MR1 and MR2 over the slice's
samples; MR3 over its samples in the high-confidence set H (omitted when none is in H, as
the overall MR3 is); MR4 is the fraction of its samples whose teacher-confidence bin violates,
with the bins of the whole evaluation (a slice of a few samples has no calibration of its own);
``any_violation_rate`` the fraction with any violation. The overall rate is therefore the
sample-weighted mean of the slice rates whenever every value is sliced.

**Values.** A missing value (None/NaN) is the value ``<missing>``; other values are compared
by ``str(value)``. Values are ranked by frequency (ties by text); values beyond
``max_slice_values`` (default 20) are skipped with a warning and counted in ``summary.json``
(``slices``).

**Names.** MLflow allows only word characters, ``_ - . /``, spaces and (off Windows) ``:`` in
metric names (``mlflow.utils.validation.validate_param_and_metric_name``), and rejects names
that change under path normalisation. A column name or value becomes
a *token*: surrounding spaces stripped, every character other than a word character (Unicode
letters, digits, ``_``), ``.``, ``-`` or a space replaced by ``_`` (so ``/`` and ``:`` never
appear inside it); an empty token is ``_empty_``; a token longer than 60 characters is cut and
ends in ``-`` plus 8 hex digits of the SHA-1 of the text. When different texts give one token,
each of them gets ``-`` plus those 8 hex digits. ``summary.json`` maps every token back to its value.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections import Counter
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..adapters.checks import MetaCompressInputError
from .value_checks import check_int, check_names

if TYPE_CHECKING:
    from .config_model import EvaluatorConfig

logger = logging.getLogger(__name__)


def slice_metric_names() -> tuple[str, ...]:
    """The rates sliced: each registered relation's ``<key>_violation_rate``, then ``any_violation_rate``."""
    from ..relations import registered_relations

    return (*(r.rate_metric for r in registered_relations()), "any_violation_rate")


def __getattr__(name: str) -> Any:
    if name == "SLICE_METRICS":  # computed per access: a relation registered later is included
        return slice_metric_names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


MISSING = "<missing>"
TOKEN_LIMIT = 60
_UNSAFE = re.compile(r"[^\w.\- ]")


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:8]


def metric_token(text: str) -> str:
    """``text`` as it appears in a metric name (module docstring: Names), before de-duplication."""
    token = _UNSAFE.sub("_", text.strip()) or "_empty_"
    if len(token) > TOKEN_LIMIT:
        token = f"{token[: TOKEN_LIMIT - 9]}-{_digest(text)}"
    return token


def metric_tokens(texts: list[str]) -> dict[str, str]:
    """A distinct token for each distinct text: colliding tokens get ``-<sha1[:8]>`` of their text."""
    first = {t: metric_token(t) for t in dict.fromkeys(texts)}
    seen = Counter(first.values())
    return {t: tok if seen[tok] == 1 else f"{tok}-{_digest(t)}" for t, tok in first.items()}


SLICE_MARK = "/slice:"


def slice_key(metric: str, column_token: str, value_token: str) -> str:
    """``<metric>/slice:<column>:<value>`` (tokens from :func:`metric_tokens`, which never hold ``:`` or ``/``)."""
    return f"{metric}{SLICE_MARK}{column_token}:{value_token}"


def value_text(value: Any) -> str:
    """The text a cell is compared and named by; None and NaN are ``<missing>``."""
    if value is None or (np.ndim(value) == 0 and bool(pd.isna(value))):
        return MISSING
    return str(value)


def check_slice_keys(cfg: EvaluatorConfig) -> None:
    """The types of ``slice_columns`` and ``max_slice_values``, without the data."""
    check_int("max_slice_values", cfg.max_slice_values, 1)
    check_names("slice_columns", cfg.slice_columns)


def check_slice_config(cfg: EvaluatorConfig, data: pd.DataFrame) -> None:
    """``slice_columns`` (names of columns of ``data`` with hashable cells) and ``max_slice_values`` (≥ 1);
    :class:`MetaCompressInputError` naming the key, the column or the value otherwise."""
    check_slice_keys(cfg)
    for column in cfg.slice_columns or ():
        if column not in data.columns:
            raise MetaCompressInputError(
                f"evaluator_config['slice_columns'] names {column!r}, which is not a column of the data "
                f"(targets are not features); columns are {list(data.columns)}"
            )
        # np.ndim takes any object; numpy's stub only lists array-likes
        bad = [v for v in data[column] if not isinstance(v, Hashable) or np.ndim(v) != 0][:1]  # type: ignore[arg-type]
        if bad:
            raise MetaCompressInputError(
                f"slice column {column!r} must hold single values (strings, numbers); it holds {bad[0]!r} "
                f"({type(bad[0]).__name__})"
            )


def _rates(rows: pd.DataFrame) -> dict[str, float]:
    """Each registered relation's rate over ``rows`` (per-sample columns of the original inputs):
    the mean of its ``slice_flag`` over the rows in its ``slice_support`` (omitted when none
    is), then ``any_violation_rate``."""
    from ..relations import registered_relations

    rates = {}
    for relation in registered_relations():
        flags = rows[relation.slice_flag or relation.flag].to_numpy(dtype=bool)
        if relation.slice_support is not None:
            flags = flags[rows[relation.slice_support].to_numpy(dtype=bool)]
        if len(flags):
            rates[relation.rate_metric] = float(flags.mean())
    rates["any_violation_rate"] = float(rows["any_violation"].mean())
    return rates


def slice_metrics(
    df: pd.DataFrame, per_sample: pd.DataFrame, cfg: EvaluatorConfig
) -> tuple[dict[str, float], dict[str, Any]]:
    """Slice rates of every ``cfg.slice_columns`` column and the ``slices`` note for ``summary.json``.

    ``df``: the evaluation data (index reset); ``per_sample``: the engine's per-sample table,
    whose ``original`` rows (``row`` = position in ``df``) are sliced.
    """
    columns = list(cfg.slice_columns or ())
    if not columns:
        return {}, {}
    orig = per_sample[per_sample["variant"] == "original"]
    column_tokens = metric_tokens(columns)
    metrics: dict[str, float] = {}
    notes: dict[str, Any] = {}
    for column in columns:
        texts = df[column].iloc[orig["row"].to_numpy()].map(value_text).to_numpy()
        counts = sorted(Counter(texts).items(), key=lambda kv: (-kv[1], kv[0]))
        kept, skipped = counts[: cfg.max_slice_values], counts[cfg.max_slice_values :]
        tokens = metric_tokens([text for text, _ in kept])
        sliced = []
        for text, n in kept:
            for metric, rate in _rates(orig[texts == text]).items():
                metrics[slice_key(metric, column_tokens[column], tokens[text])] = rate
            sliced.append({"value": text, "token": tokens[text], "samples": int(n)})
        skipped_samples = int(sum(n for _, n in skipped))
        if skipped:
            logger.warning(
                "slice column %r has %d distinct values: rates are logged for the %d most frequent "
                "(max_slice_values) and %d values (%d samples) are skipped",
                column,
                len(counts),
                len(kept),
                len(skipped),
                skipped_samples,
            )
        notes[column] = {
            "token": column_tokens[column],
            "distinct_values": len(counts),
            "sliced": sliced,
            "skipped_values": len(skipped),
            "skipped_samples": skipped_samples,
        }
    return metrics, {"slices": notes}
