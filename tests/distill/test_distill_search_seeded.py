"""Warm-started searches: ``moo.encode`` inverts ``moo.decode`` on the grid, seeds join
NSGA-II's initial population, and AVATAR's latency search at a small budget (population
4 × 2 generations) ends with a feasible Pareto set instead of the teacher-shaped fallback
(it used to fall back on most seeds), re-checked against a built model's parameter count
and the latency model's coefficients."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from mlflow_metacompress.distill.arch import ArchSpec
from mlflow_metacompress.distill.latency_fit import features
from mlflow_metacompress.distill.search.moo import decode, encode, moo_search
from mlflow_metacompress.distill.search.space import enumerate_feasible, prune, size_mb
from mlflow_metacompress.models.size import parameter_count
from tests.support.distill import FAKE, LOWER, TARGET, TINY, toy_context


@pytest.mark.slow
@pytest.mark.parametrize("sound", [False, True])
def test_encode_inverts_decode_on_the_grid(sound):
    pruned = prune(TINY, TARGET, lower=LOWER, sound=sound)
    configs = enumerate_feasible(TINY, TARGET, lower=LOWER, sound=sound)
    assert len(configs) > 20
    for c in configs:
        x = encode(c, pruned)
        assert x.dtype == np.float64 and np.all(x == np.rint(x)) and decode(x, pruned) == c
        # the indices point at the config's own values on each gene's grid
        assert pruned.grid("hidden_size")[int(x[2])] == c.hidden_size
    # off the grid: each numeric gene goes to its nearest grid value
    c = configs[0]
    off = replace(c, vocab_size=c.vocab_size + 400, intermediate_size=c.intermediate_size + 10)
    assert decode(encode(off, pruned), pruned) == c
    with pytest.raises(ValueError, match="tokenizer='unigram'"):
        encode(replace(c, tokenizer="unigram"), pruned)  # TINY has BPE only


@pytest.mark.slow
def test_seeds_start_the_population_deterministically():
    pruned = prune(TINY, TARGET, lower=LOWER)

    def objective(cs):
        return np.array([[abs(size_mb(c) - TARGET), c.hidden_size] for c in cs])

    seeds = enumerate_feasible(TINY, TARGET, lower=LOWER)[:2]
    runs = [moo_search(pruned, objective, 2, population=4, generations=1, seed=0, seeds=seeds) for _ in range(2)]
    assert set(seeds) <= set(runs[0].evaluated_configs)
    assert runs[0].evaluated_configs == runs[1].evaluated_configs and runs[0].configs == runs[1].configs
    plain = [moo_search(pruned, objective, 2, population=4, generations=1, seed=0, seeds=s) for s in ((), None)]
    assert plain[0].evaluated_configs == plain[1].evaluated_configs  # no seeds: pymoo's own sampling


@pytest.fixture
def fake_search(monkeypatch):
    """AVATAR's search with probes scored without training and the FAKE latency model."""
    from mlflow_metacompress.distill import latency
    from mlflow_metacompress.distill.search import avatar_search, probes

    def fake_probes(ctx, pruned, opts, loss_fn, **kw):
        configs = probes.sample_feasible(pruned, opts.probes, seed=ctx.seed)
        return [probes.ProbeResult(c, 0.5 + 0.05 * i) for i, c in enumerate(configs)]

    monkeypatch.setattr(probes, "run_probes", fake_probes)
    monkeypatch.setattr(avatar_search, "run_probes", fake_probes)
    monkeypatch.setattr(latency, "latency_model", lambda *a, **k: FAKE)
    return avatar_search


def priced(spec, cost: str) -> float:
    """The search cost of ``spec``: the FAKE latency model's, or the FLOP cost at batch 8 (toy_context's)."""
    from mlflow_metacompress.distill.cost import FlopCost

    return float(np.dot(FAKE.coef, features(spec))) if cost == "measured" else FlopCost(8).cost(spec)


@pytest.mark.slow
@pytest.mark.parametrize("cost", ["flops", "measured"])
@pytest.mark.parametrize("target,lower", [(3.0, 0.9), (0.2, 0.5)])
def test_small_budget_latency_search_finds_a_feasible_front(fake_search, monkeypatch, target, lower, cost):
    from mlflow_metacompress.distill.methods.avatar import Options
    from mlflow_metacompress.distill.search import moo
    from mlflow_metacompress.distill.search.objective import reference

    seeded, real = [], moo.moo_search
    monkeypatch.setattr(moo, "moo_search", lambda *a, **kw: seeded.append(kw["seeds"]) or real(*a, **kw))
    opts = Options(population=4, generations=2, probes=2, size_lower=lower)
    ref = reference(target, max_length=64, max_vocab=1000)  # the toy corpus caps the vocabulary at 1000
    budget = priced(ref, cost)  # slack 1: the reference's own cost
    for seed in range(5):
        choice, record = fake_search.avatar_search(toy_context(seed, target), opts, {}, objective="latency", cost=cost)
        assert record["fallback"] is None and record["pareto"] and record["seeded"] == len(seeded[-1]) == 3
        assert seeded[-1][0] == ref  # on the grid and in the band: seeded as it is, then the two probes
        assert record["cost"] == cost and record["cost_budget"] == pytest.approx(budget)
        assert record["latency_budget_ms"] == (pytest.approx(budget) if cost == "measured" else None)
        built = parameter_count(choice.build(["0", "1"]))  # the size re-counted on the built model
        assert lower * target <= built * 4 / 1e6 <= target
        assert priced(choice, cost) <= budget + 1e-12
        assert record["predicted_cost"] == pytest.approx(priced(choice, cost))
        assert choice.hidden_size // choice.num_attention_heads >= 16
        again, record2 = fake_search.avatar_search(toy_context(seed, target), opts, {}, objective="latency", cost=cost)
        assert again == choice and record2 == record  # deterministic for a seed
    # before the warm start (no seeds) the same budget fell back on most seeds
    monkeypatch.setattr(fake_search, "_seeds", lambda *a: [])
    kinds = [
        fake_search.avatar_search(toy_context(s, target), opts, {}, objective="latency", cost=cost)[1]["fallback"]
        for s in range(5)
    ]
    assert kinds.count("teacher_shaped") >= 3


@pytest.mark.slow
def test_paper_objective_is_not_seeded(fake_search, monkeypatch):
    from mlflow_metacompress.distill.methods.avatar import Options
    from mlflow_metacompress.distill.search import moo

    calls = []
    real = moo.moo_search
    monkeypatch.setattr(moo, "moo_search", lambda *a, **kw: calls.append(kw.get("seeds")) or real(*a, **kw))
    _, record = fake_search.avatar_search(
        toy_context(0), Options(population=4, generations=2, probes=2), {}, objective="paper"
    )
    assert calls == [[]] and "seeded" not in record


def test_an_unreachable_budget_still_falls_back_to_the_teacher_shaped_student(fake_search):
    from mlflow_metacompress.distill.methods.avatar import Options
    from mlflow_metacompress.distill.search.objective import reference

    opts = Options(population=4, generations=2, probes=2, size_lower=0.9)
    choice, record = fake_search.avatar_search(
        toy_context(0), opts, {}, objective="latency", latency_slack=1e-6, cost="measured"
    )
    assert record["seeded"] == 3 and record["pareto"] == [] and record["fallback"] == "teacher_shaped"
    assert choice == reference(3.0, max_length=64, max_vocab=1000)


@pytest.mark.slow
def test_compressor_seeds_a_teacher_shaped_student_of_its_own_band(monkeypatch):
    """The budget's reference is sized in [0.8, 1] × target, outside the GA's ±10 % band at
    1 MB with a 1000-token vocabulary; the band's own teacher-shaped student is seeded too."""
    from mlflow_metacompress.distill import latency
    from mlflow_metacompress.distill.methods import compressor
    from mlflow_metacompress.distill.search.compressor_search import SearchSpace, search_architecture

    monkeypatch.setattr(latency, "latency_model", lambda *a, **k: FAKE)
    options = compressor.Options(population=4, generations=2, cost="measured")
    setup = compressor._latency_setup(toy_context(0, 1.0), options, 1000)
    ref, band = setup["seeds"]
    assert not 0.9 <= size_mb(ref) <= 1.1 and 0.9 <= size_mb(band) <= 1.1
    assert setup["latency_budget_ms"] == pytest.approx(float(np.dot(FAKE.coef, features(ref))))
    kw = {
        "population": 4,
        "generations": 2,
        "base": ArchSpec(max_length=64),
        "space": SearchSpace().cap_vocab(1000),
        "progress": False,
        "objective": "latency",
        "latency": FAKE,
        "latency_budget_ms": setup["latency_budget_ms"],
    }
    for seed in range(5):
        result = search_architecture(1.0, seed=seed, seeds=setup["seeds"], **kw)
        assert result.feasible and result.fallback is None
        assert abs(parameter_count(result.best.build(["0", "1"])) * 4 / 1e6 - 1.0) <= 0.1
    # the reference alone (the seed before) leaves the small GA outside the band
    kinds = [search_architecture(1.0, seed=s, seeds=(ref,), **kw).fallback for s in range(5)]
    assert kinds.count("nearest") >= 3
