"""Attack framework parts that need no parser: goal function, results, substitutes and
the search methods over an abstract "apply candidate renaming" callable."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from mlflow_metacompress.attacks.constraints import RenameConstraints
from mlflow_metacompress.attacks.goal import GoalFunction, QueryModel
from mlflow_metacompress.attacks.results import AttackReport, AttackResult, AttackStatus
from mlflow_metacompress.attacks.search import (
    RenameSpace,
    genetic,
    greedy_by_importance,
    metropolis_hastings,
    rank_by_importance,
)
from mlflow_metacompress.attacks.substitutes import IdentifierVocabulary, name_similarity, split_name

NAMES = ["a", "b", "c"]


class Recorder:
    """A predict callable recording every row it sees; ``p0(code) -> p(class 0)``."""

    def __init__(self, p0):
        self.p0 = p0
        self.seen: list[str] = []

    def __call__(self, df: pd.DataFrame) -> np.ndarray:
        codes = list(df["func"])
        self.seen += codes
        p = np.array([self.p0(c) for c in codes], dtype=float)
        return np.stack([p, 1 - p], axis=1)


def render(mapping) -> str:
    return "|".join(f"{n}={mapping.get(n, n)}" for n in NAMES)


def parse(code: str) -> dict[str, str]:
    return dict(kv.split("=") for kv in code.split("|"))


def make_space(p0, budget: int, names=NAMES):
    model = QueryModel(Recorder(p0), ["func"])
    code = render({})
    goal = GoalFunction(model, {"func": code}, "func", 0, budget)
    start = goal.get_results([code])[0]
    constraints = RenameConstraints("c", frozenset(names), frozenset(names), validator=str.isidentifier)
    return RenameSpace(goal, render, names, constraints, start), model


# ----------------------------------------------------------------- goal function
def test_query_model_caches_by_full_row_and_counts_forwards():
    rec = Recorder(lambda c: 0.9)
    qm = QueryModel(rec, ["func", "other"])
    qm.probabilities([("x", "y"), ("x", "y"), ("x", "z")])
    qm.probabilities([("x", "y")])
    assert qm.forward_rows == 2 and qm.forward_calls == 1
    assert rec.seen == ["x", "x"]  # two distinct rows differing only in the second column


def test_goal_function_respects_budget_and_counts_each_input_once():
    qm = QueryModel(Recorder(lambda c: 0.9), ["func"])
    goal = GoalFunction(qm, {"func": "orig"}, "func", 0, budget=5)
    out = goal.get_results(["orig", "orig", "a", "b"])
    assert len(out) == 4 and goal.queries == 3
    out = goal.get_results(["a", "c", "d", "e", "f"])  # 'a' is free, then room for two new ones
    assert [r.code for r in out] == ["a", "c", "d"]
    assert goal.queries == 5 and goal.exhausted
    assert goal.get_results(["g"]) == [] and goal.get_results(["c"])[0].code == "c"
    # another sample's goal function pays for its own queries even when cached
    other = GoalFunction(qm, {"func": "zzz"}, "func", 0, budget=2)
    other.get_results(["a", "b", "c"])
    assert other.queries == 2 and qm.forward_rows == 5  # a and b were cached: no new forward


def test_goal_result_success_and_score():
    qm = QueryModel(lambda df: np.array([[0.3, 0.7]] * len(df)), ["func"])
    r = GoalFunction(qm, {"func": "x"}, "func", 0, 3).get_results(["x"])[0]
    assert r.succeeded and r.prediction == 1 and r.score == pytest.approx(0.7)


@pytest.mark.parametrize(
    "bad, message",
    [
        (lambda df: np.array([[2.0, -1.0]] * len(df)), "probabilities"),
        (lambda df: np.ones(len(df)), "N×K"),
    ],
)
def test_query_model_rejects_non_probabilities(bad, message):
    with pytest.raises(ValueError, match=message):
        QueryModel(bad, ["func"]).probabilities([("x",)])


# ----------------------------------------------------------------- search methods
def test_greedy_follows_importance_and_finds_the_flip():
    def p0(code):
        m = parse(code)
        return 0.2 if m["c"].startswith("z") else (0.7 if m["c"] != "c" else 0.8)

    space, _ = make_space(p0, budget=100)
    order, flip = rank_by_importance(space)
    assert flip is None and order[0] == "c"  # only masking 'c' lowers p(label)
    subs = {n: ["q1", "q2", "zeta"] for n in NAMES}
    cand = greedy_by_importance(space, order, subs)
    assert cand.succeeded and cand.mapping == {"c": "zeta"}
    assert space.goal.queries == 1 + 3 + 3  # original, three masks, three substitutes of 'c'


def test_genetic_combines_two_partial_renamings():
    def p0(code):
        m = parse(code)
        hits = (m["a"] == "x1") + (m["b"] == "y1")
        return {0: 0.9, 1: 0.75, 2: 0.3}[hits]

    space, _ = make_space(p0, budget=400)
    subs = {"a": ["x0", "x1", "x2"], "b": ["y0", "y1"], "c": ["w0"]}
    cand = genetic(space, subs, random.Random(0))
    assert cand.succeeded and cand.mapping["a"] == "x1" and cand.mapping["b"] == "y1"
    assert space.goal.queries <= 400


def test_metropolis_hastings_finds_the_trigger_and_is_reproducible():
    vocab = [f"n{i}" for i in range(60)] + ["trigger"]

    def p0(code):
        return 0.1 if parse(code)["b"] == "trigger" else 0.8

    def propose(name, rng, n):
        return rng.sample(vocab, n)

    runs = []
    for _ in range(2):
        space, model = make_space(p0, budget=3000)
        cand = metropolis_hastings(space, propose, random.Random(7), iterations=100, n_candidates=30)
        runs.append((cand.mapping, space.goal.queries, model.forward_rows))
    assert runs[0] == runs[1]
    assert runs[0][0]["b"] == "trigger"


@pytest.mark.parametrize("search", ["greedy", "genetic", "mh"])
def test_searches_fail_within_budget_on_a_constant_model(search):
    space, model = make_space(lambda c: 0.8, budget=25)
    subs = {n: [f"{n}{i}" for i in range(20)] for n in NAMES}
    rng = random.Random(0)
    if search == "greedy":
        cand = greedy_by_importance(space, NAMES, subs)
    elif search == "genetic":
        cand = genetic(space, subs, rng)
    else:
        cand = metropolis_hastings(space, lambda n, r, k: r.sample(subs[n], min(k, len(subs[n]))), rng)
    assert not cand.succeeded
    assert space.goal.queries <= 25 and model.forward_rows <= 25


def test_space_drops_colliding_and_duplicate_renamings_without_queries():
    space, model = make_space(lambda c: 0.8, budget=50)
    out = space.evaluate([{"a": "b"}, {"a": "z", "b": "z"}, {"a": "1x"}, {"a": "ok"}, {"a": "ok"}])
    assert [c.mapping for c in out] == [{"a": "ok"}]
    assert space.goal.queries == 2  # original + one valid renaming


# ----------------------------------------------------------------- results
def _result(status, queries, reason=None):
    return AttackResult(
        index=0,
        status=status,
        queries=queries,
        original_code="x",
        adversarial_code="y",
        label=0,
        original_probs=np.array([0.6, 0.4]),
        adversarial_probs=np.array([0.4, 0.6]),
        skip_reason=reason,
    )


def test_report_metrics_match_hand_computation():
    S, F, K = AttackStatus.SUCCEEDED, AttackStatus.FAILED, AttackStatus.SKIPPED
    results = [
        _result(S, 10),
        _result(S, 30),
        _result(F, 50),
        _result(K, 1, "wrong_prediction"),
        _result(K, 1, "no_identifiers"),
    ]
    for i, r in enumerate(results):
        r.index = i
    rep = AttackReport("x", results, ["func"], pd.DataFrame({"func": ["x"] * 5}))
    m = rep.metrics()
    assert rep.clean_accuracy == pytest.approx(4 / 5)
    assert m["asr"] == pytest.approx(2 / 3)
    assert m["mean_queries"] == pytest.approx(30.0)
    assert m["accuracy_under_attack"] == pytest.approx(2 / 5)
    assert m["accuracy_drop"] == pytest.approx(2 / 5)
    assert rep.metrics(clean_accuracy=0.9)["accuracy_drop"] == pytest.approx(0.5)
    assert list(rep.adversarial_frame().index) == [0, 1]
    table = rep.table()
    assert list(table["status"]) == ["succeeded", "succeeded", "failed", "skipped", "skipped"]
    assert "-x" in table["diff"][0] and "+y" in table["diff"][0]
    assert "Attack success rate" in rep.summary() and "66.67%" in rep.summary()


# ----------------------------------------------------------------- substitutes
def test_name_similarity_and_splitting():
    assert split_name("maxBufferLen_2") == ["max", "buffer", "len", "2"]
    assert split_name("HTTPServer") == ["http", "server"]
    assert name_similarity("buf_len", "buf_len") == pytest.approx(1.0)
    assert name_similarity("bufLen", "buf_len") > name_similarity("bufLen", "count")
    rng = np.random.default_rng(0)
    words = ["".join(rng.choice(list("abcdxyz_"), size=5)) for _ in range(30)]
    for a, b in zip(words, words[::-1], strict=True):
        s = name_similarity("x" + a, "y" + b)
        assert 0.0 <= s <= 1.0 and s == pytest.approx(name_similarity("y" + b, "x" + a))


def test_vocabulary_ranks_by_similarity_and_samples_deterministically():
    vocab = IdentifierVocabulary(Counter({"buffer": 5, "buf_size": 3, "count": 9, "i": 20, "not valid": 4}))
    assert "not valid" not in vocab.names
    assert vocab.nearest("buf_len", 2) == ["buf_size", "buffer"]
    assert vocab.nearest("buf_len", 5, exclude=["buffer"])[0] == "buf_size"
    a = vocab.sample(random.Random(3), 8, exclude={"i"})
    assert a == vocab.sample(random.Random(3), 8, exclude={"i"})
    assert len(a) == len(set(a)) == 8 and "i" not in a  # padded with sub-token blends


def test_indexed_ranking_equals_brute_force_ranking():
    rng = random.Random(0)
    parts = ["i", "len", "buf", "count", "x", "tmp", "ptr", "size", "n", "idx", "val", "key"]
    vocab = IdentifierVocabulary(
        Counter({"_".join(rng.sample(parts, rng.randint(1, 3))): rng.randint(1, 9) for _ in range(400)})
    )
    for query in ["i_len", "bufSize", "zz", "n", "count", "tmpPtr2"]:
        brute = sorted(vocab.names, key=lambda n: (-name_similarity(query, n), -vocab.counts[n], n))
        assert vocab.nearest(query, 300) == [n for n in brute if n != query][:300]
