"""The one cache (:mod:`mlflow_metacompress.cache`): location precedence read at use time,
entries validated like fresh predictions (tampered, NaN, wrong-shape, wrong-rows and
truncated entries are recomputed, never used), atomic concurrent writes, and
distillation caches that never touch the working directory."""

from __future__ import annotations

import json
import logging
import multiprocessing
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mlflow_metacompress import cache, cache_keys

CODES = [f"int f{i}(int a) {{ return a + {i}; }}" * (1 + i % 3) for i in range(12)]


def softmax_rows(n: int, k: int, seed: int) -> np.ndarray:
    z = np.random.default_rng(seed).normal(size=(n, k))
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def probs_of(df: pd.DataFrame) -> np.ndarray:
    """A deterministic 'model': class-1 probability from the code length."""
    p = (df.iloc[:, 0].str.len().to_numpy() % 7 + 1) / 9.0
    return np.column_stack([1 - p, p])


class Counting:
    def __init__(self, fn=probs_of):
        self.fn, self.rows = fn, 0

    def __call__(self, df: pd.DataFrame) -> np.ndarray:
        self.rows += len(df)
        return self.fn(df)


# --------------------------------------------------------------------- location
@pytest.fixture
def no_cache_env(monkeypatch, tmp_path):
    for var in (cache.ENV, cache.LEGACY_ENV):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path


def test_location_precedence_explicit_then_env_then_user_dir(no_cache_env, monkeypatch):
    tmp = no_cache_env
    assert cache.location() == tmp / "xdg" / "mlflow-metacompress"  # Linux: platformdirs and the fallback agree
    monkeypatch.setenv(cache.LEGACY_ENV, str(tmp / "legacy"))
    assert cache.location() == tmp / "legacy"
    monkeypatch.setenv(cache.ENV, str(tmp / "env"))
    assert cache.location() == cache.location(None) == cache.location(cache.DEFAULT) == tmp / "env"
    assert cache.location(tmp / "explicit") == cache.location(str(tmp / "explicit")) == tmp / "explicit"


def test_location_is_read_when_used_not_at_import(no_cache_env, monkeypatch):
    from mlflow_metacompress.adapters.predictors import Predictor
    from mlflow_metacompress.evaluation.config import EvaluatorConfig

    tmp = no_cache_env
    predictor = Predictor("m", Counting(), identity="model-a", progress=False)  # default location, not yet resolved
    monkeypatch.setenv(cache.ENV, str(tmp / "later"))
    predictor.predict(pd.DataFrame({"func": CODES}), ["func"])
    assert [p.name.split("-")[0] for p in (tmp / "later").iterdir()] == ["predictions"]
    assert not (tmp / "xdg").exists()
    assert EvaluatorConfig().cache_path == tmp / "later"
    assert EvaluatorConfig(cache_dir=str(tmp / "x")).cache_path == tmp / "x"
    assert EvaluatorConfig(use_cache=False).cache_path is None


# --------------------------------------------------------------------- entries
@pytest.fixture
def stored(tmp_path):
    """A valid predictions entry for CODES, and how to reload it."""
    df = pd.DataFrame({"func": CODES})
    rows = cache_keys.rows_digest(df, ["func"])
    key = cache_keys.entry_key("predictions", "model-a", rows)
    probs = softmax_rows(len(df), 3, 0)
    path = cache.store("predictions", key, {"probs": probs}, rows=rows, classes=["a", "b", "c"], cache_dir=tmp_path)

    def reload(n_rows=None, classes=("a", "b", "c")):
        return cache.load(
            "predictions",
            key,
            rows=rows,
            n_rows=len(df) if n_rows is None else n_rows,
            checks={"probs": "probabilities"},
            classes=classes,
            cache_dir=tmp_path,
        )

    return path, key, rows, probs, reload


def test_valid_entry_round_trips(stored):
    path, key, _, probs, reload = stored
    entry = reload()
    np.testing.assert_array_equal(entry.arrays["probs"], probs)
    assert entry.classes == ["a", "b", "c"] and path.name == f"predictions-{key}.npz"
    assert reload(classes=("a", "c", "b")) is None  # another class order is another model's output


def _rewrite(path: Path, **changes) -> None:
    """Rewrite an entry's arrays or header in place, keeping everything else."""
    with np.load(path, allow_pickle=False) as z:
        data = {k: z[k] for k in z.files}
    meta = json.loads(str(data["__meta__"][()]))
    for k, v in changes.items():
        if k in meta:
            meta[k] = v
        else:
            data[k] = v
    data["__meta__"] = np.array(json.dumps(meta))
    with open(path, "wb") as fh:
        np.savez(fh, **data)


@pytest.mark.parametrize("tamper", ["nan", "wrong_shape", "rows", "key", "truncated", "garbage", "checksum_ok_nan"])
def test_bad_entries_are_discarded_with_a_warning(stored, tmp_path, tamper, caplog):
    path, key, rows, probs, reload = stored
    if tamper == "nan":
        _rewrite(path, probs=np.where(np.arange(probs.size).reshape(probs.shape) == 4, np.nan, probs))
    elif tamper == "wrong_shape":
        _rewrite(path, probs=np.vstack([probs, probs]))
    elif tamper == "rows":
        _rewrite(path, rows="0" * 64)
    elif tamper == "key":
        _rewrite(path, key="f" * 40)
    elif tamper == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif tamper == "garbage":
        path.write_bytes(b"\x93NUMPY not really")
    else:  # a forged entry with a consistent checksum still gets the value checks
        bad = probs.copy()
        bad[2, 0] = np.nan
        cache.store("predictions", key, {"probs": bad}, rows=rows, classes=["a", "b", "c"], cache_dir=tmp_path)
    with caplog.at_level(logging.WARNING, logger="mlflow_metacompress.cache"):
        assert reload() is None
    assert "discarding invalid predictions cache entry" in caplog.text


def test_short_or_doubled_entries_fail_the_row_count(stored, tmp_path):
    _, key, rows, probs, reload = stored
    for bad in (probs[:-1], np.vstack([probs, probs])):
        cache.store("predictions", key, {"probs": bad}, rows=rows, classes=["a", "b", "c"], cache_dir=tmp_path)
        assert reload() is None


def test_log_probability_entries_check_that_exp_rows_sum_to_one(tmp_path):
    logp = np.log(softmax_rows(5, 2, 1))
    checks = {"logits": "log_probabilities"}
    cache.store("soft_labels", "k", {"logits": logp}, rows="r", cache_dir=tmp_path)
    assert cache.load("soft_labels", "k", rows="r", n_rows=5, checks=checks, cache_dir=tmp_path) is not None
    cache.store("soft_labels", "k", {"logits": logp + 0.5}, rows="r", cache_dir=tmp_path)  # not normalised
    assert cache.load("soft_labels", "k", rows="r", n_rows=5, checks=checks, cache_dir=tmp_path) is None


# --------------------------------------------------------------------- predictor
def test_predictor_recomputes_a_tampered_entry(tmp_path, caplog):
    from mlflow_metacompress.adapters.predictors import Predictor

    df = pd.DataFrame({"func": CODES})
    teacher_fn, student_fn = Counting(lambda d: softmax_rows(len(d), 2, 7)), Counting()
    teacher = Predictor("teacher", teacher_fn, identity="teacher-id", cache_dir=tmp_path, progress=False)
    Predictor("student", student_fn, identity="student-id", cache_dir=tmp_path, progress=False).predict(df, ["func"])
    teacher.predict(df, ["func"])
    rows = cache_keys.rows_digest(df, ["func"])
    student_path = cache.entry_path("predictions", cache_keys.entry_key("predictions", "student-id", rows), tmp_path)
    teacher_path = cache.entry_path("predictions", cache_keys.entry_key("predictions", "teacher-id", rows), tmp_path)
    shutil.copy(teacher_path, student_path)  # the teacher's probabilities in the student's entry
    fresh = Predictor("student", student_fn, identity="student-id", cache_dir=tmp_path, progress=False)
    with caplog.at_level(logging.WARNING):
        probs, _ = fresh.predict(df, ["func"])
    np.testing.assert_allclose(probs, probs_of(df))  # the oracle: the student itself
    assert student_fn.rows == 2 * len(df) and "discarding" in caplog.text
    again = Predictor("student", Counting(), identity="student-id", cache_dir=tmp_path, progress=False)
    np.testing.assert_allclose(again.predict(df, ["func"])[0], probs_of(df))  # the recomputed entry replaced it
    assert again.fn.rows == 0


@pytest.mark.slow
def test_tampered_cache_cannot_pass_an_evaluation(tracking, tmp_path, caplog):
    """Issue 12: copying the teacher's cached probabilities into the student's entry used
    to turn a failing MR1 into 0. The entry is now detected and the student re-run."""
    import mlflow

    from mlflow_metacompress.relations import evaluate_relations
    from tests.conftest import toy_frame
    from tests.support.evaluation import evaluate_logged as evaluate
    from tests.support.evaluation import sklearn_pair as _sklearn_pair

    df = toy_frame(80)
    teacher, student = _sklearn_pair(df)
    with mlflow.start_run():
        kw = dict(
            pyfunc_predict_fn="predict_proba", pip_requirements=["scikit-learn"], input_example=df[["func"]].head(2)
        )
        t = mlflow.sklearn.log_model(teacher, name="t", **kw)
        s = mlflow.sklearn.log_model(student, name="s", **kw)
    cfg = {"teacher": t.model_uri, "transforms": [], "cache_dir": str(tmp_path / "shared-ci-cache"), "progress": False}
    expected = evaluate_relations(
        teacher.predict_proba(df[["func"]]), student.predict_proba(df[["func"]]), df["target"].to_numpy()
    ).metrics
    assert expected["mr1_violation_rate"] > 0  # otherwise the tampering could not show
    _, first = evaluate(s.model_uri, df, cfg)
    rows = cache_keys.rows_digest(df, ["func"])
    path = {
        role: cache.entry_path(
            "predictions", cache_keys.entry_key("predictions", cache_keys.model_identity(uri), rows), cfg["cache_dir"]
        )
        for role, uri in (("t", t.model_uri), ("s", s.model_uri))
    }
    assert path["t"].is_file() and path["s"].is_file()
    shutil.copy(path["t"], path["s"])
    with caplog.at_level(logging.WARNING):
        run_id, second = evaluate(s.model_uri, df, cfg)
    assert "discarding invalid predictions cache entry" in caplog.text
    for result in (first, second):
        assert result.metrics["mr1_violation_rate"] == pytest.approx(expected["mr1_violation_rate"])
        assert result.metrics["any_violation_rate"] == pytest.approx(expected["any_violation_rate"])
    summary = json.loads(
        open(mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path="metacompress/summary.json")).read()
    )
    assert summary["student_rows_run"] == 80 and summary["teacher_rows_run"] == 0


# --------------------------------------------------------------------- concurrency
def _store_one(args: tuple[str, int]) -> bool:
    folder, i = args
    probs = softmax_rows(50, 3, 0)
    path = cache.store("predictions", "one-key", {"probs": probs}, rows="r", classes=["a", "b", "c"], cache_dir=folder)
    hit = cache.load("predictions", "one-key", rows="r", n_rows=50, checks={"probs": "probabilities"}, cache_dir=folder)
    return path is not None and hit is not None  # a reader never sees half a file


def _assert_one_valid_entry(folder: Path) -> None:
    assert [p.name for p in folder.iterdir()] == ["predictions-one-key.npz"]  # no temporary file left behind
    entry = cache.load(
        "predictions", "one-key", rows="r", n_rows=50, checks={"probs": "probabilities"}, cache_dir=folder
    )
    np.testing.assert_array_equal(entry.arrays["probs"], softmax_rows(50, 3, 0))


@pytest.mark.slow
def test_400_concurrent_thread_writes_of_one_key_all_succeed(tmp_path, caplog):
    with caplog.at_level(logging.WARNING), ThreadPoolExecutor(16) as pool:
        results = list(pool.map(_store_one, [(str(tmp_path), i) for i in range(400)]))
    assert all(results) and len(results) == 400 and "could not write" not in caplog.text
    _assert_one_valid_entry(tmp_path)


@pytest.mark.slow
def test_400_concurrent_process_writes_of_one_key_all_succeed(tmp_path):
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        results = pool.map(_store_one, [(str(tmp_path), i) for i in range(400)], chunksize=5)
    assert all(results) and len(results) == 400
    _assert_one_valid_entry(tmp_path)


# --------------------------------------------------------------------- sharing between users (issue 23)
NOBODY = 65534  # uid of "nobody" and gid of "nogroup" on Debian


@pytest.mark.parametrize("folder_mode, entry_mode", [(0o700, 0o600), (0o755, 0o600), (0o2775, 0o640), (0o3777, 0o644)])
def test_entry_mode_follows_the_folder(tmp_path, folder_mode, entry_mode):
    folder = tmp_path / "c"
    folder.mkdir()
    folder.chmod(folder_mode)
    path = cache.store("predictions", "k", {"probs": softmax_rows(4, 2, 0)}, rows="r", cache_dir=folder)
    assert path.stat().st_mode & 0o777 == entry_mode == cache.entry_mode(folder)


def _as_nobody(work):
    """Run ``work()`` in a forked child whose uid is ``nobody`` and whose only group is
    ``nogroup`` (the interpreter need not be exec'd, so the venv's location does not matter);
    returns its result and what the cache logged. The kernel enforces the file modes on
    the child, so this is a real second user, not a simulation of one."""
    import os
    import pickle

    if os.getuid() != 0:
        pytest.skip("needs root to switch to another user")
    import encodings.cp437  # noqa: F401  (zipfile's codec, imported lazily: the child may not read the stdlib)

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            os.close(read)
            records: list[str] = []
            handler = logging.Handler()
            handler.emit = lambda record: records.append(record.getMessage())
            log = logging.getLogger("mlflow_metacompress.cache")
            log.addHandler(handler)
            log.setLevel(logging.INFO)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            result = work()
            with os.fdopen(write, "wb") as fh:
                pickle.dump((result, records), fh)
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as fh:
        data = fh.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0 and data, "the child running as nobody failed"
    return pickle.loads(data)


@pytest.fixture
def shared_folder():
    """A cache folder under /tmp (reachable by nobody), owned by root:nogroup, setgid and group-writable."""
    import os
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="metacompress-shared-cache-", dir="/tmp"))
    try:
        os.chown(folder, 0, NOBODY)
        folder.chmod(0o2775)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _load(folder, key="k"):
    entry = cache.load("predictions", key, rows="r", n_rows=4, checks={"probs": "probabilities"}, cache_dir=folder)
    return None if entry is None else entry.arrays["probs"]


def test_another_user_of_the_group_reads_an_entry_in_a_shared_folder(shared_folder):
    probs = softmax_rows(4, 2, 0)
    path = cache.store("predictions", "k", {"probs": probs}, rows="r", cache_dir=shared_folder)
    assert path.stat().st_gid == NOBODY  # the setgid folder's group, so the group can share it
    got, logged = _as_nobody(lambda: _load(shared_folder))
    np.testing.assert_array_equal(got, probs)  # a hit for the second user: nothing recomputed
    assert logged == []


def test_an_unreadable_entry_is_not_readable_not_invalid_and_is_left_in_place(shared_folder):
    """An entry written owner-only (before the folder was shared) by root: ``nobody`` may
    replace it (the folder is group-writable) but cannot read it."""
    probs = softmax_rows(4, 2, 0)
    path = cache.store("predictions", "k", {"probs": probs}, rows="r", cache_dir=shared_folder)
    path.chmod(0o600)
    before = (path.read_bytes(), path.stat().st_ino)

    def reader():
        missed = _load(shared_folder)
        stored = cache.store("predictions", "k", {"probs": softmax_rows(4, 2, 1)}, rows="r", cache_dir=shared_folder)
        return missed, stored

    (missed, stored), logged = _as_nobody(reader)
    assert missed is None and stored is None
    assert any("is not readable by this user" in m and str(path) in m for m in logged), logged
    assert not any("invalid" in m for m in logged), logged
    assert (path.read_bytes(), path.stat().st_ino) == before  # root's good entry was not overwritten
    np.testing.assert_array_equal(_load(shared_folder), probs)
