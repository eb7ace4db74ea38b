"""Compressor's GA: the fitness formula, the size target on a toy budget, determinism."""

from __future__ import annotations

import pytest

from mlflow_metacompress.distill.arch import ArchSpec
from mlflow_metacompress.distill.search.compressor_search import SearchSpace, fitness, search_architecture


def test_fitness_is_gflops_minus_size_error():
    spec = ArchSpec(
        vocab_size=2000,
        num_hidden_layers=2,
        hidden_size=64,
        num_attention_heads=2,
        intermediate_size=128,
        max_length=64,
    )
    assert fitness(spec, 3.0) == pytest.approx(spec.gflops() - abs(spec.size_mb() - 3.0))
    assert fitness(spec, spec.size_mb()) == pytest.approx(spec.gflops())


@pytest.mark.slow
@pytest.mark.parametrize("target", [0.5, 1.0])
def test_ga_respects_size_target_within_10_percent(target):
    base = ArchSpec(max_length=32)
    result = search_architecture(target, population=12, generations=6, seed=1, base=base, progress=False)
    assert result.feasible
    assert abs(result.best.size_mb() - target) <= 0.1 * target
    assert result.size_mb == pytest.approx(result.best.size_mb())
    assert result.best.max_length == 32 and result.best.hidden_size % result.best.num_attention_heads == 0
    # elitism: the best fitness never decreases across generations
    best = [row["best_fitness"] for row in result.history]
    assert best == sorted(best) and len(best) == 6
    assert result.fitness == pytest.approx(fitness(result.best, target))


@pytest.mark.slow
def test_ga_is_deterministic_and_honours_the_space():
    space = SearchSpace().cap_vocab(3000)
    assert space.vocab_size == (1000, 2000, 3000)
    a = search_architecture(
        0.8, population=6, generations=3, seed=7, base=ArchSpec(max_length=16), space=space, progress=False
    )
    b = search_architecture(
        0.8, population=6, generations=3, seed=7, base=ArchSpec(max_length=16), space=space, progress=False
    )
    assert a.best == b.best and a.history == b.history
    assert a.best.vocab_size in space.vocab_size


def test_infeasible_target_falls_back_with_flag():
    tiny = SearchSpace(
        vocab_size=(1000,), num_hidden_layers=(1,), hidden_size=(16,), num_attention_heads=(1,), intermediate_size=(32,)
    )
    result = search_architecture(
        50.0, population=2, generations=1, base=ArchSpec(max_length=8), space=tiny, progress=False
    )
    assert not result.feasible and result.best.hidden_size == 16


def test_compressor_options_defaults_live_in_its_options():
    from mlflow_metacompress.distill import get_method
    from mlflow_metacompress.distill.methods import compressor

    method = get_method("compressor")
    assert method.run is compressor.run and method.options is compressor.Options
    opts = method.parse({"population": "8", "generations": 3.0, "lr": "3e-3"})
    assert (opts.population, opts.generations, opts.lr, opts.temperature) == (8, 3, 0.003, 1.0)
    assert method.parse({}) == compressor.Options()
