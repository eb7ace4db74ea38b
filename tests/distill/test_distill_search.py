"""The shared search machinery (distill/search/): AVATAR's z3 pruning against brute
force, the closed-form size against built models (and ArchSpec's own count), decoding,
surrogates, and NSGA-II / AGE-MOEA fronts against a brute-force non-dominated filter."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from mlflow_metacompress.distill.arch import ArchSpec, param_count
from mlflow_metacompress.distill.search.moo import decode, fit_surrogate, moo_search, nearest_to_target, non_dominated
from mlflow_metacompress.distill.search.space import AvatarSpace, enumerate_feasible, prune, size_mb
from mlflow_metacompress.models.size import parameter_count
from tests.support.distill import LOWER, TARGET, TINY, brute_force


def build_student(c: ArchSpec, labels: list[str], pair_mode=None):
    return replace(c, num_labels=len(labels), pair_mode=pair_mode).build(labels)


@pytest.mark.slow
@pytest.mark.parametrize(
    "pos,pair,act",
    [
        ("absolute", None, "relu"),
        ("absolute", "concat_cls", "gelu"),
        ("rotary", None, "gelu"),
        ("rotary", "concat_cls", "gelu"),
    ],
)
def test_closed_form_size_matches_built_student(pos, pair, act):
    for c in (
        ArchSpec(1000, 2, 32, 4, 64, max_length=64, position_embedding_type=pos, hidden_act=act),
        ArchSpec(3000, 3, 48, 3, 96, max_length=128, position_embedding_type=pos, hidden_act=act),
    ):
        model = build_student(c, ["0", "1"], pair)
        assert param_count(c, 2, pair) == parameter_count(model)
        assert model.encoder.config.hidden_act == act
        # the one architecture type measures itself the same way (measured for RoBERTa, closed form for ESM)
        assert replace(c, pair_mode=pair).parameter_count() == parameter_count(model)


@pytest.mark.slow
def test_z3_enumeration_equals_brute_force_and_every_solution_meets_constraints():
    found = enumerate_feasible(TINY, TARGET, lower=LOWER)
    assert len(found) == len(set(found)) > 20
    for c in found:  # constraints restated independently of the library's oracle
        assert c.hidden_size % 16 == 0 and c.hidden_size % c.num_attention_heads == 0
        assert c.vocab_size % 1000 == 0 and c.intermediate_size % 32 == 0
        assert LOWER * TARGET <= parameter_count(build_student(c, ["0", "1"])) * 4 / 1e6 <= TARGET
        assert c.position_embedding_type != "rotary" or c.hidden_act == "gelu"
    assert set(found) == brute_force(TINY, TARGET, LOWER)


def test_pruned_bounds_are_the_tight_bounds_of_the_feasible_set():
    pruned = prune(TINY, TARGET, lower=LOWER, pair_mode="concat_cls")
    feasible = brute_force(TINY, TARGET, LOWER, pair_mode="concat_cls")
    for gene in ("vocab_size", "num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size"):
        values = [getattr(c, gene) for c in feasible]
        assert pruned.bounds[gene] == (min(values), max(values)), gene
    for gene in ("hidden_act", "max_length", "position_embedding_type"):
        assert set(pruned.choices[gene]) == {getattr(c, gene) for c in feasible}
    assert all(pruned.feasible(c) for c in feasible)
    with pytest.raises(ValueError, match="no configuration"):
        prune(TINY, 0.001)


def test_default_space_pruned_at_3mb_only_keeps_sizes_that_fit():
    pruned = prune(AvatarSpace(), 3.0)
    lo_h, hi_h = pruned.bounds["hidden_size"]
    smallest = ArchSpec(1000, 1, hi_h, 1, 32, max_length=128, position_embedding_type="rotary")
    assert size_mb(smallest) <= 3.0  # the bound is reachable...
    assert size_mb(replace(smallest, hidden_size=hi_h + 16)) > 3.0  # ...and the next multiple is not
    assert hi_h < AvatarSpace().hidden_size[1]


def test_decode_repairs_heads_and_rotary_activation():
    pruned = prune(TINY, TARGET, lower=0.0)
    rng = np.random.default_rng(0)
    sizes = [
        len(pruned.grid(g))
        for g in (
            "vocab_size",
            "num_hidden_layers",
            "hidden_size",
            "num_attention_heads",
            "intermediate_size",
            "tokenizer",
            "hidden_act",
            "dropout",
            "max_length",
            "position_embedding_type",
        )
    ]
    for _ in range(200):
        c = decode(rng.integers(0, sizes).astype(float), pruned)
        assert c.hidden_size % c.num_attention_heads == 0
        assert c.position_embedding_type != "rotary" or c.hidden_act == "gelu"


def _random_configs(pruned, n, seed=0):
    rng = np.random.default_rng(seed)
    sizes = [
        len(pruned.grid(g))
        for g in (
            "vocab_size",
            "num_hidden_layers",
            "hidden_size",
            "num_attention_heads",
            "intermediate_size",
            "tokenizer",
            "hidden_act",
            "dropout",
            "max_length",
            "position_embedding_type",
        )
    ]
    return [decode(rng.integers(0, sizes).astype(float), pruned) for _ in range(n)]


def test_surrogates_recover_the_signal_they_are_fitted_on():
    pruned = prune(AvatarSpace(), 3.0)
    train, test = _random_configs(pruned, 60, 0), _random_configs(pruned, 30, 1)

    def truth(cs):
        return np.array(
            [
                0.5
                + 0.03 * np.log2(c.hidden_size)
                - 0.02 * np.log2(c.num_hidden_layers)
                + (0.05 if c.tokenizer == "bpe" else 0.0)
                for c in cs
            ]
        )

    br = fit_surrogate(train, truth(train), pruned, "bayesian_ridge")
    np.testing.assert_allclose(br.predict(test), truth(test), atol=2e-3)  # linear in the features: exact up to noise
    gb = fit_surrogate(train, truth(train), pruned, "gradient_boosting")
    assert np.corrcoef(gb.predict(test), truth(test))[0, 1] > 0.9
    with pytest.raises(ValueError, match="≥ 2"):
        fit_surrogate(train[:1], [0.5], pruned)
    with pytest.raises(ValueError, match="unknown surrogate"):
        fit_surrogate(train, truth(train), pruned, "forest")


def brute_non_dominated(F: np.ndarray) -> np.ndarray:
    return np.array(
        [not any(np.all(F[j] <= F[i]) and np.any(F[j] < F[i]) for j in range(len(F)) if j != i) for i in range(len(F))]
    )


@pytest.mark.parametrize("seed", range(5))
def test_non_dominated_filter_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    F = rng.integers(0, 6, size=(60, 3)).astype(float)  # small integers: ties and duplicates
    np.testing.assert_array_equal(non_dominated(F), brute_non_dominated(F))


def test_nsga2_front_is_the_non_dominated_subset_of_what_it_evaluated():
    pruned = prune(TINY, TARGET, lower=LOWER)

    def objective(cs):
        return np.array([[abs(size_mb(c) - TARGET), -c.hidden_size, c.num_hidden_layers] for c in cs], dtype=float)

    result = moo_search(pruned, objective, 3, algorithm="nsga2", population=16, generations=6, seed=0)
    assert result.configs and all(pruned.feasible(c) for c in result.feasible)
    np.testing.assert_array_equal(result.F, objective(result.configs))
    keep = brute_non_dominated(result.feasible_F)
    assert set(result.configs) == {c for c, k in zip(result.feasible, keep, strict=True) if k}
    best = nearest_to_target(result.configs, TARGET, pruned)
    dists = [abs(size_mb(c) - TARGET) for c in result.configs]
    assert dists[best] == min(dists)


@pytest.mark.slow
def test_nsga2_reaches_the_true_optimum_of_a_small_space():
    pruned = prune(TINY, TARGET, lower=LOWER)

    def objective(cs):
        return np.array([[-c.hidden_size, c.num_hidden_layers] for c in cs], dtype=float)

    everything = sorted(brute_force(TINY, TARGET, LOWER), key=repr)
    true_F = objective(everything)
    true_front = {tuple(f) for f, k in zip(true_F, brute_non_dominated(true_F), strict=True) if k}
    result = moo_search(pruned, objective, 2, algorithm="nsga2", population=16, generations=8, seed=1)
    assert {tuple(f) for f in result.F} == true_front


@pytest.mark.slow
def test_agemoea_front_is_the_non_dominated_subset_of_what_it_evaluated():
    pruned = prune(TINY, TARGET, lower=0.5)

    def objective(cs):
        return np.array(
            [[size_mb(c), -c.hidden_size, c.num_hidden_layers, c.intermediate_size] for c in cs], dtype=float
        )

    result = moo_search(pruned, objective, 4, algorithm="agemoea", population=12, generations=3, seed=0)
    keep = brute_non_dominated(result.feasible_F)
    assert set(result.configs) == {c for c, k in zip(result.feasible, keep, strict=True) if k}
