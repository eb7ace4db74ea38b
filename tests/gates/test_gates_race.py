"""Concurrent ``promote`` calls from separate processes on one sqlite registry.

Each trial starts the promotions together behind a ``multiprocessing.Barrier`` (spawned
processes, as on macOS and in CI runners), so they race for real. Whatever order the lock
serialises them in, the fresher passing evaluation must end up holding ``champion``, and
each decision's ``alias_moved`` claim is checked against what the other decisions saw:
a version that says it moved the alias must be the ``previous_holder`` the next mover saw
(the chain of movers is the order the alias really went through), and a refused version
names a holder with a fresher evaluation.
"""

from __future__ import annotations

import multiprocessing
import queue
import traceback

import pytest
from mlflow import MlflowClient

from mlflow_metacompress.gates.lock import lock_path
from tests.support.registry import alias_version, evaluation_run, register_versions

pytestmark = pytest.mark.slow  # trains, runs a pipeline or mlflow run, or starts a server: out of the fast lane

GOOD = {
    "accuracy_drop": 0.01,
    "mr1_violation_rate": 0.02,
    "mr1_violation_rate/metamorphic": 0.05,
    "mr3_violation_rate/metamorphic": 0.04,
    "mr4_eca": 0.01,
    "attack_alert_yang_2022/excess_drop_pct": 40.0,
}
BAD = dict(GOOD, accuracy_drop=0.5)
T0 = 1_700_000_000_000


def _worker(uri, barrier, tasks, results):
    """One promoting process: for each (name, version, run id) task, wait at the barrier, promote."""
    from mlflow_metacompress.gates import PromotionRefusedError, promote

    client = MlflowClient(uri, uri)
    for name, version, run_id in iter(tasks.get, None):
        try:
            barrier.wait(timeout=120)
            try:
                out = (promote(name, version, run_id, "standard", client=client).to_dict(), False)
            except PromotionRefusedError as exc:
                out = (exc.decision.to_dict(), True)
        except BaseException:  # report instead of hanging the parent
            out = ({"error": traceback.format_exc()}, None)
        results.put(out)


class _Pool:
    """``n`` spawned promoting processes sharing one barrier."""

    def __init__(self, uri, n):
        ctx = multiprocessing.get_context("spawn")
        self.barrier, self.results = ctx.Barrier(n), ctx.Queue()
        self.tasks = [ctx.Queue() for _ in range(n)]
        self.procs = [
            ctx.Process(target=_worker, args=(uri, self.barrier, q, self.results), daemon=True) for q in self.tasks
        ]
        for p in self.procs:
            p.start()

    def run(self, jobs):
        for q, job in zip(self.tasks, jobs, strict=True):
            q.put(job)
        got = []
        for _ in jobs:
            try:
                got.append(self.results.get(timeout=300))
            except queue.Empty:
                pytest.fail("a promoting process did not answer within 300 s")
        for decision, _ in got:
            assert "error" not in decision, decision.get("error")
        return got

    def close(self):
        for q in self.tasks:
            q.put(None)
        for p in self.procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()


def _setup(store, times, metrics):
    """A registered model with one version per evaluation time; returns (name, [(version, run id)])."""
    client = store["client"]
    name = register_versions(client, store["source"], "racer", len(times))
    return name, [
        (name, str(v), evaluation_run(client, store["exp"], m, end))
        for v, (end, m) in enumerate(zip(times, metrics, strict=True), 1)
    ]


_holder = alias_version


def _check_claims(decisions, times, final):
    """Every alias_moved claim is consistent with the others' observations (see module doc)."""
    by_version = {d["version"]: (d, refused) for d, refused in decisions}
    movers = {v for v, (d, _) in by_version.items() if d["alias_moved"]}
    assert final in movers  # the holder at the end moved it there
    # the movers form one chain None -> ... -> final, each link to a fresher evaluation
    seen_before = {v: by_version[v][0]["previous_holder"] for v in movers}
    chain, cursor = [], final
    while cursor is not None:
        assert cursor not in chain and len(chain) < len(movers), f"alias history loops: {chain}"
        chain.append(cursor)
        cursor = seen_before[cursor]
        assert cursor is None or cursor in movers, f"v{chain[-1]} replaced v{cursor}, which never claimed the alias"
    assert sorted(chain) == sorted(movers), f"movers {movers} are not one chain {chain[::-1]}"
    assert [times[v] for v in chain[::-1]] == sorted(times[v] for v in chain)
    for v, (d, refused) in by_version.items():
        if v in movers:
            continue
        assert not d["alias_moved"]
        if d["passed"]:  # a passing version that did not move the alias was refused by a fresher holder
            assert refused and d["previous_holder"] in movers
            assert times[d["previous_holder"]] > times[v]


@pytest.fixture(scope="module")
def pair(store):
    pool = _Pool(store["uri"], 2)
    yield pool
    pool.close()


@pytest.mark.parametrize("trial", range(6))
def test_two_processes_fresher_passing_evaluation_wins(store, pair, trial):
    # alternate which version and which process carries the fresher evaluation
    times = [T0, T0 + 60_000] if trial % 2 else [T0 + 60_000, T0]
    name, jobs = _setup(store, times, [GOOD, GOOD])
    t = {job[1]: when for job, when in zip(jobs, times, strict=True)}
    decisions = pair.run(jobs[::-1] if trial % 3 == 2 else jobs)
    final = _holder(store["client"], name)
    assert final == max(t, key=t.get)
    _check_claims(decisions, t, final)
    assert lock_path(store["uri"], name).parent == lock_path(store["uri"], "other").parent


@pytest.fixture(scope="module")
def six(store):
    pool = _Pool(store["uri"], 6)
    yield pool
    pool.close()


@pytest.mark.parametrize("trial", range(2))
def test_six_versions_at_once(store, six, trial):
    # five passing versions with shuffled evaluation times, and a failing one with the freshest
    order = [3, 0, 5, 1, 4, 2] if trial == 0 else [1, 4, 2, 5, 0, 3]
    times = [T0 + 1000 * k for k in order]
    metrics = [BAD if k == 5 else GOOD for k in order]
    name, jobs = _setup(store, times, metrics)
    decisions = six.run(jobs)
    t = {job[1]: when for job, when in zip(jobs, times, strict=True)}
    passing = {job[1] for job, m in zip(jobs, metrics, strict=True) if m is GOOD}
    final = _holder(store["client"], name)
    assert final == max(passing, key=t.get)
    failing = [d for d, _ in decisions if not d["passed"]]
    assert len(failing) == 1 and not failing[0]["alias_moved"]
    _check_claims([(d, r) for d, r in decisions if d["passed"]], t, final)
    tags = store["client"].get_model_version(name, failing[0]["version"]).tags
    assert tags["metacompress.verdict"] == "failed"
