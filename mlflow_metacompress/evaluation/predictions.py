"""The evaluation's one prediction table: rows × variant × model → probabilities.

The evaluation is three steps (MetaCompress, arXiv 2511.05476, judges its relations on
original, transformed and adversarial inputs alike): :mod:`.variants` produces variants,
:mod:`.predict` fills a :class:`PredictionTable` with both models' probabilities on each
of them, and :mod:`.judge` computes every relation and metric from the table alone. The
table holds what judging needs: the class names (the teacher's order, the oracle's),
the labels as class indices by data row, and for each variant the data rows it covers.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import numpy as np

Model = Literal["teacher", "student"]
ORIGINAL = "original"


@dataclass(frozen=True, eq=False)
class PairPredictions:
    """Teacher and student probabilities (N×K each, same rows, same class order)."""

    teacher: np.ndarray
    student: np.ndarray

    def __len__(self) -> int:
        return len(self.teacher)

    def take(self, positions: np.ndarray) -> PairPredictions:
        """The rows at ``positions``."""
        return PairPredictions(self.teacher[positions], self.student[positions])

    @staticmethod
    def concat(parts: list[PairPredictions]) -> PairPredictions:
        """Row-wise concatenation, in order."""
        return PairPredictions(np.concatenate([p.teacher for p in parts]), np.concatenate([p.student for p in parts]))


class PredictionTable:
    """Both models' probabilities on every variant, by variant name, plus what judging needs.

    ``n_rows``: the evaluation data's rows; ``classes``: the class names in the teacher's
    order (``"0"``, ``"1"``, … when the models name none, and then ``named`` is false);
    ``labels``: class indices by data row (None without labels). Each entry is a variant name, the data rows it covers
    (``positions``; a row may appear more than once in a pooled variant) and its
    :class:`PairPredictions`, row i of which is data row ``positions[i]``. Entries are added
    once and never changed.
    """

    def __init__(self, n_rows: int, classes: list[str], labels: np.ndarray | None = None, named: bool = True) -> None:
        if labels is not None and len(labels) != n_rows:
            raise ValueError(f"the table has {n_rows} rows but {len(labels)} labels")
        self.n_rows = n_rows
        self.classes = list(classes)
        self.labels = labels
        self.named = named
        self._entries: dict[str, tuple[np.ndarray, PairPredictions]] = {}

    def add(self, name: str, positions: np.ndarray, predictions: PairPredictions) -> None:
        """Record variant ``name``: its data rows and both models' probabilities on them."""
        positions = np.asarray(positions, dtype=np.int64)
        if name in self._entries:
            raise ValueError(f"variant {name!r} is already in the prediction table")
        k = len(self.classes)
        for model, probs in (("teacher", predictions.teacher), ("student", predictions.student)):
            if probs.shape != (len(positions), k):
                raise ValueError(
                    f"variant {name!r}: {model} probabilities have shape {probs.shape}, "
                    f"expected ({len(positions)}, {k}) (rows × classes)"
                )
        if len(positions) and (positions.min() < 0 or positions.max() >= self.n_rows):
            raise ValueError(f"variant {name!r} names rows outside 0..{self.n_rows - 1}")
        self._entries[name] = (positions, predictions)

    def add_pooled(self, name: str, members: list[str]) -> None:
        """Record ``name`` as the members' rows and predictions concatenated, in order."""
        self.add(
            name,
            np.concatenate([self.positions(m) for m in members]),
            PairPredictions.concat([self.pair(m) for m in members]),
        )

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def _entry(self, name: str) -> tuple[np.ndarray, PairPredictions]:
        try:
            return self._entries[name]
        except KeyError:
            raise KeyError(f"variant {name!r} is not in the prediction table; it holds {list(self._entries)}") from None

    def positions(self, name: str) -> np.ndarray:
        """The data rows variant ``name`` covers, in its row order."""
        return self._entry(name)[0]

    def pair(self, name: str) -> PairPredictions:
        """Both models' probabilities on variant ``name``."""
        return self._entry(name)[1]

    def probabilities(self, name: str, model: Model) -> np.ndarray:
        """One model's probabilities on variant ``name`` (rows × classes)."""
        return getattr(self.pair(name), model)

    def labels_of(self, name: str) -> np.ndarray | None:
        """The labels of variant ``name``'s rows (None without labels)."""
        return None if self.labels is None else self.labels[self.positions(name)]

    @property
    def class_names(self) -> list[str] | None:
        """The class names the models gave, or None when they name none."""
        return list(self.classes) if self.named else None

    def with_labels(self, labels: np.ndarray | None) -> PredictionTable:
        """The same entries with ``labels`` (class indices by data row)."""
        table = PredictionTable(self.n_rows, self.classes, labels, self.named)
        table._entries = dict(self._entries)
        return table

    @property
    def base(self) -> PairPredictions:
        """Both models on the original inputs, by data row."""
        return self.pair(ORIGINAL)
