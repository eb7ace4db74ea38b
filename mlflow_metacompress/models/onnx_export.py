"""Export a :class:`~.classifier.CodeClassifier` to ONNX once, self-describing and cached.

ONNX Runtime (the inference engine teams deploy ONNX models with) answers the same
questions as the torch model, usually faster on a CPU. The exported graph takes the
classifier's token inputs (``input_ids``, ``attention_mask``, and ``input_ids_b``,
``attention_mask_b`` for two-input clone pairs) with dynamic batch and sequence axes and
returns ``logits``. Export uses torch's TorchScript-based exporter (``dynamo=False``),
which needs no extra package, works offline and writes the same graph for the same
weights.

The file carries what it takes to query it from code (:data:`META_PROP`,
:data:`TOKENIZER_PROP` in the model's ``metadata_props``): the classifier's labels, pair
mode and max length, and every file of the tokenizer's ``save_pretrained`` folder. So an
ONNX file logged with ``mlflow.onnx.log_model`` (or copied anywhere) is a complete model
of code: :class:`~.onnx_runtime.OnnxClassifier` rebuilds the tokenizer from it.

:func:`cached_export` keys the file by the model's content (every weight, the metadata,
the tokenizer files, the torch and opset versions) under ``<cache>/onnx/`` of the one
cache folder (:func:`mlflow_metacompress.cache.location`), written atomically, so a model
is exported once per machine however often it is evaluated or attacked.
:func:`quantize_int8` makes the int8 copy with ``onnxruntime.quantization.quantize_dynamic``
(int8 weights, activations quantized on the fly: Jacob et al., CVPR 2018; Zafrir et al.,
Q8BERT, 2019), keeping the metadata.
"""

from __future__ import annotations

import base64
import hashlib
import inspect
import json
import logging
import os
import tempfile
import warnings
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .batching import TWO_INPUTS

logger = logging.getLogger(__name__)

FORMAT = "1"
OPSET = 17
FORMAT_PROP = "metacompress.format"
META_PROP = "metacompress.meta"
TOKENIZER_PROP = "metacompress.tokenizer"
PAD_PROP = "metacompress.pad_token_id"
QUANT_PROP = "metacompress.quantization"
SUBDIR = "onnx"
_EXAMPLE = ["int f(int a, int b) { int s = a + b; return s * 2; }", "int g;"]


def input_names(pair_mode: str | None) -> list[str]:
    """The graph's inputs for a classifier of ``pair_mode``."""
    names = ["input_ids", "attention_mask"]
    return names + ["input_ids_b", "attention_mask_b"] if pair_mode in TWO_INPUTS else names


def tokenizer_files(tokenizer: Any) -> dict[str, dict[str, str]]:
    """Every file of ``tokenizer.save_pretrained``: ``{"text": {name: text}, "binary": {name: base64}}``."""
    out: dict[str, dict[str, str]] = {"text": {}, "binary": {}}
    with tempfile.TemporaryDirectory() as tmp:
        tokenizer.save_pretrained(tmp)
        for path in sorted(Path(tmp).rglob("*")):
            if not path.is_file():
                continue
            name, data = path.relative_to(tmp).as_posix(), path.read_bytes()
            try:
                out["text"][name] = _without_call_state(name, data.decode("utf-8"))
            except UnicodeDecodeError:
                out["binary"][name] = base64.b64encode(data).decode("ascii")
    return out


def _without_call_state(name: str, text: str) -> str:
    """``tokenizer.json`` without the truncation and padding of the last call (a fast
    tokenizer keeps them in its backend and saves them; they are per-call settings, and
    would otherwise change the content key of a model after every use)."""
    if name != "tokenizer.json":
        return text
    spec = json.loads(text)
    spec["truncation"], spec["padding"] = None, None
    return json.dumps(spec, ensure_ascii=False)


def _pad_id(model: Any, tokenizer: Any) -> int:
    from .encoder import pad_id

    return pad_id(tokenizer, model.encoder)


def content_key(model: Any, tokenizer: Any, files: dict[str, Any] | None = None) -> str:
    """SHA-256 of everything the exported file depends on (weights, metadata, tokenizer, versions)."""
    import torch

    h = hashlib.sha256()
    h.update(f"metacompress-onnx-{FORMAT}|opset{OPSET}|torch{torch.__version__}".encode())
    h.update(json.dumps(asdict(model.meta), sort_keys=True, default=str).encode())
    h.update(json.dumps(files if files is not None else tokenizer_files(tokenizer), sort_keys=True).encode())
    for name, tensor in sorted(model.state_dict().items()):
        t = tensor.detach().cpu().contiguous()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}".encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()[:40]


def export(model: Any, tokenizer: Any, path: str | Path, files: dict[str, Any] | None = None) -> Path:
    """Write ``model`` (a float :class:`~.classifier.CodeClassifier`) as ONNX to ``path``,
    with its metadata and tokenizer in ``metadata_props``. ``model.training`` is restored."""
    import onnx
    import torch

    if (model.meta.extra.get("quantization") or {}).get("dtype"):
        raise ValueError(
            f"cannot export a torch-quantized classifier ({model.meta.extra['quantization']}) to ONNX: export "
            "the float model and quantize the ONNX file (quantize_int8, the onnx-int8 method)"
        )
    names = input_names(model.meta.pair_mode)
    device = next(model.parameters()).device
    example = model.encode(tokenizer, _EXAMPLE, _EXAMPLE[::-1] if model.meta.pair_mode else None)
    args = tuple(example[n].to(device) for n in names)
    axes = {n: {0: "batch", 1: "sequence"} for n in names} | {"logits": {0: "batch"}}
    kwargs: dict[str, Any] = {"input_names": names, "output_names": ["logits"], "dynamic_axes": axes}
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kwargs["dynamo"] = False  # the TorchScript exporter: offline, no onnxscript
    was_training = model.training
    wrapper = _logits_only(model).eval()
    path = Path(path)
    try:
        with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
            warnings.simplefilter("ignore")  # tracer and deprecation warnings of the exporter
            torch.onnx.export(wrapper, args, str(path), opset_version=OPSET, **kwargs)
    finally:
        model.train(was_training)
    proto = onnx.load(str(path))
    props = {
        FORMAT_PROP: FORMAT,
        META_PROP: json.dumps(asdict(model.meta), default=str),
        TOKENIZER_PROP: json.dumps(files if files is not None else tokenizer_files(tokenizer)),
        PAD_PROP: str(_pad_id(model, tokenizer)),
    }
    onnx.helper.set_model_props(proto, props)
    onnx.save(proto, str(path))
    return path


def _logits_only(model: Any) -> Any:
    """``CodeClassifier.forward`` returning only the logits (the graph's one output)."""
    import torch

    class LogitsOnly(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            return self.inner(*inputs)[0]

    return LogitsOnly(model)


def cached_export(
    model: Any, tokenizer: Any, cache_dir: Any = None, *, int8: bool = False, per_channel: bool = True
) -> Path:
    """The ONNX file of ``model`` (its int8 copy with ``int8``, :func:`quantize_int8`),
    exported on first use and reused from ``<cache>/onnx/<content key>[-int8].onnx``
    afterwards."""
    from ..cache import entry_mode, location

    files = tokenizer_files(tokenizer)
    key = content_key(model, tokenizer, files)
    folder = location(cache_dir) / SUBDIR
    suffix = ("-int8" if per_channel else "-int8-tensor") if int8 else ""
    final = folder / f"{key}{suffix}.onnx"
    if final.is_file():
        logger.debug("ONNX cache hit: %s", final)
        return final
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{key}.", suffix=".onnx", dir=folder)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        export(model, tokenizer, tmp, files)
        if int8:
            quantize_int8(tmp, tmp, per_channel)
        os.chmod(tmp, entry_mode(folder))
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)
    logger.info("exported %s to ONNX: %s", type(model).__name__, final)
    return final


def quantize_int8(src: str | Path, dst: str | Path, per_channel: bool = True) -> Path:
    """Dynamic int8 quantization of an exported classifier (``quantize_dynamic``, int8
    weights); the metadata is kept and :data:`QUANT_PROP` records the scheme."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    src, dst = Path(src), Path(dst)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "int8.onnx"
        quiet = logging.getLogger()  # quantize_dynamic logs a pre-processing hint on the root logger
        level = quiet.level
        quiet.setLevel(max(level, logging.ERROR))
        try:
            quantize_dynamic(str(src), str(out), weight_type=QuantType.QInt8, per_channel=per_channel)
        finally:
            quiet.setLevel(level)
        proto = onnx.load(str(out))
    props = {p.key: p.value for p in proto.metadata_props}
    scheme = {"dtype": "int8", "backend": "onnxruntime", "method": "quantize_dynamic", "per_channel": per_channel}
    meta = json.loads(props.get(META_PROP, "{}"))
    meta.setdefault("extra", {})["quantization"] = scheme
    props.update({META_PROP: json.dumps(meta), QUANT_PROP: json.dumps(scheme)})
    del proto.metadata_props[:]
    onnx.helper.set_model_props(proto, props)
    onnx.save(proto, str(dst))
    return dst
