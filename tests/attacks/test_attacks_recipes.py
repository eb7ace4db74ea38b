"""The recipes (discovered; at least the four published ones) against synthetic models:
budgets, real flips, parsing, consistent renaming checked token by token on tree-sitter
leaves, seeds, clone pairs."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from mlflow_metacompress.attacks import AttackStatus, list_attacks, run_attack
from mlflow_metacompress.attacks.recipes import discover
from mlflow_metacompress.attacks.recipes.coda_tian_2023 import eligible, structure_features
from mlflow_metacompress.attacks.results import AttackReport
from tests.support.attacks import CODES, LABELS, WITH_COUNT, WITHOUT, assert_consistent_renaming, leaves, name_sensitive

PUBLISHED = ["mhm_zhang_2020", "alert_yang_2022", "wir_random_zeng_2022", "coda_tian_2023"]
ATTACKS = sorted(discover())  # the property tests cover every discovered recipe, not a fixed list


def constant(df: pd.DataFrame) -> np.ndarray:
    return np.tile([0.3, 0.7], (len(df), 1))


def check_report(report, predict, renaming_only: bool, budget: int) -> None:
    for r in report.results:
        assert r.queries <= budget
        if r.status is AttackStatus.SUCCEEDED:
            probs = predict(pd.DataFrame({"func": [r.adversarial_code]}))[0]
            assert int(np.argmax(probs)) != r.label, "reported success is not a real label flip"
            np.testing.assert_allclose(probs, r.adversarial_probs)
            leaves(r.adversarial_code)
            if renaming_only or not r.transformations:
                assert_consistent_renaming(r.original_code, r.adversarial_code, r.renaming)


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return pd.DataFrame({"func": CODES, "target": LABELS}, index=[f"s{i}" for i in range(len(CODES))])


def test_registry_holds_at_least_the_four_recipes_each_named_once():
    import importlib

    from mlflow_metacompress.attacks import ATTACKS as REGISTRY
    from mlflow_metacompress.attacks.attack import Attack

    names = list_attacks()
    assert set(PUBLISHED) <= set(names) == set(ATTACKS) and names == sorted(names) == sorted(REGISTRY)
    for name in PUBLISHED:  # the shipped modules are named after their recipe
        module = importlib.import_module(f"mlflow_metacompress.attacks.recipes.{name}")
        assert module.NAME == name
    for name in names:
        attack = REGISTRY[name](constant, budget=5)
        assert isinstance(attack, Attack) and attack.name == name


def test_coda_uses_only_known_transformations_and_rejects_unknown_ones():
    from mlflow_metacompress.attacks.recipes import get_attack
    from mlflow_metacompress.attacks.recipes.coda_tian_2023 import STRUCTURE
    from mlflow_metacompress.transforms import LANGUAGES, list_transforms

    known = {t for language in LANGUAGES for t in list_transforms(language)}
    assert set(STRUCTURE) <= known
    build = get_attack("coda_tian_2023")
    with pytest.raises(KeyError, match=r"unknown transformations \['if_else_to_if_if'\]; known: .*swap_if_else"):
        build(constant, transformations=["for_to_while", "if_else_to_if_if"])
    assert build(constant, transformations=["for_to_while"]).transformations == ("for_to_while",)


@pytest.mark.parametrize("name", ATTACKS)
def test_name_sensitive_model_is_flipped_validly(name, frame):
    report = run_attack(name, name_sensitive, frame, ["func"], LABELS, "c", budget=200, seed=1, progress=False)
    check_report(report, name_sensitive, discover()[name](constant, budget=5).renaming_only, 200)
    by_index = {r.index: r for r in report.results}
    for i in frame.index[: len(WITH_COUNT)]:
        assert by_index[i].status is AttackStatus.SUCCEEDED, f"{name} missed the flip on {i}"
        assert "count" in by_index[i].renaming or by_index[i].transformations
    m = report.metrics()
    assert m["asr"] >= len(WITH_COUNT) / len(CODES)
    adv = report.adversarial_frame()
    assert set(adv.index) == {r.index for r in report.results if r.status is AttackStatus.SUCCEEDED}
    assert (adv["target"] == frame.loc[adv.index, "target"]).all()


@pytest.mark.parametrize("name", ATTACKS)
def test_constant_model_is_never_flipped_and_budget_holds(name, frame):
    calls = []

    def counted(df):
        calls.append(len(df))
        return constant(df)

    report = run_attack(name, counted, frame, ["func"], LABELS, "c", budget=40, seed=0, progress=False)
    statuses = [r.status for r in report.results]
    assert AttackStatus.SUCCEEDED not in statuses
    assert statuses.count(AttackStatus.SKIPPED) == len(WITHOUT)  # label 0 is always mispredicted
    assert all(r.queries <= 40 for r in report.results)
    assert sum(calls) == report.forward_rows <= len(CODES) + 40 * len(WITH_COUNT)
    assert report.metrics()["asr"] == 0.0


@pytest.mark.slow
@pytest.mark.parametrize("name", ATTACKS)
def test_seeds_reproduce(name, frame):
    def run(seed):
        rep = run_attack(name, name_sensitive, frame, ["func"], LABELS, "c", budget=60, seed=seed, progress=False)
        return rep.table().drop(columns=["original_probs", "adversarial_probs"])

    pd.testing.assert_frame_equal(run(3), run(3))


@pytest.mark.slow
@pytest.mark.parametrize("name", ATTACKS)
def test_any_split_of_the_samples_gives_the_same_results(name, frame):
    """What the spark attack engine relies on: attacking the samples in separate groups, each
    with its own model cache and its own attack prepared on all the data, in any order, gives
    run_attack's results, query counts included."""
    from mlflow_metacompress.attacks.attack import AttackData
    from mlflow_metacompress.attacks.goal import QueryModel
    from mlflow_metacompress.attacks.recipes import ATTACKS as RECIPES
    from mlflow_metacompress.attacks.runner import attack_positions

    whole = run_attack(name, name_sensitive, frame, ["func"], LABELS, "c", budget=30, seed=2, progress=False).table()
    data = AttackData(frame, ["func"], LABELS, "c")
    rows = [{"func": c} for c in frame["func"]]
    parts = []
    for group in (list(range(len(frame)))[::-2], list(range(len(frame)))[::2]):
        attack = RECIPES[name](QueryModel(name_sensitive, ["func"]), budget=30, seed=2)
        attack.prepare(data)
        parts += attack_positions(attack, data, group, rows)
    split = AttackReport(name, parts, ["func"], frame).table().sort_values("index", key=lambda s: s.str[1:].astype(int))
    pd.testing.assert_frame_equal(whole, split.reset_index(drop=True))
    assert (whole["status"] == "succeeded").any() and whole["queries"].sum() > len(frame)


def test_integer_index_labels_stay_integers_in_the_table(frame):
    labelled = frame.set_axis(range(100, 100 + 3 * len(frame), 3))  # not a RangeIndex after filtering
    labelled = labelled[labelled.index != 103]
    table = run_attack(
        "wir_random_zeng_2022", name_sensitive, labelled, ["func"], labelled["target"], "c", budget=10, progress=False
    ).table()
    assert table["index"].tolist() == labelled.index.tolist() and table["index"].dtype.kind == "i"


def test_clone_pairs_change_only_the_first_function(frame):
    pairs = pd.DataFrame({"func1": CODES, "func2": CODES[::-1]})
    seen_second: set[str] = set()

    def pair_model(df):
        seen_second.update(df["func2"])
        return name_sensitive(df[["func1"]])

    report = run_attack(
        "alert_yang_2022", pair_model, pairs, ["func1", "func2"], LABELS, "c", budget=80, progress=False
    )
    assert seen_second == set(CODES)
    adv = report.adversarial_frame()
    assert len(adv) >= len(WITH_COUNT)
    assert (adv["func2"] == pairs.loc[adv.index, "func2"]).all()
    assert (adv["func1"] != pairs.loc[adv.index, "func1"]).all()


def test_unparsable_or_identifier_free_code_is_skipped():
    df = pd.DataFrame({"func": ["int f(void) { return 1; }", "int g(int a) { return a +; }"]})
    report = run_attack(
        "mhm_zhang_2020", lambda d: np.tile([0.2, 0.8], (len(d), 1)), df, ["func"], [1, 1], "c", progress=False
    )
    assert [r.skip_reason for r in report.results] == ["no_identifiers", "unparsable"]
    assert all(r.status is AttackStatus.SKIPPED and r.queries == 1 for r in report.results)
    assert report.metrics()["accuracy_under_attack"] == 1.0  # nothing could be attacked


def test_bad_inputs_name_the_fault(frame):
    with pytest.raises(KeyError, match="unknown attack 'nope'; available: .*coda_tian_2023"):
        run_attack("nope", constant, frame, ["func"], LABELS, "c")
    with pytest.raises(KeyError, match="code"):
        run_attack("mhm_zhang_2020", constant, frame, ["code"], LABELS, "c")
    with pytest.raises(ValueError, match="one label per row"):
        run_attack("mhm_zhang_2020", constant, frame, ["func"], LABELS[:2], "c")
    with pytest.raises(ValueError, match="integer class indices"):
        run_attack("mhm_zhang_2020", constant, frame, ["func"], LABELS + 0.5, "c")


def test_coda_structure_step_copies_the_references_loops(frame):
    """A model keyed on ``for`` loops: CODA's references (class 0) use while loops, so
    for→while is eligible and flips the label without any renaming."""

    def loop_model(df):
        p = np.array([0.8 if re.search(r"\bfor\b", c) else 0.2 for c in df["func"]])
        return np.stack([1 - p, p], axis=1)

    labels = np.array([int(bool(re.search(r"\bfor\b", c))) for c in CODES])
    report = run_attack("coda_tian_2023", loop_model, frame, ["func"], labels, "c", budget=100, progress=False)
    check_report(report, loop_model, False, 100)
    flipped = [r for r in report.results if r.label == 1]
    assert flipped and all(r.status is AttackStatus.SUCCEEDED for r in flipped)
    assert all(r.transformations == ["for_to_while"] and not r.renaming for r in flipped)


def test_coda_eligibility_rules():
    f = structure_features
    target = f("for ( i = 0 ; i < n ; i ++ ) x += 1 ;".split())
    refs = [f("while ( i < n ) { x = x + 1 ; i = i + 1 ; } return MAX_SIZE ;".split())]
    assert eligible(target, refs) == ["for_to_while", "expand_compound_assignment", "literal_to_constant"]
    assert eligible(target, []) == []
    assert eligible(refs[0], [target]) == ["while_to_for"]
