"""The metric families that read the student's rates against a reference model (issue 42).

MetaCompress (Awal, Rochan, Roy, arXiv 2511.05476) takes the teacher as the oracle, so a
relation's violation rate says how often the student departs from the teacher. How often a
*retrained teacher* (same recipe, another seed) departs from it is the scale that rate is
read on: ``evaluator_config["reference"]`` names such a model, judged against the teacher on
exactly the rows the student is judged on (:mod:`.paired`). Five families prefix a relation
metric ``<m>`` (any variant suffix stays last, e.g. ``excess/mr1_violation_rate/metamorphic``):

- ``reference/<m>``: the reference's ``<m>`` against the teacher;
- ``excess/<m>``: the student's ``<m>`` minus the reference's, paired over the same rows;
- ``increment/<m>``: the metamorphic increment, the student's ``<m>`` on transformed rows
  minus on the same rows' originals (paired);
- ``reference/increment/<m>``: the same increment for the reference;
- ``excess/increment/<m>``: ``increment/<m> − reference/increment/<m>``.

Names only (no NumPy): read by the catalogue (:mod:`.metrics`), the interval keys
(:mod:`.statistics`) and the gates.
"""

from __future__ import annotations

REFERENCE = "reference/"
EXCESS = "excess/"
INCREMENT = "increment/"
REFERENCE_INCREMENT = REFERENCE + INCREMENT
EXCESS_INCREMENT = EXCESS + INCREMENT

FAMILIES: dict[str, tuple[str, bool]] = {
    REFERENCE: ("{m} of the reference model (evaluator_config reference) against the teacher, same rows", False),
    EXCESS: ("{m}(student) − {m}(reference), both against the teacher, paired over the same rows and weights", True),
    INCREMENT: ("metamorphic increment: the student's {m} on transformed rows − on the same rows' originals", True),
    REFERENCE_INCREMENT: ("the reference's {m} on transformed rows − on the same rows' originals", True),
    EXCESS_INCREMENT: ("increment/{m} − reference/increment/{m}: the student's increment beyond the reference's", True),
}
"""prefix → (definition of ``<prefix><m>`` with ``{m}`` the relation metric, has a bootstrap interval)."""

_LONGEST_FIRST = sorted(FAMILIES, key=len, reverse=True)


def split_family(key: str) -> tuple[str, str]:
    """``excess/increment/mr1_violation_rate/metamorphic`` → ``("excess/increment/",
    "mr1_violation_rate/metamorphic")``; ``("", key)`` for a key of no family."""
    for prefix in _LONGEST_FIRST:
        if key.startswith(prefix):
            return prefix, key[len(prefix) :]
    return "", key


def paired_metric_names() -> tuple[str, ...]:
    """The metrics every family covers: each registered relation's (MR1–MR4 and any added)
    and ``any_violation_rate``."""
    from .relations import registered_relations

    return (*(m.name for r in registered_relations() for m in r.metrics), "any_violation_rate")


def family_interval_metrics() -> tuple[str, ...]:
    """``<prefix><m>`` of every family with a bootstrap interval (``excess/``, the increments)."""
    return tuple(f"{p}{m}" for p, (_, interval) in FAMILIES.items() if interval for m in paired_metric_names())


# the deviation search's rates (evaluation/deviation.py, deviation_reference.py) carry bootstrap
# intervals of their own (resampling searched rows), so gates may bound their ends too
DEVIATION_INTERVAL_METRICS = ("deviation_rate", REFERENCE + "deviation_rate", EXCESS + "deviation_rate")
