"""The same seed gives the same students (issue 31, item 5): the latency searches bound a
deterministic FLOP cost (never the clock), tokenizers are trained once per corpus, and
two runs of the tiny pipeline register identical students with identical metrics and
verdicts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mlflow_metacompress.distill.arch import ArchSpec
from mlflow_metacompress.distill.cost import ELEMENTWISE_WEIGHT, LAYER_OVERHEAD, FlopCost, check_cost, terms
from mlflow_metacompress.distill.devices import TrainerSettings

SHAPES = [
    ArchSpec(vocab_size=1000, num_hidden_layers=2, hidden_size=64, num_attention_heads=4, intermediate_size=256),
    ArchSpec(3000, num_hidden_layers=3, hidden_size=96, num_attention_heads=2, intermediate_size=384, max_length=64),
    ArchSpec(vocab_size=2000, num_hidden_layers=1, hidden_size=16, num_attention_heads=8, intermediate_size=1024),
]


@pytest.mark.parametrize("spec", SHAPES, ids=str)
def test_matrix_product_flops_are_torch_flop_counters(spec):
    """The GEMM term is what ``torch.utils.flop_counter`` counts on the built model
    (ArchSpec.gflops), less the classifier's output layer (2·h·K, K = 2)."""
    gemm, other, layers = terms(spec)
    assert gemm == spec.gflops() * 1e9 - 2 * spec.hidden_size * 2
    assert layers == spec.num_hidden_layers and other > 0


def test_flop_cost_formula_and_its_memory_bound_penalty():
    spec = SHAPES[0]
    s, h, f, A, L = 256, 64, 256, 4, 2
    gemm = L * (8 * s * h * h + 4 * s * h * f + 4 * s * s * h) + 2 * h * h
    other = L * (5 * A * s * s + 9 * s * f + 23 * s * h) + 10 * s * h
    expected = (gemm + ELEMENTWISE_WEIGHT * other + LAYER_OVERHEAD * L / 16) / 1e6
    assert FlopCost(16).cost(spec) == pytest.approx(expected, abs=1e-6)
    # head dimension 2 (32 heads) costs more than twice 4 heads of 16 at the same GEMM FLOPs
    narrow = ArchSpec(1000, num_hidden_layers=2, hidden_size=64, num_attention_heads=32, intermediate_size=256)
    assert terms(narrow)[0] == terms(spec)[0] and FlopCost(16).cost(narrow) > 2 * FlopCost(16).cost(spec)
    # the per-layer overhead is shared by a batch
    assert FlopCost(1).cost(spec) - FlopCost(16).cost(spec) == pytest.approx(LAYER_OVERHEAD * L * (1 - 1 / 16) / 1e6)
    with pytest.raises(ValueError, match="batch_size"):
        FlopCost(0)
    with pytest.raises(ValueError, match="cost must be one of"):
        check_cost("wallclock")


def test_flop_search_never_reads_the_clock_and_repeats_itself(monkeypatch):
    """Compressor's latency search with the default cost: no latency calibration or
    timing, and the same architecture for a seed whatever the clock would say."""
    from mlflow_metacompress.distill import latency
    from mlflow_metacompress.distill.methods import compressor
    from mlflow_metacompress.distill.search.compressor_search import SearchSpace, search_architecture
    from tests.support.distill import toy_context

    def clock(*a, **k):
        raise AssertionError("the search read the clock")

    monkeypatch.setattr(latency, "time_shape", clock)
    monkeypatch.setattr(latency, "latency_model", clock)
    options = compressor.Options(population=6, generations=3, latency_slack=1.5)
    assert options.cost == "flops"
    results = []
    for _ in range(2):
        setup = compressor._latency_setup(toy_context(0, 1.0), options, 1000)
        assert isinstance(setup["latency"], FlopCost) and math.isfinite(setup["latency_budget_ms"])
        results.append(
            search_architecture(
                1.0,
                population=6,
                generations=3,
                seed=0,
                base=ArchSpec(max_length=64),
                space=SearchSpace().cap_vocab(1000),
                progress=False,
                objective="latency",
                **setup,
            )
        )
    a, b = results
    assert a.best == b.best and a.history == b.history and a.cost == b.cost
    assert a.cost_model == "flops" and a.cost_unit == "MFLOP" and a.latency_ms is None
    assert a.cost == FlopCost(8).cost(a.best) <= a.cost_budget


def test_wordpiece_and_unigram_tokenizers_are_trained_once_per_corpus(tmp_path):
    """The tokenizers library's WordPiece/Unigram trainers are not deterministic
    (huggingface/tokenizers#1794); the cached tokenizer makes a corpus give one vocabulary."""
    from mlflow_metacompress.models.tokenizer import train_tokenizer
    from tests.conftest import TOY_CODE

    texts = [f"{code}\nint v{i} = {i} * w{i % 7} + x{i % 3};" for i, code in enumerate(TOY_CODE * 20)]
    for kind in ("bpe", "wordpiece", "unigram"):
        toks = [train_tokenizer(texts, vocab_size=400, kind=kind, cache_dir=tmp_path) for _ in range(3)]
        assert all(t.get_vocab() == toks[0].get_vocab() for t in toks)
        ids = [t(texts[:10])["input_ids"] for t in toks]
        assert ids[1] == ids[0] == ids[2]
    assert len(list((tmp_path / "tokenizers").glob("*.json"))) == 3
    (next((tmp_path / "tokenizers").glob("bpe-*.json"))).write_text("{damaged")
    fresh = train_tokenizer(texts, vocab_size=400, kind="bpe", cache_dir=tmp_path)  # retrained, not fatal
    assert fresh.get_vocab() == train_tokenizer(texts, vocab_size=400, kind="bpe", use_cache=False).get_vocab()


def _registered(result):
    """Per method: parameters, verdict and every gate metric that is not a clock reading."""
    import mlflow

    client = mlflow.MlflowClient()
    out = {}
    for o in result.outcomes:
        mv = client.get_model_version(o.model_name, o.version)
        metrics = client.get_run(o.evaluation_run_id).data.metrics
        kept = {k: v for k, v in metrics.items() if not any(t in k for t in ("latency", "speedup", "second", "energy"))}
        out[o.method] = (int(mv.tags["metacompress.params"]), o.verdict, mv.tags.get("metacompress.verdict"), kept)
    return out


@pytest.mark.slow
def test_two_tiny_pipelines_with_one_seed_register_the_same_students(tracking, tmp_path, monkeypatch):
    """Done-when of issue 31 item 5, at a size where the latency searches have a budget
    (a teacher-shaped student fits 0.3 MB). The clock is never read by a search."""
    import shutil

    import mlflow

    from mlflow_metacompress.distill import latency
    from mlflow_metacompress.pipeline import PipelineConfig, run_pipeline

    monkeypatch.setattr(latency, "latency_model", lambda *a, **k: pytest.fail("a search read the clock"))
    runs = []
    for i in range(2):
        db = shutil.copy(tmp_path / "mlflow.db", tmp_path / f"run{i}.db")  # the fixture's migrated, empty store
        uri = f"sqlite:///{db}"
        mlflow.set_tracking_uri(uri)
        mlflow.set_registry_uri(uri)
        config = PipelineConfig(
            profile="tiny", methods="compressor,avatar,morph", size_mb=0.3, seed=0, settings=TrainerSettings(threads=1)
        )
        config.progress = False
        result = run_pipeline(config)
        assert result.errors == {}
        runs.append(_registered(result))
    first, second = runs
    assert set(first) == {"compressor", "avatar", "morph"} == set(second)
    for method in first:
        params, verdict, tag, metrics = first[method]
        assert (params, verdict, tag) == second[method][:3], method
        assert any(k.startswith("mr1") for k in metrics) and metrics.keys() == second[method][3].keys()
        worst = max(abs(v - second[method][3][k]) for k, v in metrics.items() if not np.isnan(v))
        assert worst <= 1e-6, (method, worst)
