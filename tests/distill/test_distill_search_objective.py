"""The search objectives (distill/search/objective.py): structurally sound shapes against
brute force, Compressor's pymoo GA under a latency budget, and the fallbacks of an empty
size band (nearest candidate, teacher-shaped student)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from mlflow_metacompress.distill.arch import ArchSpec
from mlflow_metacompress.distill.latency_fit import features
from mlflow_metacompress.distill.search.compressor_search import SearchSpace, fitness, search_architecture
from mlflow_metacompress.distill.search.moo import decode, moo_search
from mlflow_metacompress.distill.search.objective import fallback, latency_budget, reference, repair
from mlflow_metacompress.distill.search.space import enumerate_feasible, prune, size_mb, structurally_sound
from mlflow_metacompress.distill.search.teacher_shaped import teacher_shaped
from tests.support.distill import FAKE, LOWER, TARGET, TINY, brute_force

SMALL = SearchSpace(
    vocab_size=(1000, 2000, 3000),
    num_hidden_layers=(1, 2, 3, 4),
    hidden_size=(16, 32, 48, 64),
    num_attention_heads=(1, 2, 4, 8),
    intermediate_size=tuple(range(32, 1025, 32)),
)


def test_sound_pruning_matches_brute_force_filtered_by_the_rules():
    expected = {c for c in brute_force(TINY, TARGET, LOWER) if structurally_sound(c)}
    assert expected and expected < brute_force(TINY, TARGET, LOWER)
    assert set(enumerate_feasible(TINY, TARGET, lower=LOWER, sound=True)) == expected
    pruned = prune(TINY, TARGET, lower=LOWER, sound=True)
    rng = np.random.default_rng(0)
    for _ in range(200):  # every decoded genome is sound, whatever the genes say
        c = decode(rng.uniform(0, 10, size=10), pruned)
        assert structurally_sound(c) and c.hidden_size // c.num_attention_heads >= 16
        assert c.intermediate_size <= 4 * c.hidden_size


def test_repair_keeps_the_largest_allowed_heads_and_ffn():
    v = repair(
        {"hidden_size": 64, "num_attention_heads": 8, "intermediate_size": 1000}, (1, 2, 4, 8), range(32, 1025, 32)
    )
    assert v == {"hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 256}
    v = repair({"hidden_size": 16, "num_attention_heads": 2, "intermediate_size": 32}, (1, 2, 4), (32, 64))
    assert v["num_attention_heads"] == 1 and v["intermediate_size"] == 32


@pytest.mark.slow
def test_ga_latency_objective_stays_sound_within_budget_and_paper_is_reproducible():
    base = ArchSpec(max_length=64)
    budget, ref = latency_budget(FAKE, 0.5, max_length=64, max_vocab=3000)
    assert ref is not None and budget == pytest.approx(FAKE.predict_ms(ref))
    result = search_architecture(
        0.5,
        population=10,
        generations=4,
        seed=3,
        base=base,
        space=SMALL,
        progress=False,
        objective="latency",
        latency=FAKE,
        latency_budget_ms=budget,
        seeds=(ref,),
    )
    assert result.feasible and result.fallback is None and structurally_sound(result.best)
    assert result.latency_ms == pytest.approx(float(np.dot(FAKE.coef, features(result.best))))
    assert result.latency_ms <= budget
    assert abs(result.best.size_mb() - 0.5) <= 0.05
    best = [row["best_fitness"] for row in result.history]
    assert len(best) == 4 and result.fitness == pytest.approx(fitness(result.best, 0.5))
    paper = [
        search_architecture(0.5, population=10, generations=4, seed=3, base=base, space=SMALL, progress=False)
        for _ in range(2)
    ]
    assert paper[0].best == paper[1].best and paper[0].history == paper[1].history
    assert paper[0].objective == "paper" and paper[0].latency_ms is None
    assert best == sorted(best)  # elitist survival: the best fitness never decreases
    with pytest.raises(ValueError, match="latency model"):
        search_architecture(0.5, population=4, generations=1, base=base, space=SMALL, objective="latency")
    with pytest.raises(ValueError, match="objective"):
        search_architecture(0.5, population=4, generations=1, base=base, space=SMALL, objective="fast")


def test_moo_search_returns_an_empty_front_and_fallback_picks_the_nearest_feasible():
    pruned = replace(prune(TINY, TARGET, lower=LOWER), lower=0.999, upper=0.9991)  # a band almost nothing hits

    def objective(cs):
        return np.array([[size_mb(c), c.hidden_size] for c in cs])

    result = moo_search(pruned, objective, 2, population=4, generations=2, seed=0)
    assert result.configs == [] and result.evaluated == len(result.evaluated_configs) > 0
    nearest, kind = fallback(TARGET, result.evaluated_configs, max_length=64, teacher_shaped_first=False)
    oracle = min(abs(size_mb(c) - TARGET) for c in result.evaluated_configs)
    assert kind == "nearest" and abs(size_mb(nearest) - TARGET) == pytest.approx(oracle)
    shaped, kind = fallback(3.0, result.evaluated_configs, max_length=64, lower=0.5)
    assert kind == "teacher_shaped" and shaped == teacher_shaped(3.0, max_length=64)
    assert reference(0.0001, max_length=64) is None
    with pytest.raises(ValueError, match="evaluated none"):
        fallback(0.0001, [], max_length=64)
