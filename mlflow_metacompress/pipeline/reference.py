"""The main job's opt-in reference teacher (issue 42, ``-P reference=true``).

MetaCompress (Awal, Rochan, Roy, arXiv 2511.05476) judges each student against its teacher;
a teacher retrained with another seed (same recipe, same accuracy) disagrees with the first
one too, so a bare bound such as "MR1 ≤ 0.05" has no basis. With a reference the job trains a
second teacher with seed ``seed + REFERENCE_SEED_OFFSET`` (registered as
``metacompress-<dataset>-reference``), evaluates every student with it as
``evaluator_config["reference"]`` and gates the student's excess over it at the upper end of
its paired interval (:func:`with_excess_bound`), beside the profile's policy.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

REFERENCE_SEED_OFFSET = 1000
EXCESS_BOUND = 0.05
"""The gate's bound on the student's excess MR1 rate over the reference (upper interval end)."""


def excess_rule(profile: Any) -> tuple[str, str]:
    """``(metric, rule)`` of the excess bound: on the pooled transformed inputs when the
    profile transforms code, else on the original inputs."""
    transformed = profile.transforms not in (None, [], (), "")
    metric = "excess/mr1_violation_rate" + ("/metamorphic" if transformed else "")
    return metric, f"<= {EXCESS_BOUND} @upper"


def with_excess_bound(policy: Any, profile: Any) -> Any:
    """``policy`` plus :func:`excess_rule` (a :class:`~..gates.policy.GatePolicy` named
    ``<policy>+reference``); the rule is parsed like any policy's, so its direction and
    bound are checked against the metric catalogue."""
    from ..gates.policy import GatePolicy

    metric, rule = excess_rule(profile)
    extra = GatePolicy.from_mapping({"name": "reference", "thresholds": {metric: rule}}).thresholds
    kept = tuple(t for t in policy.thresholds if t.metric != metric)
    return replace(policy, name=f"{policy.name}+reference", thresholds=kept + extra)


def reference_stage(data: Any, profile: Any, seed: int = 0, progress: bool = True, trainer: Any = None) -> Any:
    """Train and register the reference teacher: the teacher's recipe with another seed."""
    from .stages import teacher_stage

    return teacher_stage(data, profile, seed + REFERENCE_SEED_OFFSET, progress, trainer=trainer, role="reference")
