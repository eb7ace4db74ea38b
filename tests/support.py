"""Plain helpers shared by the test modules (issue 45): builders of tiny models, so that no
test module imports another. Fixtures built on them live in ``conftest.py``."""

from __future__ import annotations

import base64
import hashlib
import importlib
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import zlib
from collections.abc import Sequence
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import mlflow
import numpy as np
import pandas as pd
import pytest
import torch
from mlflow import MlflowClient
from torch import nn

from mlflow_metacompress.adapters.predictors import Predictor
from mlflow_metacompress.data.generators import make_splits
from mlflow_metacompress.distill import methods as methods_pkg
from mlflow_metacompress.distill.arch import ArchSpec
from mlflow_metacompress.distill.datasets import CodeExamples
from mlflow_metacompress.distill.latency_fit import LatencyModel
from mlflow_metacompress.distill.search.space import AvatarSpace, size_mb
from mlflow_metacompress.evaluation.config import parse_config
from mlflow_metacompress.evaluation.loop import EvaluationOutcome, run_evaluation
from mlflow_metacompress.models.classifier import CodeClassifier
from mlflow_metacompress.models.tokenizer import train_tokenizer
from tests.conftest import TOY_CODE, random_probs, toy_frame

REPO = Path(__file__).resolve().parents[1]


def tiny_roberta_config(
    vocab_size: int,
    pad_token_id: int,
    *,
    labels: Sequence[str] | None = None,
    positions: int = 130,
    hidden: int = 32,
    **overrides: Any,
) -> Any:
    """A one-layer RoBERTa configuration (``hidden`` wide, 2 heads, FFN ``2 * hidden``,
    ``positions`` position embeddings); with ``labels``, their ``id2label``/``label2id``."""
    from transformers import RobertaConfig

    names: dict[str, Any] = {}
    if labels is not None:
        names = {"id2label": dict(enumerate(labels)), "label2id": {k: i for i, k in enumerate(labels)}}
    return RobertaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=2 * hidden,
        max_position_embeddings=positions,
        pad_token_id=pad_token_id,
        **names,
        **overrides,
    )


def tiny_sequence_classifiers(
    tok: Any,
    labels: Sequence[str],
    *,
    seeds: Sequence[int] = (0, 1),
    positions: int = 130,
    centred_on: list[str] | None = None,
) -> list[Any]:
    """One tiny ``RobertaForSequenceClassification`` per seed (``initializer_range=0.5``, so
    that seeds disagree), in eval mode; with ``centred_on``, the classifier's bias is shifted
    so that the mean logit over those texts is zero (both labels predicted)."""
    import torch
    from transformers import RobertaForSequenceClassification

    models = []
    for seed in seeds:
        torch.manual_seed(seed)
        cfg = tiny_roberta_config(len(tok), tok.pad_token_id, labels=labels, positions=positions, initializer_range=0.5)
        model = RobertaForSequenceClassification(cfg).eval()
        if centred_on is not None:
            with torch.no_grad():
                logits = model(**tok(centred_on, padding=True, return_tensors="pt")).logits
                model.classifier.out_proj.bias -= logits.mean(dim=0)
        models.append(model)
    return models


# --------------------------------------------------------------------------- attack inputs

WITH_COUNT = [
    "int sum_items(int *items, int count) {\n  int total = 0;\n  for (int i = 0; i < count; i++) {\n"
    "    total += items[i];\n  }\n  return total;\n}\n",
    "int max_value(const int *data, int count) {\n  int best = data[0];\n  int k;\n"
    "  for (k = 1; k < count; k++) {\n    if (data[k] > best) best = data[k];\n  }\n  return best;\n}\n",
    "void clear_buffer(char *buffer, int count) {\n  int pos = 0;\n  while (pos < count) {\n"
    "    buffer[pos] = 0;\n    pos++;\n  }\n}\n",
    "int count_zeros(const int *values, int length) {\n  int count = 0;\n  int j;\n"
    "  for (j = 0; j < length; j++) {\n    if (values[j] == 0) count += 1;\n  }\n  return count;\n}\n",
    "static int scale_all(int *arr, int count, int factor) {\n  int idx;\n"
    "  for (idx = 0; idx < count; ++idx) {\n    arr[idx] *= factor; /* in place */\n  }\n  return count;\n}\n",
    "int first_negative(int *nums, int count) {\n  int index = 0;\n  while (index < count) {\n"
    "    if (nums[index] < 0) {\n      return index;\n    }\n    index += 1;\n  }\n  return -1;\n}\n",
]
WITHOUT = [
    "int mean(int *samples, int n) {\n  int acc = 0;\n  int m = 0;\n  while (m < n) {\n"
    "    acc = acc + samples[m];\n    m = m + 1;\n  }\n  return acc / n;\n}\n",
    "int find(int *table, int size, int key) {\n  int lo = 0, hi = size - 1;\n  while (lo <= hi) {\n"
    "    int mid = (lo + hi) / 2;\n    if (table[mid] == key) return mid;\n    if (table[mid] < key) lo = mid + 1;\n"
    "    else hi = mid - 1;\n  }\n  return -1;\n}\n",
    "void copy_bytes(char *dst, const char *src, int len) {\n  int offset = 0;\n  while (offset < len) {\n"
    "    dst[offset] = src[offset];\n    offset = offset + 1;\n  }\n}\n",
    "int parity(unsigned int word) {\n  int bits = 0;\n  while (word) {\n    bits = bits ^ (word & 1);\n"
    "    word = word >> 1;\n  }\n  return bits;\n}\n",
]
CODES = WITH_COUNT + WITHOUT
LABELS = np.array([1] * len(WITH_COUNT) + [0] * len(WITHOUT))


def name_sensitive(df: pd.DataFrame) -> np.ndarray:
    """p(class 1) is high exactly when a variable named ``count`` appears."""
    p = np.array([0.85 if re.search(r"\bcount\b", c) else 0.15 for c in df[df.columns[0]]])
    return np.stack([1 - p, p], axis=1)


def leaves(code: str) -> list[tuple[str, str]]:
    """(type, text) of every tree-sitter leaf; asserts a clean parse."""
    import tree_sitter as ts
    import tree_sitter_c

    tree = ts.Parser(ts.Language(tree_sitter_c.language())).parse(code.encode())
    assert not tree.root_node.has_error, f"adversarial code does not parse:\n{code}"
    out, stack = [], [tree.root_node]
    while stack:
        node = stack.pop()
        if node.child_count == 0:
            out.append((node.type, node.text.decode()))
        stack.extend(reversed(node.children))
    return out


def assert_consistent_renaming(original: str, adversarial: str, renaming: dict[str, str]) -> None:
    a, b = leaves(original), leaves(adversarial)
    assert len(a) == len(b), "renaming changed the number of tokens"
    seen: dict[str, str] = {}
    for (ta, xa), (tb, xb) in zip(a, b, strict=True):
        assert ta == tb, f"token kinds differ: {ta} vs {tb}"
        if xa != xb:
            assert "identifier" in ta, f"non-identifier token changed: {xa!r} -> {xb!r}"
        if "identifier" in ta:
            assert seen.setdefault(xa, xb) == xb, f"{xa} renamed inconsistently"
    changed = {k: v for k, v in seen.items() if k != v}
    assert changed == renaming
    assert len(set(seen.values())) == len(seen), "two identifiers merged into one name"


# from evaluation/test_validation.py
VALIDATION_CALLS = {"n": 0}


def counting_teacher(frame):
    VALIDATION_CALLS["n"] += 1
    return np.tile([0.7, 0.3], (len(frame), 1))


def counting_student(frame):
    VALIDATION_CALLS["n"] += 1
    return np.tile([0.6, 0.4], (len(frame), 1))


def run_and_expect(df, config, match, model=counting_student, targets="target"):
    VALIDATION_CALLS["n"] = 0
    with mlflow.start_run() as run:
        with pytest.raises(Exception, match=match):
            mlflow.models.evaluate(
                model=model,
                data=df,
                targets=targets,
                model_type="metacompress",
                evaluators="metacompress",
                evaluator_config={"transforms": [], **config},
            )
    data = mlflow.get_run(run.info.run_id).data
    assert data.metrics == {}, "nothing may be logged when validation fails"
    assert not mlflow.MlflowClient().list_artifacts(run.info.run_id, "metacompress")
    return VALIDATION_CALLS["n"]


# from evaluation/test_evaluation_engine.py
def hash_probs(codes: list[str], salt: int) -> np.ndarray:
    """Deterministic per-code probabilities (3 classes): any rewrite may change them."""
    rows = [
        random_probs(np.random.default_rng(zlib.crc32(f"{salt}:{c}".encode())), 1, 3, sharpness=2.0)[0] for c in codes
    ]
    return np.stack(rows)


def teacher_fn(frame: pd.DataFrame) -> np.ndarray:
    return hash_probs(frame["func"].tolist(), 0)


def student_fn(frame: pd.DataFrame) -> np.ndarray:
    return 0.7 * hash_probs(frame["func"].tolist(), 0) + 0.3 * hash_probs(frame["func"].tolist(), 1)


def hash_predictors():
    return (
        Predictor("teacher", teacher_fn, cache_dir=None, progress=False),
        Predictor("student", student_fn, cache_dir=None, progress=False),
    )


def labelled(n: int = 30, seed: int = 5) -> pd.DataFrame:
    df = toy_frame(n, seed=seed)
    df["target"] = np.random.default_rng(seed).integers(0, 3, n)
    return df


def evaluate_engine(df: pd.DataFrame, raw: dict, y: np.ndarray | None = None) -> tuple[EvaluationOutcome, object]:
    cfg = parse_config({"teacher": teacher_fn, "progress": False, **raw}, df, model_given=True)
    teacher, student = hash_predictors()
    return run_evaluation(df, y, cfg, teacher, student), cfg


# from transforms/test_transforms_core.py
SNIPPETS = {
    "c": [
        "int f(int n) {\n    int s = 0, i;\n    for (i = 0; i < n; i++) { s += i * 2; }\n"
        "    while (s > 100) s -= 7;\n    if (s > 3) return s; else return -s;\n}\n",
        "static int g(struct node *node, char *p) {\n    if (node->x < 4 && p != NULL) { node->x++; }\n"
        "    return node->x;\n}\n",
    ],
    "java": [
        "int f(int n) {\n    int s = 0;\n    for (int i = 0; i < n; i++) { s += i * 2; }\n"
        "    while (s > 100) s -= 7;\n    if (s > 3) return s; else return -s;\n}\n"
    ],
    "python": [
        'def f(n):\n    """Doc."""\n    s = 0\n    for i in range(n):\n        s += i * 2\n'
        "    while s > 100:\n        s -= 7\n    if s > 3:\n        return s\n    else:\n        return -s\n"
    ],
}


# from evaluation/test_evaluator_attacks.py
def crc_score(code: str, salt: int) -> float:
    return (zlib.crc32(f"{salt}:{code}".encode()) % 1000) / 1000


def identifier_student(frame):  # sensitive to every identifier spelling
    p1 = np.array([0.05 + 0.9 * crc_score(c, 1) for c in frame["func"]])
    return np.stack([1 - p1, p1], axis=1)


def length_bucket_teacher(frame):  # depends on the code only through its length bucket: fewer flips
    p1 = np.array([0.1 + 0.8 * ((len(c) // 40) % 2) for c in frame["func"]])
    return np.stack([1 - p1, p1], axis=1)


# from report/test_report.py
CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)


def chromium(*args: str, timeout: int = 90) -> subprocess.CompletedProcess:
    flags = ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars", "--mute-audio"]
    return subprocess.run([CHROMIUM, *flags, *args], capture_output=True, text=True, timeout=timeout)


# from report/test_report_slices_compare.py
CWES = ["CWE-119", "CWE-20", "CWE-399", "CWE-476"]


def shared_frame(n: int = 160, seed: int = 0, students: int = 2) -> pd.DataFrame:
    """Code, a CWE column, the teacher's probabilities (t0, t1), students' (s0, s1, u0, u1, …) and the label."""
    rng = np.random.default_rng(seed)
    t = random_probs(rng, n, 2, 2.0)
    df = pd.DataFrame(
        {
            "func": [TOY_CODE[i % len(TOY_CODE)] for i in range(n)],
            "cwe": [CWES[i % 3 if i % 7 else 3] for i in range(n)],
            "t0": t[:, 0],
            "t1": t[:, 1],
        }
    )
    for k, prefix in zip(range(students), "suvw", strict=False):  # up to four students
        s = np.clip(t + np.random.default_rng(seed + 10 + k).normal(0, 0.15 + 0.1 * k, t.shape), 0.01, None)
        s /= s.sum(axis=1, keepdims=True)
        df[f"{prefix}0"], df[f"{prefix}1"] = s[:, 0], s[:, 1]
    df["target"] = (rng.random(n) < t[:, 1]).astype(int)
    return df


def static_run(df: pd.DataFrame, prefix: str, name: str, uri: str | None = None, **config) -> str:
    """A static-mode evaluation of the student whose probabilities are ``<prefix>0``, ``<prefix>1``,
    tagged as the gate tags it with the student's URI (``models:/<name>/1`` unless given)."""
    with mlflow.start_run(run_name=name) as run:
        mlflow.set_tag("metacompress.gate_model", uri or f"models:/{name}/1")
        mlflow.models.evaluate(
            data=df,
            targets="target",
            model_type="metacompress",
            evaluators="metacompress",
            evaluator_config={
                "teacher_prob_columns": ["t0", "t1"],
                "student_prob_columns": [f"{prefix}0", f"{prefix}1"],
                **config,
            },
        )
    return run.info.run_id


# from distill/test_distill_registry.py
def add_method_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, source: str) -> None:
    """Make ``source`` the module ``distill.methods.<module>``, as if saved in the
    package folder: a temporary folder joins the package's search path for this test."""
    folder = tmp_path / f"methods-{module}"
    folder.mkdir()
    (folder / f"{module}.py").write_text(source)
    monkeypatch.setattr(methods_pkg, "__path__", [*methods_pkg.__path__, str(folder)])
    importlib.invalidate_caches()
    full = f"{methods_pkg.__name__}.{module}"
    monkeypatch.setitem(sys.modules, full, None)  # records "absent": the import is removed after the test
    del sys.modules[full]


# from pipeline/test_mlproject.py
def copy_project(dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("MLproject", "conda.yaml"):
        shutil.copy(REPO / name, dest / name)
    shutil.copytree(REPO / "recipes", dest / "recipes", ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def project_env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # `python` = this venv
    env.update(METACOMPRESS_CACHE_DIR=str(tmp / "cache"), HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    return env


# from distill/test_distill_avatar.py
def tiny_teacher(tmp_path: Path) -> tuple[Path, str]:
    """A toy Devign folder and a registered 1-layer teacher (seconds)."""
    from mlflow_metacompress.distill.teacher import train_teacher

    data = write_devign(tmp_path / "data")
    arch = ArchSpec(
        vocab_size=300, num_hidden_layers=1, hidden_size=32, num_attention_heads=2, intermediate_size=64, max_length=64
    )
    result = train_teacher(
        data, "devign", arch=arch, epochs=1, batch_size=8, registered_name="toy-teacher", progress=False
    )
    return data, result.model_uri


SEARCH_ARGS = [
    "--population",
    "6",
    "--generations",
    "2",
    "--option",
    "probes=2",
    "--option",
    "probe_steps=2",
    "--option",
    "probe_rows=16",
    "--option",
    "probe_valid=8",
]


# from distill/test_distill_search_seeded.py
def toy_context(seed: int, target: float = 3.0):
    from mlflow_metacompress.distill.context import DistillContext
    from mlflow_metacompress.distill.datasets import CodeExamples
    from mlflow_metacompress.distill.training import FitConfig

    texts = TOY_CODE * 4
    return DistillContext(
        task="devign",
        code_columns=("func",),
        unlabeled=CodeExamples(texts, teacher_logits=np.zeros((len(texts), 2), np.float32)),
        valid=CodeExamples(texts, labels=np.zeros(len(texts), int)),
        labels=["0", "1"],
        pair_mode=None,
        size_mb=target,
        max_length=64,
        fit_config=FitConfig(progress=False, batch_size=8),
        seed=seed,
    )


# from distill/test_distill_search.py
TINY = AvatarSpace(
    vocab_size=(500, 3500),
    num_hidden_layers=(1, 2),
    hidden_size=(8, 56),
    num_attention_heads=(1, 4),
    intermediate_size=(16, 100),
    tokenizer=("bpe",),
    hidden_act=("gelu", "relu"),
    dropout=(0.1,),
    max_length=(32, 64),
    position_embedding_type=("absolute", "rotary"),
)
TARGET, LOWER = 0.3, 0.5


def brute_force(space: AvatarSpace, target: float, lower: float, pair_mode=None) -> set[ArchSpec]:
    """Every configuration of ``space`` meeting the constraints, checked by plain loops
    over every integer of each interval (no multiples assumed)."""
    out = set()
    hidden = [h for h in range(space.hidden_size[0], space.hidden_size[1] + 1) if h % 16 == 0]
    vocab = [v for v in range(space.vocab_size[0], space.vocab_size[1] + 1) if v % 1000 == 0]
    inter = [i for i in range(space.intermediate_size[0], space.intermediate_size[1] + 1) if i % 32 == 0]
    for v, L, h, a, i, act, ml, pos in itertools.product(
        vocab,
        range(space.num_hidden_layers[0], space.num_hidden_layers[1] + 1),
        hidden,
        range(space.num_attention_heads[0], space.num_attention_heads[1] + 1),
        inter,
        space.hidden_act,
        space.max_length,
        space.position_embedding_type,
    ):
        if h % a or (pos == "rotary" and act != "gelu"):
            continue
        c = ArchSpec(
            vocab_size=v,
            num_hidden_layers=L,
            hidden_size=h,
            num_attention_heads=a,
            intermediate_size=i,
            tokenizer="bpe",
            hidden_act=act,
            dropout=0.1,
            max_length=ml,
            position_embedding_type=pos,
            pair_mode=pair_mode,
        )
        if lower * target <= size_mb(c, 2, pair_mode) <= target:
            out.add(c)
    return out


# from distill/test_distill_search_objective.py
FAKE = LatencyModel((0.05, 0.01, 2.0, 1.0, 0.0, 0.5, 0.0), "cpu:test", "0", 1, 64, 8)


# from distill/test_distill_quantize.py
HIDDEN, LAYERS, INTERMEDIATE, MAX_LENGTH, STEPS = 64, 2, 128, 64, 100


def malloc_teacher(frames: dict[str, pd.DataFrame]) -> tuple[CodeClassifier, object]:
    """A small classifier trained (plain AdamW, a few seconds) to tell whether a function
    calls ``malloc``: a learnable task, so the teacher is confident and its predictions
    depend on the input, which faithfulness needs of an oracle (an untrained model is
    flat at 0.5, where any noise flips the argmax)."""
    tok = train_tokenizer(list(frames["train"]["func"]), vocab_size=1000)
    torch.manual_seed(0)
    model = CodeClassifier.from_config(
        len(tok),
        hidden_size=HIDDEN,
        num_hidden_layers=LAYERS,
        num_attention_heads=2,
        intermediate_size=INTERMEDIATE,
        max_length=MAX_LENGTH,
        pad_token_id=tok.pad_token_id,
    )
    texts = list(frames["train"]["func"])
    labels = torch.tensor([int("malloc" in t) for t in texts])
    optimiser = torch.optim.AdamW(model.parameters(), lr=2e-3)
    rng = np.random.default_rng(0)
    model.train()
    for _ in range(STEPS):
        idx = rng.choice(len(texts), 16, replace=False)
        logits, _ = model(**model.encode(tok, [texts[i] for i in idx]))
        loss = nn.functional.cross_entropy(logits, labels[idx])
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    return model.eval(), tok


def register_toy_teacher(model: CodeClassifier, tok: object) -> str:
    from mlflow_metacompress.models.pyfunc import log_code_classifier

    with mlflow.start_run(run_name="toy-teacher"):
        log_code_classifier(model, tok, registered_model_name="toy-teacher", code_columns=["func"])
    return "models:/toy-teacher/1"


def held_out_rows() -> pd.DataFrame:
    """Generated rows of another seed: nothing in the test saw them."""
    return make_splits("vulnerability", 300, seed=9)["train"][["func"]].reset_index(drop=True)


# from distill/test_distill_e2e.py
def write_devign(root: Path) -> Path:
    folder = root / "devign"
    folder.mkdir(parents=True)
    for split, n, seed in (("train", 40, 0), ("valid", 16, 1), ("test", 16, 2)):
        df = toy_frame(n, seed).assign(idx=range(n), project="toy")
        df.to_json(folder / f"{split}.jsonl", orient="records", lines=True)
    return root


# from distill/test_cache_distill.py
LENGTH_CODES = [f"int f{i}(int a) {{ return a * {i}; }}" + " " * i for i in range(10)]


class LengthModel(mlflow.pyfunc.PythonModel):
    """Class-1 probability from the code length: an oracle the test can recompute."""

    def predict(self, context, model_input: pd.DataFrame) -> pd.DataFrame:
        p = length_expected_probs(model_input)
        return pd.DataFrame({"0": p[:, 0], "1": p[:, 1]})


def length_expected_probs(df: pd.DataFrame) -> np.ndarray:
    p = (df.iloc[:, 0].str.len().to_numpy() % 5 + 1) / 7.0
    return np.column_stack([1 - p, p])


# from distill/test_distill_morph.py
C_CODE = "int add_one(int value) {\n  int result = value + 1;\n  return result;\n}\n"


# from transforms/test_transforms_equivalence.py
JAVA_RUNNER = """
import java.io.*;
public class Runner {
    public static void main(String[] args) throws Exception {
        PrintStream real = System.out;
        for (String cls : args) {
            ByteArrayOutputStream buf = new ByteArrayOutputStream();
            System.setOut(new PrintStream(buf, true));
            Class.forName(cls).getMethod("main", String[].class).invoke(null, (Object) new String[0]);
            System.out.flush();
            System.setOut(real);
            real.print("=====" + cls + "\\n" + buf.toString());
        }
    }
}
"""


# from evaluation/test_evaluator.py
def evaluate_logged(model, data, config, targets="target"):
    with mlflow.start_run() as run:
        result = mlflow.models.evaluate(
            model=model,
            data=data,
            targets=targets,
            model_type="metacompress",
            evaluators="metacompress",
            evaluator_config=config,
        )
    return run.info.run_id, result


def sklearn_pair(df):
    from sklearn.compose import ColumnTransformer
    from sklearn.feature_extraction.text import HashingVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    def fit(C):
        return make_pipeline(
            ColumnTransformer([("v", HashingVectorizer(n_features=512), "func")]), LogisticRegression(C=C)
        ).fit(df[["func"]], df["target"])

    return fit(10.0), fit(0.05)


# from adapters/test_hf_pipeline.py
HF_LABELS = ["SAFE", "VULN"]
HF_REQS = ["transformers", "torch"]  # explicit: MLflow's inferred requirements add torchvision, absent here
HF_TOL = dict(rel=1e-5, abs=1e-6)  # the pipeline batches with padding; float32 noise only


def evaluate_hf(student, teacher, df: pd.DataFrame, **config):
    with mlflow.start_run():
        return mlflow.models.evaluate(
            model=student,
            data=df,
            targets="target",
            model_type="metacompress",
            evaluators="metacompress",
            evaluator_config={
                "teacher": teacher,
                "code_columns": ["func"],
                "transforms": [],
                "progress": False,
                **config,
            },
        ).metrics


def assert_same_metrics(got: dict[str, float], expected: dict[str, float]) -> None:
    assert set(got) == set(expected)
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, **HF_TOL), key


# from distill/test_distill_batches.py
def code_examples(n: int = 30, pairs: bool = False) -> CodeExamples:
    rng = np.random.default_rng(0)
    texts = [TOY_CODE[i % len(TOY_CODE)] * (1 + i % 4) for i in range(n)]  # 1-4 copies: lengths vary
    b = [TOY_CODE[(i + 2) % len(TOY_CODE)] for i in range(n)] if pairs else None
    return CodeExamples(texts, b, rng.integers(0, 2, n), rng.normal(size=(n, 2)).astype(np.float32))


# Registry helpers shared by the gate tests: a sqlite store, registered versions, evaluation
_names = itertools.count()


class Store(dict):
    """A sqlite tracking + registry store: ``root`` (its folder), ``uri``, ``client``, ``exp``
    (an experiment whose artifacts stay under ``root``) and ``source`` (an empty model folder's
    URI: the registry only records it), as keys and as attributes."""

    def __getattr__(self, key: str) -> Any:
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None


def open_store(root: Path, template: Path | None = None, experiment: str = "store") -> Store:
    """A fresh store in ``root``: a copy of the migrated ``template`` database when given (a
    migration takes seconds), with one experiment and an empty model folder."""
    root.mkdir(parents=True, exist_ok=True)
    if template is not None:
        shutil.copy(template, root / "mlflow.db")
    uri = f"sqlite:///{root}/mlflow.db"
    client = MlflowClient(uri, uri)
    exp = client.create_experiment(experiment, artifact_location=str(root / "artifacts"))
    (root / "model").mkdir()
    return Store(root=root, uri=uri, client=client, exp=exp, source=(root / "model").as_uri())


def sqlite_store(root: Path, experiment: str) -> dict:
    """A fresh sqlite tracking + registry store under ``root`` with one experiment; the model
    source is an empty folder (the registry only records it; promotion never loads it)."""
    uri = f"sqlite:///{root}/mlflow.db"
    client = MlflowClient(uri, uri)
    exp = client.create_experiment(experiment, artifact_location=str(root / "artifacts"))
    (root / "model").mkdir()
    return {"uri": uri, "client": client, "exp": exp, "source": (root / "model").as_uri()}


def register_versions(
    client: MlflowClient, source: str, prefix: str, versions: int = 2, run_id: str | None = None
) -> str:
    """A new registered model ``<prefix>-<n>`` with ``versions`` versions of ``source``; its name."""
    name = f"{prefix}-{next(_names)}"
    client.create_registered_model(name)
    for _ in range(versions):
        client.create_model_version(name, source, run_id=run_id)
    return name


def evaluation_run(
    client: MlflowClient, experiment_id: str, metrics: dict, end_time: int, summary: bool = True, finish: bool = True
) -> str:
    """An evaluation run with ``metrics`` (and, like the evaluator, ``metacompress/summary.json``)
    that ended at ``end_time`` (ms); ``summary``/``finish`` False leave it half-written."""
    run = client.create_run(experiment_id, start_time=end_time - 10)
    for key, value in metrics.items():
        client.log_metric(run.info.run_id, key, value)
    if summary:
        client.log_text(run.info.run_id, json.dumps({"metrics": metrics}), "metacompress/summary.json")
    if finish:
        client.set_terminated(run.info.run_id, end_time=end_time)
    return run.info.run_id


def alias_version(client: MlflowClient, name: str, alias: str = "champion") -> str | None:
    """The version ``alias`` points to, or None."""
    try:
        return str(client.get_model_version_by_alias(name, alias).version)
    except mlflow.exceptions.MlflowException:
        return None


def version_tags(client: MlflowClient, name: str, version: int | str) -> dict:
    return client.get_model_version(name, str(version)).tags


# Independent readers of a report page for the tests: every external reference a browser
URL_ATTRS = {
    "src",
    "href",
    "srcset",
    "action",
    "formaction",
    "poster",
    "data",
    "xlink:href",
    "background",
    "manifest",
    "ping",
    "cite",
    "longdesc",
    "codebase",
    "archive",
    "icon",
    "lowsrc",
    "dynsrc",
}
CSS_URL = re.compile(r"url\(\s*(['\"]?)([^)'\"]*)\1\s*\)|@import\s+(['\"])([^'\"]+)\3", re.I)


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.refs: list[str] = []
        self.scripts: list[str] = []
        self.csp: str | None = None
        self.numbers: dict[str, tuple[str | None, str]] = {}
        self.ids: list[str] = []
        self._stack: list[tuple[str, dict]] = []
        self._text: list[list[str]] = []
        self._in: str | None = None
        self._buf: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = {k.lower(): (v or "") for k, v in attrs}
        for key, value in a.items():
            if key in URL_ATTRS:
                self.refs.extend(
                    part.strip().split(" ")[0] for part in value.split(",")
                ) if key == "srcset" else self.refs.append(value.strip())
            if key == "style":
                self.refs.extend(m.group(2) or m.group(4) for m in CSS_URL.finditer(value))
        if tag == "meta" and a.get("http-equiv", "").lower() == "content-security-policy":
            self.csp = a.get("content")
        if tag == "section" and a.get("id"):
            self.ids.append(a["id"])
        if tag in ("script", "style"):
            self._in, self._buf = tag, []
        if "data-metric" in a:
            self._stack.append((tag, a))
            self._text.append([])

    def handle_endtag(self, tag):
        if tag == self._in:
            body = "".join(self._buf)
            if tag == "script":
                self.scripts.append(body)
            else:
                self.refs.extend(m.group(2) or m.group(4) for m in CSS_URL.finditer(body))
            self._in = None
        if self._stack and self._stack[-1][0] == tag:
            _, a = self._stack.pop()
            text = "".join(self._text.pop()).strip()
            self.numbers.setdefault(a["data-metric"], (a.get("data-value"), text))

    def handle_data(self, data):
        if self._in:
            self._buf.append(data)
        for t in self._text:
            t.append(data)


def read_page(html: str) -> _Page:
    page = _Page()
    page.feed(html)
    page.close()
    return page


def external_refs(html: str) -> list[str]:
    """Every reference that is neither a fragment (``#…``) nor a ``data:`` URI."""
    return [r for r in read_page(html).refs if not (r.startswith("#") or r.lower().startswith("data:"))]


def script_hashes(page: _Page) -> list[str]:
    return ["'sha256-" + base64.b64encode(hashlib.sha256(s.encode()).digest()).decode() + "'" for s in page.scripts]


def run_java_classes(tmp_path: Path, sources: list[str], classes: list[str]) -> dict[str, str]:
    """Compile ``sources`` with the ``Runner`` (:data:`JAVA_RUNNER`) and run every class in
    ``classes``: ``{class: its printed output}`` (every class must print)."""
    (tmp_path / "Runner.java").write_text(JAVA_RUNNER)
    comp = subprocess.run(
        ["javac", "-nowarn", "-d", str(tmp_path / "out"), str(tmp_path / "Runner.java"), *sources],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert comp.returncode == 0, comp.stderr[-4000:]
    res = subprocess.run(
        ["java", "-cp", str(tmp_path / "out"), "Runner", *classes],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    outputs = {}
    for chunk in res.stdout.split("=====")[1:]:
        cls, _, body = chunk.partition("\n")
        outputs[cls] = body
    assert set(outputs) == set(classes)
    return outputs


# from study/test_reproduce.py
def bigclonebench_folder(root, rows: int = 160):
    """Generated clone pairs written in the shared folder's layout (data_full.jsonl,
    train_full.txt, unlabeled_codebert.txt, valid.txt, test.txt)."""
    from mlflow_metacompress.data.generators.splits import make_splits

    frames = make_splits("clone", rows, 0)
    ids: dict[str, int] = {}
    folder = root / "bigclonebench"
    folder.mkdir(parents=True)

    def pairs(df, name):
        lines = []
        for a, b, y in zip(df["func1"], df["func2"], df["label"], strict=True):
            i, j = (ids.setdefault(t, len(ids)) for t in (a, b))
            lines.append(f"{i}\t{j}\t{int(y)}")
        (folder / name).write_text("\n".join(lines) + "\n")

    pairs(frames["train"], "train_full.txt")
    pairs(frames["train"].iloc[::-1], "unlabeled_codebert.txt")  # "CodeBERT's" labels: the true ones
    pairs(frames["valid"], "valid.txt")
    pairs(frames["test"], "test.txt")
    with (folder / "data_full.jsonl").open("w") as fh:
        for text, i in ids.items():
            fh.write(json.dumps({"func": text, "idx": str(i)}) + "\n")
    return root


def tiny_study_config(data_dir):
    from mlflow_metacompress.study.config import StudyConfig, TeacherBudget

    return StudyConfig(
        task="clone",
        data_dir=str(data_dir),
        seeds=(0,),
        methods=("compressor",),
        eval_rows=8,
        attacks=("wir_random_zeng_2022",),
        transforms=["rename_variables"],
        threads=1,
        teacher=TeacherBudget(
            vocab_size=1000,
            layers=1,
            hidden=32,
            heads=2,
            intermediate=64,
            max_length=64,
            batch_size=16,
            max_steps=4,
            epochs=1,
        ),
        size_mb=0.15,
        student_max_length=64,
        student_batch_size=16,
        student_steps=4,
        method_options={"compressor": {"population": 4, "generations": 2}},
        attack_budget=6,
        bootstrap=50,
        oracle_rows=8,
        distill_rows=40,
        attack_rows=12,
    )


def switch_to_empty_store(path: Path, template: Path) -> None:
    """Point MLflow at a copy of the migrated empty store ``template`` at ``path`` (another
    machine's store), dropping the cached store objects of the previous one."""
    from tests.conftest import fresh_mlflow_stores

    shutil.copy(template, path)
    fresh_mlflow_stores()
    mlflow.set_tracking_uri(f"sqlite:///{path}")
    mlflow.set_registry_uri(f"sqlite:///{path}")
