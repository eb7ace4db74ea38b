"""What the report reads of an evaluation: a small typed contract the report owns.

The evaluator (:mod:`mlflow_metacompress.evaluation`) hands its results and its resolved
configuration to :func:`~.render.write_evaluation_report` and
:func:`~.provenance.at_evaluation`; its ``EvaluationOutcome`` and ``EvaluatorConfig`` satisfy these
protocols structurally (mypy checks it where the evaluator calls the report), so the report
never imports the evaluation package and the joint points one way: evaluation → report.
A finished run is read from its logged artifacts instead (:func:`~.data.from_run`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import pandas as pd

__all__ = ["EvaluationResults", "EvaluationSettings"]


@runtime_checkable
class EvaluationResults(Protocol):
    """One evaluation's results, before they are logged."""

    @property
    def metrics(self) -> Mapping[str, float]:
        """Every metric, unprefixed (``mr1_violation_rate``, ``…/metamorphic``, ``attack_<a>/…``)."""
        ...

    @property
    def per_sample(self) -> pd.DataFrame:
        """One row per (variant, sample): ``variant``, ``row``, both models' probabilities
        (``teacher_prob_<c>``, ``student_prob_<c>``), predictions, ``kl``, the relation flags
        and ``any_violation``, and ``code`` for rewritten variants."""
        ...

    @property
    def classes(self) -> Sequence[str]:
        """The class names, in the teacher's order."""
        ...

    @property
    def extra_tables(self) -> Mapping[str, pd.DataFrame]:
        """Further tables by artifact name; ``attacks/<a>`` is attack ``a``'s per-sample table."""
        ...

    @property
    def notes(self) -> Mapping[str, Any]:
        """What ``summary.json`` records beside the metrics (``language``, rows run, statistics, slices)."""
        ...


@runtime_checkable
class EvaluationSettings(Protocol):
    """The evaluation's resolved configuration, as far as the report and provenance read it."""

    @property
    def static(self) -> bool:
        """Static mode: precomputed probabilities judged, no model run."""
        ...

    @property
    def teacher(self) -> Any:
        """The teacher as given: a model URI, or a loaded model or callable."""
        ...

    @property
    def code_columns(self) -> Sequence[str] | None: ...

    @property
    def teacher_prob_columns(self) -> Sequence[str] | None: ...

    def as_loggable(self) -> dict[str, Any]:
        """The configuration as the user set it, JSON-ready (``summary.json``'s ``config``)."""
        ...

    def config_sources(self) -> Mapping[str, str]:
        """How each key was set: given, default, inferred or detected."""
        ...

    def detected_values(self) -> dict[str, Any]:
        """The values that were inferred or detected."""
        ...
