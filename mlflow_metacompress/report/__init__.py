"""The report a person reads (issue 14): one self-contained ``report.html`` per evaluation
(headline with intervals, per-transformation table, plots, worst discrepancies with token
diffs, attacks, provenance) and a side-by-side comparison of several students of one teacher.

Modules: :mod:`.contract` (what the report reads of an evaluation: typed protocols the
evaluator's results satisfy, so the report never imports the evaluation package),
:mod:`.data` (what a report needs, from an evaluation's results or a run), :mod:`.provenance`,
:mod:`.fmt` (number formats), :mod:`.svg` (plots), :mod:`.diff` (token diffs),
:mod:`.sections`, :mod:`.page` (CSS, CSP), :mod:`.render`, :mod:`.compare`, :mod:`.cli`.
Nothing here is imported by ``import mlflow_metacompress``.
"""

from __future__ import annotations

from .._lazy import lazy_getattr

_EXPORTS = {
    "render_report": "render",
    "write_run_report": "render",
    "write_evaluation_report": "render",
    "write_comparison_html": "compare",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_getattr(__name__, _EXPORTS)
