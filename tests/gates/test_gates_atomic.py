"""promote under faults: a failing holder loses the alias, the verdict tag is written last,
the stage follows the alias, half-written evaluation runs are refused, and the lock."""

from __future__ import annotations

import logging

import pytest
from mlflow.models.evaluation import EvaluationResult

from mlflow_metacompress import gates
from mlflow_metacompress.gates import PromotionRefusedError, promote
from mlflow_metacompress.gates.lock import PromotionLockError, lock_path, promotion_lock
from tests.support.registry import alias_version, evaluation_run, register_versions, version_tags

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


def _model(store, versions=2):
    return store["client"], register_versions(store["client"], store["source"], "atomic", versions)


def _run(store, metrics, end_time, summary=True, finish=True):
    return evaluation_run(store["client"], store["exp"], metrics, end_time, summary, finish)


_alias, _tags = alias_version, version_tags


@pytest.mark.slow
def test_failing_holder_hands_alias_to_freshest_other_passing_version(store, caplog):
    client, name = _model(store, versions=4)
    # v3 passed at T0+1, v1 at T0+2, v2 at T0+3; v4 passed at T0+4 (holder), then fails
    for version, when in ((3, 1), (1, 2), (2, 3), (4, 4)):
        promote(name, version, _run(store, GOOD, T0 + when), "standard", client=client)
    promote(name, 4, _run(store, BAD, T0 + 5), "standard", client=client)
    assert _alias(client, name) == "2"  # v4 held it and failed: back to v2
    with caplog.at_level(logging.WARNING, logger="mlflow_metacompress.gates"):
        decision = promote(name, 2, _run(store, BAD, T0 + 6), "standard", client=client)
    assert not decision.passed and not decision.alias_moved
    assert decision.alias_handed_to == "1" and _alias(client, name) == "1"  # freshest, not highest, version
    assert "handed back to v1" in decision.notes[-1] and "alias 'champion' handed back to v1" in caplog.text
    assert decision.to_dict()["alias_handed_to"] == "1"
    assert _tags(client, name, 2)[gates.TAG_VERDICT] == "failed"
    assert promote(name, 1, _run(store, BAD, T0 + 7), "standard", client=client).alias_handed_to == "3"
    last = promote(name, 3, _run(store, BAD, T0 + 8), "standard", client=client)
    assert last.alias_handed_to is None and "deleted" in last.notes[-1]
    assert _alias(client, name) is None
    # no version whose latest verdict failed holds the alias, at any point above


def test_failing_non_holder_leaves_alias_alone(store):
    client, name = _model(store)
    promote(name, 1, _run(store, GOOD, T0), "standard", client=client)
    decision = promote(name, 2, _run(store, BAD, T0 + 9), "standard", client=client)
    assert decision.alias_handed_to is None and _alias(client, name) == "1"


@pytest.mark.slow
@pytest.mark.parametrize("fail_at", range(1, 8))
def test_verdict_tag_is_written_last(store, monkeypatch, fail_at):
    """A fault at any tag write never leaves ``passed`` beside another evaluation's evidence."""
    client, name = _model(store, versions=1)
    old = _run(store, BAD, T0)
    promote(name, 1, old, "standard", client=client)
    new = _run(store, GOOD, T0 + 1)
    real, calls = client.set_model_version_tag, []

    def flaky(model, version, key, value):
        calls.append((key, value))
        if len(calls) == fail_at:
            raise OSError("registry went away")
        return real(model, version, key, value)

    monkeypatch.setattr(client, "set_model_version_tag", flaky)
    with pytest.raises(OSError):  # 7 writes: pending, 5 evidence tags, verdict
        promote(name, 1, new, "standard", client=client)
    monkeypatch.undo()
    tags = _tags(client, name, 1)
    assert calls[0] == (gates.TAG_VERDICT, "pending")
    assert tags[gates.TAG_VERDICT] in {"failed", "pending"}  # never "passed": the write of "passed" failed
    if tags[gates.TAG_VERDICT] == "failed":  # only when even "pending" could not be written
        assert fail_at == 1 and tags[gates.TAG_RUN] == old
    assert _alias(client, name) is None
    promote(name, 1, new, "standard", client=client)  # a retry completes
    assert _tags(client, name, 1)[gates.TAG_VERDICT] == "passed" and _alias(client, name) == "1"


def test_tag_order_pending_evidence_verdict(store, monkeypatch):
    client, name = _model(store, versions=1)
    real, keys = client.set_model_version_tag, []
    monkeypatch.setattr(
        client, "set_model_version_tag", lambda m, v, k, val: (keys.append((k, val)), real(m, v, k, val))
    )
    promote(name, 1, _run(store, GOOD, T0), "standard", client=client)
    assert keys[0] == (gates.TAG_VERDICT, "pending") and keys[-1] == (gates.TAG_VERDICT, "passed")
    assert {k for k, _ in keys[1:-1]} == {
        gates.TAG_FAILED,
        gates.TAG_RUN,
        gates.TAG_POLICY,
        gates.TAG_EVALUATED_AT,
        gates.TAG_VERDICT_TIME,
    }


@pytest.mark.slow
def test_stage_waits_for_the_alias_and_is_never_left_behind(store, monkeypatch):
    client, name = _model(store)
    promote(name, 1, _run(store, GOOD, T0), "standard", client=client)

    def boom(*args, **kwargs):
        raise RuntimeError("alias write failed")

    monkeypatch.setattr(client, "set_registered_model_alias", boom)
    with pytest.raises(RuntimeError, match="alias write failed"):
        promote(name, 2, _run(store, GOOD, T0 + 1), "standard", stage="Production", client=client)
    monkeypatch.undo()
    assert client.get_model_version(name, "2").current_stage == "None" and _alias(client, name) == "1"

    # the stage transition itself fails: the alias goes back to its previous holder
    monkeypatch.setattr(client, "transition_model_version_stage", boom)
    with pytest.raises(RuntimeError):
        promote(name, 2, _run(store, GOOD, T0 + 2), "standard", stage="Production", client=client)
    monkeypatch.undo()
    assert _alias(client, name) == "1" and client.get_model_version(name, "2").current_stage == "None"


@pytest.mark.slow
def test_read_back_reports_a_lost_move_and_undoes_the_stage(store, monkeypatch):
    """A writer outside the lock (another machine on a remote store) moves the alias to a
    fresher passing version right after ours: the decision must not claim the move."""
    client, name = _model(store, versions=3)
    promote(name, 3, _run(store, GOOD, T0 + 50), "standard", alias=None, client=client)  # fresher, passed
    real = client.set_registered_model_alias

    def racer(model, alias, version):
        real(model, alias, version)
        real(model, alias, "3")

    monkeypatch.setattr(client, "set_registered_model_alias", racer)
    decision = promote(name, 1, _run(store, GOOD, T0), "standard", stage="Staging", client=client)
    monkeypatch.undo()
    assert decision.passed and not decision.alias_moved and decision.stage is None
    assert _alias(client, name) == "3" and "taken by v3" in " ".join(decision.notes)
    assert client.get_model_version(name, "1").current_stage == "None"


@pytest.mark.slow
def test_read_back_moves_back_over_a_staler_concurrent_writer(store, monkeypatch):
    client, name = _model(store, versions=2)
    promote(name, 2, _run(store, BAD, T0 + 99), "standard", alias=None, client=client)
    real, moved = client.set_registered_model_alias, []

    def stale_racer(model, alias, version):
        real(model, alias, version)
        if not moved:  # once: a failing version grabs the alias outside the lock
            moved.append(version)
            real(model, alias, "2")

    monkeypatch.setattr(client, "set_registered_model_alias", stale_racer)
    decision = promote(name, 1, _run(store, GOOD, T0), "standard", client=client)
    assert decision.alias_moved and _alias(client, name) == "1"


@pytest.mark.parametrize("case", ["running", "no-summary"])
def test_refuses_half_written_evaluation_runs_before_writing(store, case):
    client, name = _model(store, versions=1)
    run_id = _run(store, GOOD, T0, summary=case != "no-summary", finish=case != "running")
    with pytest.raises(PromotionRefusedError) as err:
        promote(name, 1, run_id, "standard", client=client)
    needle = "is RUNNING, not FINISHED" if case == "running" else "has no metacompress/summary.json artifact"
    assert needle in str(err.value) and run_id in str(err.value)
    decision = err.value.decision
    assert not decision.passed and not decision.alias_moved and decision.evaluation_run_id == run_id
    assert gates.TAG_VERDICT not in _tags(client, name, 1) and _alias(client, name) is None


@pytest.mark.parametrize("bad", ["1 ", " 1", "x", "01", "1.0", 0, -1, True])
def test_malformed_versions_are_rejected(store, bad):
    client, name = _model(store, versions=1)
    with pytest.raises(ValueError, match="model version must be a positive integer"):
        promote(name, bad, EvaluationResult(dict(GOOD), {}), "standard", client=client)
    assert gates.TAG_VERDICT not in _tags(client, name, 1)


def test_lock_file_placement(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_METACOMPRESS_CACHE", str(tmp_path / "cache"))
    db = tmp_path / "store" / "mlflow.db"
    beside = lock_path(f"sqlite:///{db}", "m")
    assert beside.parent == db.parent and beside.name.startswith("mlflow.db.metacompress-")
    assert lock_path(f"sqlite:///{db}", "n") != beside
    (tmp_path / "cache").mkdir()
    monkeypatch.chdir(tmp_path / "cache")
    assert lock_path("sqlite:///../store/mlflow.db", "m") == beside  # relative URIs resolve like sqlalchemy
    remote = lock_path("http://mlflow.internal:5000", "m")
    assert remote.parent == tmp_path / "cache" / "locks"
    assert len({remote, lock_path("http://other:5000", "m"), lock_path("http://mlflow.internal:5000", "n")}) == 3


def test_lock_timeout_is_a_clear_error_and_nothing_is_written(store):
    client, name = _model(store, versions=1)
    with promotion_lock(store["uri"], name) as path:
        with pytest.raises(PromotionLockError, match=f"another promotion of '{name}' held the lock") as err:
            promote(name, 1, _run(store, GOOD, T0), "standard", client=client, lock_timeout=0.05)
        assert str(path) in str(err.value)
        with promotion_lock(store["uri"], f"{name}-other", timeout=0.05):  # other models are not blocked
            pass
    assert gates.TAG_VERDICT not in _tags(client, name, 1)
    assert promote(name, 1, _run(store, GOOD, T0), "standard", client=client).alias_moved  # released


def test_lock_files_are_removed_and_the_lock_still_excludes(tmp_path):
    """Issue 23: no ``mlflow.db.metacompress-*.lock`` is left beside the store. The holder
    removes the file before releasing it; 8 threads (each its own descriptor, so flock
    treats them like processes) taking the lock 40 times each never overlap."""
    import threading
    import time

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    guard, inside, peaks = threading.Lock(), [0], []

    def worker():
        for _ in range(40):
            with promotion_lock(uri, "m", timeout=120):
                with guard:
                    inside[0] += 1
                    peaks.append(inside[0])
                time.sleep(0.0002)
                with guard:
                    inside[0] -= 1

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(peaks) == 320 and max(peaks) == 1  # mutual exclusion held throughout
    assert list(tmp_path.iterdir()) == []  # no lock file left
