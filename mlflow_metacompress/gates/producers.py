"""What produces a metric a gate policy requires, for the message of a rule that matched nothing.

A policy rule whose metric (or glob) matches no logged metric fails its check (never a
silent pass). The failure alone does not say how to get the metric, and the presets'
``attack_*/excess_drop_pct`` is the common case: the MetaCompress evaluator (Awal, Rochan,
Roy, arXiv 2511.05476) logs attack metrics only when the evaluation runs attacks, and the
percentage only when the teacher's accuracy drops under the attack.
:func:`missing_hint` names what produces the metric family and how to get it.
"""

from __future__ import annotations

from collections.abc import Mapping

ATTACK_EXAMPLE = '{"attacks": ["alert_yang_2022"]}'


def _family(pattern: str) -> tuple[str, str]:
    """``(head, tail)``: the part before the first ``/`` and after the last."""
    head, _, rest = pattern.partition("/")
    return head, rest.rpartition("/")[2] if rest else ""


def missing_hint(pattern: str, metrics: Mapping[str, float]) -> str:
    """Why ``pattern`` (a metric key or glob) may be absent from ``metrics``, and what
    produces it; empty when there is nothing specific to say."""
    from ..families import split_family

    if split_family(pattern)[0]:
        if not any(split_family(k)[0] for k in metrics):
            return (
                "reference/, excess/ and increment/ metrics are logged only with a reference model: set "
                "evaluator_config reference (a retrained teacher; reference_prob_columns in static mode)"
            )
        if "increment/" in pattern:
            return "increment/ metrics are logged only for transformed inputs (/<transform>, /metamorphic)"
        return ""
    head, tail = _family(pattern)
    if head.startswith("attack_"):
        ran = sorted({k.split("/")[0] for k in metrics if k.startswith("attack_") and "/" in k})
        if not ran:
            return (
                "attack metrics are logged only when the evaluation runs attacks: add attacks "
                f"(evaluator_config {ATTACK_EXAMPLE}; `metacompress gate --evaluator-config` or a webhooks "
                "model's evaluator_config), or judge with a policy that has no attack rule"
            )
        if tail == "excess_drop_pct":
            points = [f"{a}/excess_drop" for a in ran if f"{a}/excess_drop" in metrics]
            return (
                f"the evaluation ran {', '.join(a.removeprefix('attack_') for a in ran)}, but excess_drop_pct is "
                "undefined (not logged) when the teacher's accuracy does not drop under attack"
                + (f"; {', '.join(points)} (in points) was logged" if points else "")
                + ": use policy quick, which bounds attack_*/excess_drop instead"
            )
        return f"the evaluation ran {', '.join(ran)}; this attack metric was not among their metrics"
    if "/slice:" in pattern:
        return "slice metrics are logged only for the values of evaluator_config slice_columns"
    transformed = any(
        "/" in k and not k.startswith("attack_") and "/slice:" not in k and not split_family(k)[0] for k in metrics
    )
    if "/" in pattern and not transformed:
        return (
            "metrics on transformed code (/metamorphic, /<transform>) are logged only when the evaluation "
            'runs transformations: set evaluator_config transforms (e.g. "all"; static mode has none)'
        )
    from ..relations import registered_relations

    for relation in registered_relations():
        if relation.omitted and head.startswith(f"{relation.key}_"):
            return relation.omitted
    if head in {"student_speedup", "student_latency_ms", "teacher_latency_ms"}:
        return "speed metrics are logged only with evaluator_config measure_speed: true"
    return ""
