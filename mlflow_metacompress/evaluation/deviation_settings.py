"""``evaluator_config["deviation"]``: the teacher–student deviation search's settings, checked.

``{"queries": 100, "search": "dflare", "seed": 0, "rows": None}`` (every key optional):
``queries`` caps the paired queries (distinct equivalent variants run on both models) per
row, ``search`` is one of :data:`~mlflow_metacompress.deviation_defaults.SEARCHES`
(DFLARE's Metropolis–Hastings, Tian et al., TOSEM 2023, by default), ``seed`` seeds it
(unset: the evaluator's ``seed``) and ``rows`` searches only the first N rows. Each error
names the key and the bad value; static mode (probability columns, no models) cannot query
a model, so the key is refused there. Pure Python: the search itself is imported only when
an evaluation runs it (:mod:`.deviation`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..adapters.checks import MetaCompressInputError
from ..deviation_defaults import DEFAULT_DEPTH, MAX_DEPTH, SEARCHES
from .value_checks import bad_value, check_int

if TYPE_CHECKING:
    from .config_model import EvaluatorConfig

KEY = "deviation"
FIELDS = ("queries", "search", "seed", "rows", "batch", "operators", "depth")
MAX_QUERIES = 100_000


@dataclass(frozen=True)
class DeviationSettings:
    """The resolved settings of one deviation search (see the module docstring); ``batch``
    variants are queried together per model (DFLARE and random); ``depth``: each DFLARE mutant
    applies 1 to ``depth`` operators (:func:`~mlflow_metacompress.attacks.deviation.search.dflare`);
    ``operators`` restricts the rewrites it composes (None: every one; the student's trained rewrites are left out with
    ``evaluator_config["trained_transforms"]``, :mod:`.trained`)."""

    queries: int = 100
    search: str = "dflare"
    seed: int | None = None
    rows: int | None = None
    batch: int = 4
    operators: tuple[str, ...] | None = None
    depth: int = DEFAULT_DEPTH

    def seed_or(self, default: int) -> int:
        """The search's seed: its own, else the evaluator's ``seed``."""
        return default if self.seed is None else int(self.seed)


def parse_deviation(value: Any) -> DeviationSettings | None:
    """``evaluator_config["deviation"]`` as :class:`DeviationSettings` (None when unset);
    raises :class:`MetaCompressInputError` naming the key and the bad value."""
    if value is None or value is False:
        return None
    if value is True:
        return DeviationSettings()
    if not isinstance(value, Mapping):
        raise bad_value(KEY, value, "a dict such as {'queries': 100, 'search': 'dflare'} (or true for the defaults)")
    unknown = sorted(str(k) for k in value if k not in FIELDS)
    if unknown:
        raise MetaCompressInputError(
            f"evaluator_config['deviation'] has unknown key(s) {unknown}; known keys are {list(FIELDS)}"
        )
    check_int("deviation.queries", value.get("queries", 100), 1, MAX_QUERIES)
    check_int("deviation.seed", value.get("seed"), 0, 2**63 - 1, optional=True)
    check_int("deviation.rows", value.get("rows"), 1, optional=True)
    check_int("deviation.batch", value.get("batch", 4), 1, 256)
    check_int("deviation.depth", value.get("depth", DEFAULT_DEPTH), 1, MAX_DEPTH)
    operators = value.get("operators")
    if operators is not None:
        if isinstance(operators, str):
            operators = [operators]
        if not isinstance(operators, (list, tuple)) or not operators or not all(isinstance(o, str) for o in operators):
            raise bad_value("deviation.operators", value.get("operators"), "a non-empty list of rewrite names")
    search = value.get("search", "dflare")
    if search not in SEARCHES:
        raise bad_value("deviation.search", search, f"one of {list(SEARCHES)}")
    given = {k: value[k] for k in FIELDS if k in value}
    if operators is not None:
        given["operators"] = tuple(operators)
    return DeviationSettings(**given)


def check_deviation(cfg: EvaluatorConfig) -> None:
    """The key's value, and that it is not asked for in static mode (no model to query)."""
    settings = parse_deviation(cfg.deviation)
    if settings is not None and cfg.static:
        raise MetaCompressInputError(
            "evaluator_config['deviation'] searches for inputs on which the models disagree, so it needs both models; "
            "static mode (teacher_prob_columns/student_prob_columns) has only probabilities. Drop 'deviation' or pass "
            "a student model and a teacher"
        )
