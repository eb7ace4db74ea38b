"""What a variant is (:mod:`.variants` produces them): rows of the evaluation data with code
possibly rewritten (:class:`Variant`), what one producer returns (:class:`VariantSet`), what
every producer may read (:class:`SourceInputs`) and the producer interface
(:class:`VariantSource`). MetaCompress (Awal, Rochan, Roy, arXiv 2511.05476) checks its
relations on original, transformed and adversarial code: one variant each.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np
import pandas as pd

from .column_transforms import ColumnTransforms

if TYPE_CHECKING:
    from .config_model import EvaluatorConfig
    from .pair import ModelPair
    from .predictions import PairPredictions

VariantKind = Literal["original", "transform", "metamorphic", "attack"]


@dataclass(frozen=True, eq=False)
class Variant:
    """Rows ``positions`` of the data, with code columns possibly rewritten (``frame``)."""

    name: str
    kind: VariantKind
    positions: np.ndarray
    frame: pd.DataFrame
    code_column: str

    @property
    def suffix(self) -> str:
        """Metric-key suffix: ``""`` for the original, else ``/<name>``."""
        return "" if self.kind == "original" else f"/{self.name}"


def pooled_variant(variants: list[Variant], name: str = "metamorphic") -> Variant | None:
    """All rows of all transformed variants together, in order (``/metamorphic`` metrics)."""
    used = [v for v in variants if len(v.positions)]
    if not used:
        return None
    return Variant(
        name,
        "metamorphic",
        np.concatenate([v.positions for v in used]),
        pd.concat([v.frame for v in used], ignore_index=True),
        used[0].code_column,
    )


@dataclass(frozen=True, eq=False)
class VariantSet:
    """What one producer returns: variants to judge, an optional pooled view of them all
    (judged for metrics only; its predictions are the variants' predictions concatenated),
    and the producer's own metrics, artifact tables and summary notes."""

    variants: tuple[Variant, ...] = ()
    pooled: Variant | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    notes: dict[str, Any] = field(default_factory=dict)
    # further pooled views (the seen transformations, evaluation/trained.py), and each pooled
    # view's member variants by name when not every variant (the default)
    more_pools: tuple[Variant, ...] = ()
    members: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def pools(self) -> list[tuple[Variant, list[str]]]:
        """Every pooled view with the names of the variants it concatenates, in order."""
        views = ((self.pooled,) if self.pooled is not None else ()) + self.more_pools
        every = [v.name for v in self.variants]
        return [(view, list(self.members.get(view.name, every))) for view in views]


@dataclass(frozen=True, eq=False)
class SourceInputs:
    """What every producer may read: the data (index reset), the resolved config, the labels
    as class indices (or None), both models' predictions on the original inputs (None for a
    producer run before any model, as the Spark engine runs the transformations) and the
    class names in the teacher's order (None when the models do not name them)."""

    df: pd.DataFrame
    cfg: EvaluatorConfig
    labels: np.ndarray | None
    base: PairPredictions | None
    classes: list[str] | None = None


ComputeColumns = Callable[[pd.DataFrame, list[str], list[str], str, int], dict[str, ColumnTransforms]]
"""``(df, transform columns, transformation names, language, seed) -> {column: results}``:
the transformations computed somewhere other than this process (the Spark engine)."""

AttackReports = Callable[[pd.DataFrame, np.ndarray, "EvaluatorConfig", list[str] | None], Mapping[tuple[str, str], Any]]
"""``(attacked rows, labels, config, class names) -> {(attack, role): AttackReport}``: the
attacks run somewhere other than this process (the Spark engine's executors)."""


class VariantSource(Protocol):
    """A producer of variants. ``models`` is the teacher/student pair for producers that query
    the models while producing (attacks); it is None in static mode, where no model exists."""

    def __call__(self, inputs: SourceInputs, models: ModelPair | None) -> VariantSet: ...
