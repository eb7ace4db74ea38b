"""MORPH on a budget that finds nothing in the size band: the teacher-shaped student is
chosen (not an error), recorded as a fallback, with its surrogate predictions."""

from __future__ import annotations

import numpy as np

from mlflow_metacompress.distill.context import DistillContext
from mlflow_metacompress.distill.datasets import CodeExamples
from mlflow_metacompress.distill.methods import morph
from mlflow_metacompress.distill.search import moo, probes
from mlflow_metacompress.distill.search.objective import FALLBACK_KEY, reference
from mlflow_metacompress.distill.training import FitConfig
from tests.conftest import TOY_CODE


def test_morph_search_falls_back_to_the_teacher_shaped_student(monkeypatch):
    texts = TOY_CODE * 4
    ctx = DistillContext(
        task="devign",
        code_columns=("func",),
        unlabeled=CodeExamples(texts, teacher_logits=np.zeros((len(texts), 2), np.float32)),
        valid=CodeExamples(texts, labels=np.zeros(len(texts), int)),
        labels=["0", "1"],
        pair_mode=None,
        size_mb=3.0,
        max_length=64,
        fit_config=FitConfig(progress=False),
    )
    evaluated = []

    def fake_probes(ctx, pruned, opts, loss_fn, **kw):
        configs = probes.sample_feasible(pruned, 3, seed=0)
        return [probes.ProbeResult(c, 0.5 + 0.1 * i, flip_rate=0.1 * i) for i, c in enumerate(configs)]

    def empty_search(pruned, objectives, n_obj, **kw):
        configs = probes.sample_feasible(pruned, 2, seed=1)
        evaluated.extend(configs)
        return moo.MooResult([], np.zeros((0, n_obj)), len(configs), [], np.zeros((0, n_obj)), configs)

    monkeypatch.setattr(probes, "run_probes", fake_probes)
    monkeypatch.setattr(moo, "moo_search", empty_search)
    choice, record = morph.morph_search(ctx, morph.Options(), [ctx.unlabeled], None, None, {})
    top = record["bounds"]["vocab_size"][1]
    assert record["fallback"] == "teacher_shaped" and evaluated
    assert choice == reference(3.0, max_length=64, max_vocab=top)
    assert 0 <= record["predicted_flip_rate"] and np.isfinite(record["predicted_val_acc"])
    assert FALLBACK_KEY == "search_fallback"
