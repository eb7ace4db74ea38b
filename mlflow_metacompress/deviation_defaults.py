"""The deviation search's names and defaults, defined once for every package that uses them.

The search itself is :func:`mlflow_metacompress.attacks.deviation.find_deviations`
(DFLARE's Metropolis–Hastings over equivalent rewrites, Tian et al., TOSEM 2023, retargeted
to the teacher–student disagreements of MetaCompress, arXiv 2511.05476). Its settings are
read by the evaluator (``evaluator_config["deviation"]``, checked without importing the
search), by the ``repair`` method and by the repair study's plan. This module sits at the top
of the package, below every package that reads it, and imports nothing, so the evaluator's
config check stays light.
"""

from __future__ import annotations

SEARCHES = ("dflare", "random", "mhm", "alert")
"""The searches ``find_deviations`` runs: DFLARE, random compositions, and the MHM and ALERT
recipes retargeted to the differential goal."""

DEFAULT_DEPTH = 10
"""DFLARE's operators per mutant (at most): chosen on pairs 400–599 and confirmed on 600
unused pairs under ``reproduction/deviation-rates/tuning-2/RULES.md``."""

MAX_DEPTH = 20
"""The largest ``depth`` accepted; a larger one is refused with an error naming the value."""
