"""``find_deviations``: search equivalent variants on which a student and its teacher disagree.

MetaCompress (Awal, Rochan, Roy, arXiv 2511.05476) compares a distilled student with its
teacher on semantically equivalent code. For each row this function searches the variant
space (:mod:`.space`) for a program on which the two models' labels differ, with one of

* ``"dflare"`` — DFLARE's Metropolis–Hastings over operators (:func:`.search.dflare`);
* ``"random"`` — random compositions of 1–3 operators (:func:`.search.random_compositions`);
* ``"mhm"`` / ``"alert"`` — the MHM (Zhang et al., AAAI 2020) and ALERT (Yang et al.,
  ICSE 2022) recipes, retargeted to the differential goal (identifier renames only).

Every reported deviation is **verified**: both ``predict`` callables are called again on the
variant, bypassing the query caches, and the deviation is reported only when the fresh
labels differ.
"""

from __future__ import annotations

import difflib
import logging
import random
import zlib
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ...deviation_defaults import DEFAULT_DEPTH, MAX_DEPTH, SEARCHES
from ..goal import PredictFn, QueryModel, _as_probabilities
from .goal import DifferentialGoal, DifferentialGoalSpec, Fitness
from .search import Found, dflare, random_compositions
from .space import VariantSpace

logger = logging.getLogger(__name__)

RECIPES = {"mhm": "mhm_zhang_2020", "alert": "alert_yang_2022"}


@dataclass
class Deviation:
    """One row's outcome. ``found`` means a *verified* disagreement on ``variant_code``;
    ``teacher_probs``/``student_probs`` are the fresh (uncached) probabilities on it."""

    index: Any
    agreed_at_start: bool
    found: bool
    queries: int
    queries_to_first: int | None
    original_code: str
    variant_code: str | None = None
    diff: str = ""
    teacher_probs: list[float] | None = None
    student_probs: list[float] | None = None
    operators: list[str] = field(default_factory=list)
    unverified: bool = False  # the search saw a disagreement that a fresh query did not confirm


def unified_diff(original: str, variant: str) -> str:
    """A unified diff from the original program to the variant."""
    return "".join(
        difflib.unified_diff(
            original.splitlines(keepends=True), variant.splitlines(keepends=True), "original", "variant"
        )
    )


def deviations_frame(records: Sequence[Deviation]) -> pd.DataFrame:
    """The records as a data frame, one row each."""
    return pd.DataFrame([asdict(r) for r in records])


def _check(search: str, queries: int, columns: Sequence[str], frame: pd.DataFrame, depth: int) -> None:
    if search not in SEARCHES:
        raise ValueError(f"unknown search {search!r}; choose one of {list(SEARCHES)}")
    if isinstance(queries, bool) or not isinstance(queries, int) or queries < 1:
        raise ValueError(f"queries must be a positive int (paired queries per row), got {queries!r}")
    if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= MAX_DEPTH:
        raise ValueError(f"depth must be an int from 1 to {MAX_DEPTH} (operators per DFLARE mutant), got {depth!r}")
    if not columns:
        raise ValueError("find_deviations needs at least one code column")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise KeyError(f"code column(s) {missing} not in the rows; they have {list(frame.columns)}")


def find_deviations(
    teacher_predict: PredictFn | QueryModel,
    student_predict: PredictFn | QueryModel,
    rows: pd.DataFrame | Sequence[dict[str, str]],
    columns: Sequence[str],
    language: str,
    queries: int = 100,
    search: str = "dflare",
    seed: int = 0,
    batch: int = 4,
    novelty: bool = False,
    fitness: Fitness | None = None,
    operators: Sequence[str] | None = None,
    progress: bool = False,
    positions: Sequence[int] | None = None,
    depth: int = DEFAULT_DEPTH,
) -> list[Deviation]:
    """Search each row for a variant on which teacher and student disagree.

    ``*_predict(df) -> N×K`` probabilities over the code ``columns``; only ``columns[0]``
    is changed. ``queries`` caps the paired queries (distinct variants run on both
    models) per row; ``batch`` variants are queried together (DFLARE and random);
    ``novelty`` adds DFLARE's state-novelty rule; ``depth`` lets each DFLARE mutant apply
    1 to ``depth`` operators (:func:`.search.dflare`; 10, chosen on the three-teacher study's
    selection pairs 400–599 over depth 5, 7 and 10-with-novelty and confirmed on 600 other pairs
    and a second premise student, ``reproduction/deviation-rates/tuning-2/RULES.md``; the first
    round chose 5 over 1 and 3, ``tuning/RULES.md``; 1 is DFLARE's single mutation);
    ``operators`` restricts the rewrites
    (default: all of :func:`.space.default_operators`).

    A :class:`~..goal.QueryModel` may stand for either model: its query cache (by text) is
    then shared with whoever else holds it (the evaluator shares the teacher's across the
    students it judges); verification still calls its raw ``predict``, uncached.
    ``positions``: search only these rows (positions into ``rows``) and return their
    records, in that order; each row's search is the one a full run gives it (the
    identifier vocabulary is mined from every row, the generator seeded by the position),
    which is how the Spark engine splits rows across executors.
    """
    from tqdm.auto import tqdm

    from ..substitutes import IdentifierVocabulary

    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    columns = list(columns)
    _check(search, queries, columns, frame, depth)
    teacher, student = (_query_model(m, columns) for m in (teacher_predict, student_predict))
    records = [{c: str(v) for c, v in r.items()} for r in frame[columns].to_dict("records")]
    todo = list(range(len(records))) if positions is None else [int(p) for p in positions]
    for model in (teacher, student):  # one batched pass over the originals per model
        model.probabilities([tuple(records[p][c] for c in columns) for p in todo])
    fit = fitness or Fitness()
    if search in RECIPES:
        run = _recipe_runner(search, teacher, student, frame, columns, language, queries, seed, fit)
    else:
        vocab = IdentifierVocabulary.mine([r[c] for r in records for c in columns], language)
        run = _chain_runner(
            search, teacher, student, columns, language, queries, seed, batch, novelty, fit, vocab, operators, depth
        )
    index = frame.index.tolist()
    out = [run(index[p], p, records[p]) for p in tqdm(todo, desc=f"deviations ({search})", disable=not progress)]
    _verify(out, [records[p] for p in todo], columns, teacher.predict, student.predict)
    logger.info("%s: %d of %d rows deviate (verified)", search, sum(r.found for r in out), len(out))
    return out


def _query_model(model: PredictFn | QueryModel, columns: list[str]) -> QueryModel:
    if not isinstance(model, QueryModel):
        return QueryModel(model, columns)
    if model.columns != columns:
        raise ValueError(f"the QueryModel reads columns {model.columns}, the search {columns}")
    return model


Runner = Callable[[Any, int, dict[str, str]], Deviation]


def _chain_runner(
    search: str,
    teacher: QueryModel,
    student: QueryModel,
    columns: list[str],
    language: str,
    queries: int,
    seed: int,
    batch: int,
    novelty: bool,
    fit: Fitness,
    vocab: Any,
    operators: Sequence[str] | None,
    depth: int,
) -> Runner:
    def run(index: Any, position: int, row: dict[str, str]) -> Deviation:
        code = row[columns[0]]
        goal = DifferentialGoal(teacher, student, row, columns[0], queries, fit)
        start = goal.get_results([code])[0]
        if start.succeeded:
            return Deviation(index, False, False, goal.queries, None, code)
        space = VariantSpace(code, language, vocab, operators)
        rng = random.Random(zlib.crc32(f"{search}:{seed}:{position}".encode()))
        if search == "dflare":
            found: Found = dflare(goal, space, start, rng, batch=batch, novelty=novelty, depth=depth)
        else:
            found = random_compositions(goal, space, start, rng, batch=batch)
        hit = found.result.succeeded
        return Deviation(
            index,
            True,
            hit,
            goal.queries,
            found.queries_to_first,
            code,
            variant_code=found.result.code if hit else None,
            operators=found.operators if hit else [],
        )

    return run


def _recipe_runner(
    search: str,
    teacher: QueryModel,
    student: QueryModel,
    frame: pd.DataFrame,
    columns: list[str],
    language: str,
    queries: int,
    seed: int,
    fit: Fitness,
) -> Runner:
    from ..attack import AttackData
    from ..catalog import get_attack
    from ..results import AttackStatus

    attack = get_attack(RECIPES[search])(teacher, budget=queries, seed=seed)
    attack.retarget(DifferentialGoalSpec(student, fit))
    attack.prepare(AttackData(frame, columns, np.zeros(len(frame), dtype=int), language))

    def run(index: Any, position: int, row: dict[str, str]) -> Deviation:
        result = attack.attack(index, position, row, 0)
        code = row[columns[0]]
        if result.skip_reason == "wrong_prediction":  # the goal is met before any change
            return Deviation(index, False, False, result.queries, None, code)
        hit = result.status is AttackStatus.SUCCEEDED and result.adversarial_code is not None
        return Deviation(
            index,
            True,
            hit,
            result.queries,
            result.queries if hit else None,
            code,
            variant_code=result.adversarial_code if hit else None,
            operators=["rename_identifier"] if hit else [],
        )

    return run


def _verify(
    out: list[Deviation],
    records: list[dict[str, str]],
    columns: list[str],
    teacher_predict: PredictFn,
    student_predict: PredictFn,
) -> None:
    """Re-query both models afresh (no cache) on every variant; keep confirmed deviations."""
    todo = [i for i, r in enumerate(out) if r.found and r.variant_code is not None]
    if not todo:
        return
    batch = pd.DataFrame(
        {c: [out[i].variant_code if c == columns[0] else records[i][c] for i in todo] for c in columns}
    )
    pt = _as_probabilities(teacher_predict(batch), len(todo))
    ps = _as_probabilities(student_predict(batch), len(todo))
    for i, t, s in zip(todo, pt, ps, strict=True):
        rec = out[i]
        rec.teacher_probs, rec.student_probs = t.tolist(), s.tolist()
        if int(np.argmax(t)) == int(np.argmax(s)):
            logger.warning("row %s: the disagreement did not survive a fresh query; not reported", rec.index)
            rec.found, rec.unverified = False, True
            continue
        rec.diff = unified_diff(rec.original_code, rec.variant_code or "")
