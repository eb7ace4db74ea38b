"""The encoders' attention kernel (mlflow_metacompress/models/attention.py): SDPA in fp32,
matrix products for bf16 on a CPU, each checked against transformers' own kernel of that
kind as the oracle (``sdpa`` and ``eager``), with padded rows, in forward and backward."""

from __future__ import annotations

import pickle
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from mlflow_metacompress.models import attention  # noqa: E402
from mlflow_metacompress.models.classifier import CodeClassifier  # noqa: E402
from mlflow_metacompress.models.encoder import attention_implementation  # noqa: E402


def _model() -> CodeClassifier:
    torch.manual_seed(0)
    model = CodeClassifier.from_config(
        vocab_size=300, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64, max_length=40
    )
    return model.eval()


def _batch() -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(5, 300, (6, 40), generator=gen)
    mask = torch.ones_like(ids)
    mask[0, 10:] = 0  # padded rows of different lengths: the mask reaches the kernel
    mask[3, 25:] = 0
    return ids, mask


def _logits(model: CodeClassifier, kernel: str, bf16: bool) -> torch.Tensor:
    model.encoder.config._attn_implementation = kernel
    ids, mask = _batch()
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        return model(ids, mask)[0].float()


def test_built_and_loaded_encoders_use_the_kernel(tmp_path) -> None:
    model = _model()
    assert attention_implementation(model) == attention.KERNEL
    tok = _tokenizer()
    model.save(tmp_path / "m", tok)
    loaded, _ = CodeClassifier.load(tmp_path / "m")
    assert attention_implementation(loaded) == attention.KERNEL


def _tokenizer():
    from mlflow_metacompress.models.tokenizer import train_tokenizer

    return train_tokenizer(["int a = 1;", "return b + c;"] * 20, vocab_size=300, kind="bpe", model_max_length=40)


def test_fp32_is_sdpa_and_bf16_is_the_matrix_product_kernel(monkeypatch) -> None:
    model = _model()
    paths: list[bool] = []
    real = attention.matmul_path
    monkeypatch.setattr(attention, "matmul_path", lambda q: paths.append(real(q)) or paths[-1])
    ours32 = _logits(model, attention.KERNEL, bf16=False)
    assert paths == [False, False]  # two layers, SDPA
    ours16 = _logits(model, attention.KERNEL, bf16=True)
    assert paths[2:] == [True, True]
    torch.testing.assert_close(ours32, _logits(model, "sdpa", bf16=False), rtol=0, atol=0)
    torch.testing.assert_close(ours16, _logits(model, "eager", bf16=True), rtol=0, atol=0)
    # and bf16 stays near fp32 (the padded rows included)
    assert (ours16 - ours32).abs().max().item() < 0.05


def test_bf16_gradients_are_as_accurate_as_the_eager_kernels() -> None:
    """Against fp32 SDPA's gradients as the reference, the kernel's bf16 gradients are no
    further off than transformers' eager bf16 kernel's (which adds its float32 mask and so
    runs the masked softmax in float32; ours stays in bf16)."""
    ids, mask = _batch()
    grads = {}
    for kernel, bf16 in ((attention.KERNEL, True), ("eager", True), ("sdpa", False)):
        model = _model().train()
        torch.manual_seed(3)  # the same dropout draws
        model.encoder.config._attn_implementation = kernel
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = model(ids, mask)[0].float().logsumexp(-1).sum()
        loss.backward()
        grads[kernel] = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
    reference = grads["sdpa"]
    ours = (grads[attention.KERNEL] - reference).norm() / reference.norm()
    eager = (grads["eager"] - reference).norm() / reference.norm()
    assert ours < 0.05 and ours <= 1.5 * eager, (float(ours), float(eager))
    cos = torch.nn.functional.cosine_similarity(grads[attention.KERNEL], reference, dim=0)
    assert cos > 0.998


@pytest.mark.slow
def test_an_unpickled_model_registers_the_kernel_in_a_fresh_process(tmp_path) -> None:
    model = _model()
    ids, mask = _batch()
    path = tmp_path / "model.pkl"
    path.write_bytes(pickle.dumps({"model": model, "ids": ids, "mask": mask}))
    with torch.no_grad():
        expected = model(ids, mask)[0]
    code = (
        "import pickle, sys, torch\n"
        f"d = pickle.loads(open({str(path)!r}, 'rb').read())\n"
        "with torch.no_grad():\n"
        "    out = d['model'](d['ids'], d['mask'])[0]\n"
        "torch.save(out, sys.argv[1])\n"
    )
    out_path = tmp_path / "out.pt"
    proc = subprocess.run([sys.executable, "-c", code, str(out_path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    torch.testing.assert_close(torch.load(out_path), expected)
