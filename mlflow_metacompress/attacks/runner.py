"""Run one attack over a data frame: the few lines the evaluator and the CLI call.

``run_attack`` wraps the victim (a ``predict(df) -> N×K`` callable, an MLflow
``PyFuncModel`` or a model URI such as ``models:/name/1``) with the evaluator's
model adapter (:func:`~mlflow_metacompress.adapters.predictors.resolve_model`,
uncached: the attack's query cache is in memory), primes the query cache with one
batched forward pass over all original inputs, checks the labels with the evaluator's
label check, attacks every row with the named recipe and returns an
:class:`~.results.AttackReport`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .attack import Attack, AttackData
from .catalog import ATTACKS, list_attacks
from .goal import QueryModel
from .results import AttackReport, AttackResult

logger = logging.getLogger(__name__)

__all__ = ["ATTACKS", "attack_positions", "list_attacks", "run_attack", "victim_predict"]


def victim_predict(
    model: Any, code_columns: Sequence[str], batch_size: int = 256, inference: str = "torch"
) -> Callable[[pd.DataFrame], np.ndarray]:
    """A validated ``predict(df) -> N×K`` for a callable, a ``PyFuncModel``, a model URI or an
    :class:`~mlflow_metacompress.adapters.predictors.Predictor` (one adapter for
    the evaluator and attacks). ``inference="onnxruntime"`` queries a code classifier
    through ONNX Runtime (:mod:`mlflow_metacompress.adapters.onnx`; a ``Predictor`` keeps
    the backend it was built with)."""
    from ..adapters.predictors import Predictor, resolve_model

    if isinstance(model, Predictor):
        predictor = model.uncached()
    else:
        predictor = resolve_model(
            model, "attacked model", inference, cache_dir=None, batch_size=batch_size, progress=False
        )
    columns = list(code_columns)
    return lambda df: predictor.predict(df, columns)[0]


def _check_label_count(labels: Any, n: int) -> np.ndarray:
    arr = np.asarray(labels)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"attacks need one label per row: got {arr.shape[0] if arr.ndim else 0} labels for {n} rows")
    return arr


def _class_indices(labels: np.ndarray, k: int) -> np.ndarray:
    """Labels as class indices 0..k-1 (the evaluator's :func:`encode_labels`), the error naming the culprit."""
    from ..adapters.checks import MetaCompressInputError, encode_labels

    try:
        return encode_labels(labels, None, k, column="labels")
    except MetaCompressInputError as exc:
        raise MetaCompressInputError(f"attack labels must be integer class indices 0..{k - 1}: {exc}") from None


def attack_positions(
    attack: Attack, data: AttackData, positions: Iterable[int], rows: Sequence[dict[str, str]], progress: bool = False
) -> list[AttackResult]:
    """Attack the samples at ``positions`` of ``data.frame`` (``rows[p]``: sample ``p``'s code
    by column) with a prepared ``attack``. Each result depends only on its own sample (the
    search's random generator is seeded by position, queries are counted per sample), so
    any split of the positions gives the same results (the spark attack engine splits them)."""
    from tqdm.auto import tqdm

    positions = list(positions)
    index = data.frame.index.tolist()  # Python scalars, as iterating the index gives
    return [
        attack.attack(index[p], p, rows[p], int(data.labels[p]))
        for p in tqdm(positions, total=len(positions), desc=attack.name, disable=not progress)
    ]


def run_attack(
    name: str,
    predict: Any,
    df: pd.DataFrame,
    code_columns: Sequence[str],
    labels: Any,
    language: str,
    budget: int = 500,
    seed: int = 0,
    progress: bool = True,
    mlm: Any = None,
    inference: str = "torch",
    **options: Any,
) -> AttackReport:
    """Attack every row of ``df`` with attack ``name``; only ``code_columns[0]`` changes.

    ``language`` is ``c``, ``java``, ``python`` or ``auto`` (detected from the first
    row). ``mlm`` (a local fill-mask model directory) feeds ALERT's substitutes.
    ``inference`` (``torch`` or ``onnxruntime``) is the backend that answers the queries
    of a code classifier given by URI or as a ``PyFuncModel``. ``options`` go to the
    recipe's ``build``.
    """
    if name not in ATTACKS:
        raise KeyError(f"unknown attack {name!r}; available: {list_attacks()}")
    code_columns = list(code_columns)
    if not code_columns:
        raise ValueError("run_attack needs at least one code column")
    missing = [c for c in code_columns if c not in df.columns]
    if missing:
        raise KeyError(f"code column(s) {missing} not in the data; it has {list(df.columns)}")
    raw_labels = _check_label_count(labels, len(df))
    if language == "auto":
        from ..transforms import detect_language

        language = detect_language(str(df[code_columns[0]].iloc[0])) if len(df) else "c"
    model = QueryModel(victim_predict(predict, code_columns, inference=inference), code_columns)
    attack = ATTACKS[name](model, budget=budget, seed=seed, mlm=mlm, **options)
    t0 = time.perf_counter()
    rows = [{c: str(r[c]) for c in code_columns} for r in df[code_columns].to_dict("records")]
    originals = model.probabilities([tuple(r[c] for c in code_columns) for r in rows])  # one batched pass
    y = _class_indices(raw_labels, originals.shape[1])
    data = AttackData(df, code_columns, y, language)
    attack.prepare(data, progress=progress)
    results = attack_positions(attack, data, range(len(df)), rows, progress)
    unparsable = sum(r.skip_reason == "unparsable" for r in results)
    if unparsable:
        logger.warning(
            "%s: %d of %d samples do not parse cleanly as %s and were skipped", name, unparsable, len(results), language
        )
    report = AttackReport(
        attack=name,
        results=results,
        code_columns=code_columns,
        frame=df,
        forward_rows=model.forward_rows,
        forward_seconds=model.forward_seconds,
        wall_seconds=time.perf_counter() - t0,
        details=dict(attack.details),
    )
    logger.info("%s: %s", name, report.metrics())
    return report
