"""Every discovered recipe is a composition (goal, constraints, transformation, search) with
typed, validated options (issue 43)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from mlflow_metacompress.attacks.composition import Composition, IdentifierRenames, RenameRules, UntargetedFlip
from mlflow_metacompress.attacks.options import AttackOptions
from mlflow_metacompress.attacks.recipes import discover

RECIPES = sorted(discover())


def constant(df: pd.DataFrame) -> np.ndarray:
    return np.tile([0.3, 0.7], (len(df), 1))


@pytest.mark.parametrize("name", RECIPES)
def test_every_recipe_declares_the_four_parts(name):
    attack = discover()[name](constant, budget=7, seed=3)
    parts = attack.composition
    assert isinstance(parts, Composition)
    assert isinstance(parts.goal, UntargetedFlip) and isinstance(parts.constraints, RenameRules)
    assert isinstance(parts.transformation, IdentifierRenames) and callable(parts.search.run)
    assert all(isinstance(v, str) and v for v in parts.describe().values())
    assert set(parts.describe()) == {"goal", "constraints", "transformation", "search"}
    assert isinstance(attack.options, AttackOptions) and type(attack.options) is not AttackOptions
    assert (attack.options.budget, attack.options.seed, attack.budget) == (7, 3, 7)
    with pytest.raises(dataclasses.FrozenInstanceError):
        attack.options.budget = 9  # type: ignore[misc]


@pytest.mark.parametrize("name", RECIPES)
def test_options_are_validated_naming_recipe_option_and_value(name):
    build = discover()[name]
    with pytest.raises(TypeError, match=rf"{name}: unknown option\(s\) \['nonsense'\]; known: \[.*'budget'"):
        build(constant, nonsense=1)
    with pytest.raises(ValueError, match=rf"{name}: option budget must be an int >= 1, got 0"):
        build(constant, budget=0)
    with pytest.raises(ValueError, match=rf"{name}: option seed must be an int, got True"):
        build(constant, seed=True)
    with pytest.raises(ValueError, match=rf"{name}: option max_changed must be an int >= 1 or None, got 'x'"):
        build(constant, max_changed="x")
    assert build(constant, max_changed=None).options.max_changed is None


@pytest.mark.parametrize(
    ("name", "option", "value", "message"),
    [
        ("alert_yang_2022", "top_k", 0, "option top_k must be an int >= 1, got 0"),
        ("alert_yang_2022", "use_ga", "yes", "option use_ga must be a bool, got 'yes'"),
        ("mhm_zhang_2020", "min_accept", 1.5, "option min_accept must be a float >= 0.0 and <= 1.0, got 1.5"),
        ("mhm_zhang_2020", "iterations", 2.5, "option iterations must be an int >= 1, got 2.5"),
        ("wir_random_zeng_2022", "n_random", -1, "option n_random must be an int >= 1, got -1"),
        ("coda_tian_2023", "transformations", "for_to_while", "option transformations must be a sequence"),
    ],
)
def test_recipe_specific_options_reject_bad_values(name, option, value, message):
    with pytest.raises(ValueError, match=f"{name}: {message}"):
        discover()[name](constant, **{option: value})


def test_options_reach_the_search_and_the_composition():
    build = discover()
    assert build["mhm_zhang_2020"](constant, min_accept=1).options.min_accept == 1  # an int is a valid float
    coda = build["coda_tian_2023"](constant, transformations=["for_to_while"], structure=True)
    assert coda.composition.transformation.structure == ("for_to_while",)  # type: ignore[attr-defined]
    assert build["coda_tian_2023"](constant, structure=False).composition.transformation.structure == ()  # type: ignore[attr-defined]
    assert build["alert_yang_2022"](constant, max_changed=2).composition.constraints.max_changed == 2


def test_max_changed_caps_the_renamings_the_search_may_use():
    """The constraint declared in the composition is the one the space enforces."""
    from mlflow_metacompress.attacks import run_attack
    from tests.support.attacks import CODES, LABELS, name_sensitive

    frame = pd.DataFrame({"func": CODES})
    free = run_attack("mhm_zhang_2020", name_sensitive, frame, ["func"], LABELS, "c", budget=80, seed=1, progress=False)
    assert max(len(r.renaming) for r in free.results) > 2  # uncapped, the chain renames more: the cap binds
    for cap in (1, 2):
        report = run_attack(
            "mhm_zhang_2020",
            name_sensitive,
            frame,
            ["func"],
            LABELS,
            "c",
            budget=80,
            seed=1,
            progress=False,
            max_changed=cap,
        )
        assert any(r.renaming for r in report.results)
        assert all(len(r.renaming) <= cap for r in report.results)
