"""Shared fixtures: an isolated sqlite tracking store, tiny locally built models, and the
path of the shared real data (tests that need it skip when it is absent).

Before anything else is imported, the home directory and every per-user folder the
libraries write to (caches, configs: matplotlib, Hugging Face, Lightning, MLflow, the
metacompress cache) are pointed at one temporary folder for the session, removed at
exit. Subprocesses inherit it, so the suite never touches the real home directory
(``.ci/run`` checks that nothing in ``$HOME`` changed).
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

HOME = tempfile.mkdtemp(prefix="metacompress-tests-home-")
atexit.register(shutil.rmtree, HOME, ignore_errors=True)
os.environ.update(
    HOME=HOME,
    XDG_CACHE_HOME=os.path.join(HOME, ".cache"),
    XDG_CONFIG_HOME=os.path.join(HOME, ".config"),
    XDG_DATA_HOME=os.path.join(HOME, ".local", "share"),
    MPLCONFIGDIR=os.path.join(HOME, ".config", "matplotlib"),
    HF_HOME=os.path.join(HOME, ".cache", "huggingface"),
    MLFLOW_METACOMPRESS_CACHE=os.path.join(HOME, ".cache", "mlflow-metacompress"),
    METACOMPRESS_CACHE_DIR=os.path.join(HOME, ".cache", "mlflow-metacompress"),
)

# pytest-xdist runs one worker per core. Left alone, torch and OpenBLAS start one compute
# thread per core in every worker: two workers on two cores run four, oversubscribed (measured
# 4x slower per step, mlflow_metacompress/threads.py). Each worker gets its share of the cores
# (set before numpy or torch is imported; inherited by the servers and runs the tests start);
# a count the caller set is kept, and a one-process run (-n 0) leaves the default to the library.
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 0)
if _WORKERS > 1:
    from mlflow_metacompress.threads import available_cores  # standard library only at import

    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, available_cores() // _WORKERS)))

import numpy as np  # noqa: E402 - imported after HOME and the caches are redirected
import pytest  # noqa: E402 - imported after HOME and the caches are redirected

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# the suite's oracles are float32 computations: training and inference default to fp32 here;
# test_precision.py checks "auto" (bf16 where the CPU has AVX512-BF16/AMX) and bf16 explicitly
os.environ.setdefault("METACOMPRESS_PRECISION", "fp32")
# Spark's Python workers run the interpreter the tests run in (with pandas, torch and this
# package), also when that virtualenv is not activated on PATH
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


# Longest files first. With --dist loadfile, pytest-xdist hands each worker whole files, and by
# default the files with the most tests go first, so the few-test long files (servers, Spark,
# whole studies) came last and one worker ran them while the other sat idle. These were the
# longest files of a --durations run (2026-12-08, seconds of one core, summed over the tests of
# 3 s or more); they go first, longest first, and every other file follows in collection order
# (pyproject.toml passes --no-loadscope-reorder so that xdist keeps this order).
LONGEST_FILES = (
    "tests/evaluation/test_spark_engine.py",  # 100 s
    "tests/webhooks/test_webhooks.py",  # 93 s
    "tests/core/test_cli.py",  # 71 s (before its models skipped requirement inference)
    "tests/gates/test_gates_race.py",  # 44 s
    "tests/study/test_triad_run.py",  # 42 s
    "tests/core/test_extensions.py",  # 27 s
    "tests/pipeline/test_mlproject.py",  # 25 s
    "tests/distill/test_distill_determinism.py",  # 23 s
    "tests/distill/test_distill_ddp.py",  # 21 s
    "tests/evaluation/test_evaluator_attacks.py",  # 20 s
    "tests/pipeline/test_pipeline_interrupts.py",  # 19 s
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run :data:`LONGEST_FILES` first, longest first; the order inside a file is kept."""
    rank = {name: i for i, name in enumerate(LONGEST_FILES)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.exists():
        pytest.skip("../shared/data is absent")
    return SHARED_DATA


@pytest.fixture(scope="session")
def _migrated_db(tmp_path_factory) -> Path:
    """One sqlite store migrated once per session (migrations take seconds); each test
    gets a copy of the file, so every test still starts from an empty store."""
    import mlflow
    from mlflow.tracking import MlflowClient

    path = tmp_path_factory.mktemp("template") / "mlflow.db"
    cwd = os.getcwd()
    os.chdir(path.parent)  # the default experiment's artifact root is ./mlruns at creation: keep it out of the repo
    try:
        MlflowClient(tracking_uri=f"sqlite:///{path}", registry_uri=f"sqlite:///{path}").search_experiments()
    finally:
        os.chdir(cwd)
    mlflow.set_tracking_uri(None)
    return path


@pytest.fixture
def tracking(tmp_path, monkeypatch, _migrated_db):
    """A fresh sqlite tracking store and registry; artifacts land under tmp_path."""
    import shutil

    import mlflow

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_METACOMPRESS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("METACOMPRESS_CACHE_DIR", str(tmp_path / "cache"))
    shutil.copy(_migrated_db, tmp_path / "mlflow.db")
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    yield uri
    if mlflow.active_run():
        mlflow.end_run()


@contextmanager
def _current_store(root: Path, template: Path):
    """A fresh store (``support.open_store``) made MLflow's current tracking and registry URI,
    with the working directory and the metacompress cache inside its folder; all restored after."""
    import mlflow

    from tests.support.registry import open_store

    store = open_store(root, template)
    cwd, previous = os.getcwd(), mlflow.get_tracking_uri()
    saved = {k: os.environ.get(k) for k in ("METACOMPRESS_CACHE_DIR", "MLFLOW_METACOMPRESS_CACHE")}
    os.chdir(root)
    mlflow.set_tracking_uri(store.uri)
    mlflow.set_registry_uri(store.uri)
    os.environ.update(METACOMPRESS_CACHE_DIR=str(root / "cache"), MLFLOW_METACOMPRESS_CACHE=str(root / "cache"))
    try:
        yield store
    finally:
        if mlflow.active_run():
            mlflow.end_run()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        mlflow.set_tracking_uri(previous)
        mlflow.set_registry_uri(None)
        os.chdir(cwd)


@pytest.fixture(scope="module")
def store(tmp_path_factory, _migrated_db):
    """One sqlite tracking + registry store for the module, shared by its tests (their
    evaluations, registered models and worker pools): a ``support.Store``."""
    with _current_store(tmp_path_factory.mktemp("store"), _migrated_db) as opened:
        yield opened


@pytest.fixture
def fresh_store(tmp_path, _migrated_db):
    """The same as ``store``, one per test."""
    with _current_store(tmp_path / "store", _migrated_db) as opened:
        yield opened


@pytest.fixture
def registered_teacher(tracking, tmp_path, monkeypatch):
    """A registered teacher (``support.LengthModel``) (artifacts under an absolute root), the cache folder from the
    environment, and an empty working directory to run in."""
    import mlflow

    from mlflow_metacompress import cache
    from tests.support.models import LengthModel

    exp = mlflow.create_experiment("cache", artifact_location=(tmp_path / "artifacts").as_uri())
    with mlflow.start_run(experiment_id=exp):
        info = mlflow.pyfunc.log_model(
            name="m", python_model=LengthModel(), registered_model_name="teacher", pip_requirements=[]
        )
    mlflow.MlflowClient().set_registered_model_alias("teacher", "champion", "1")
    monkeypatch.setenv(cache.ENV, str(tmp_path / "cache-home"))
    empty = tmp_path / "cwd"
    empty.mkdir()
    monkeypatch.chdir(empty)
    return info, tmp_path / "cache-home", empty


def random_probs(rng: np.random.Generator, n: int, k: int, sharpness: float = 1.0) -> np.ndarray:
    logits = rng.normal(size=(n, k)) * sharpness
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


TOY_CODE = [
    "int add(int a, int b) {\n  int s = a + b;\n  return s;\n}",
    "int find(int *arr, int n, int key) {\n  for (int i = 0; i < n; i++) {\n    if (arr[i] == key) return i;\n  }\n"
    "  return -1;\n}",
    "void copy(char *dst, const char *src, int n) {\n  int i = 0;\n  while (i < n) {\n    dst[i] = src[i];\n    i++;\n"
    "  }\n}",
    "int clamp(int v, int lo, int hi) {\n  if (v < lo) {\n    return lo;\n  } else {\n    return v > hi ? hi : v;\n"
    "  }\n}",
    "int sum(int *xs, int n) {\n  int total = 0;\n  for (int k = 0; k < n; k++) {\n    total += xs[k];\n  }\n"
    "  return total;\n}",
    "void fill(char *buf, int len) {\n  char tmp[16];\n  strcpy(tmp, buf);\n  memset(buf, 0, len);\n}",
]


def toy_frame(n: int = 48, seed: int = 0):
    """A small labelled C dataset for fast end-to-end tests (label = template parity)."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(TOY_CODE), n)
    return pd.DataFrame({"func": [TOY_CODE[i] for i in picks], "target": (picks % 2).astype(int)})


@pytest.fixture(scope="session")
def tiny_classifiers():
    """A locally trained BPE tokenizer and two differently seeded tiny CodeClassifiers."""
    import torch

    from mlflow_metacompress.models.classifier import CodeClassifier
    from mlflow_metacompress.models.tokenizer import train_tokenizer

    tok = train_tokenizer(TOY_CODE * 5, vocab_size=400)
    models = []
    for seed, hidden in ((0, 64), (1, 32)):
        torch.manual_seed(seed)
        models.append(
            CodeClassifier.from_config(
                len(tok),
                hidden_size=hidden,
                intermediate_size=2 * hidden,
                max_length=128,
                pad_token_id=tok.pad_token_id,
            ).eval()
        )
    return tok, models[0], models[1]


def fresh_mlflow_stores() -> None:
    """Forget the tracking and registry stores, and their relative SQLite engines, that MLflow
    built in this process.

    MLflow caches a store per URI string and a SQLAlchemy engine per database URI, so a
    relative ``sqlite:///mlflow.db`` stays bound to the folder it was first opened in; a test
    that runs a documented block (which uses that URI) in its own working folder calls this
    first, or it writes into an earlier test's."""
    from mlflow.store.model_registry.sqlalchemy_store import SqlAlchemyStore as RegistryStore
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore as TrackingStore
    from mlflow.tracking._model_registry import utils as registry_utils
    from mlflow.tracking._tracking_service import utils as tracking_utils

    for registry in (tracking_utils._tracking_store_registry, registry_utils._get_store_registry()):
        type(registry)._get_store_with_resolved_uri.cache_clear()
    for store in (TrackingStore, RegistryStore):
        for uri in [u for u in store._engine_map if u.startswith("sqlite:///") and not u.startswith("sqlite:////")]:
            store._engine_map.pop(uri).dispose()
