"""``OnnxClassifier``: a code classifier exported to ONNX (:mod:`.onnx_export`), run by ONNX Runtime.

It reads everything it needs from the file itself (labels, pair mode, max length,
padding id and the tokenizer, in ``metadata_props``), so the fp32 export of a
``CodeClassifier`` and its int8 copy (``quantize_dynamic``), however they were logged
(``mlflow.onnx.log_model`` included), answer exactly the questions the torch model
answers. Inference is the torch path's (:meth:`~.classifier.CodeClassifier.predict_logits`):
rows are tokenised once, sorted by token count and padded per batch (:mod:`.batching`),
so the two backends see the same batches. Each :class:`onnxruntime.InferenceSession`
runs ``intra_op_num_threads`` = the project's thread count
(:func:`mlflow_metacompress.threads.resolve`: ``evaluator_config["threads"]``, the
enclosing work's count, ``$METACOMPRESS_THREADS``, else the ``auto`` default) and one
inter-op thread; a session is built once per thread count.

Imports neither torch nor onnx (``onnx`` only for :meth:`OnnxClassifier.measurements`).
"""

from __future__ import annotations

import base64
import json
import logging
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from .._optional import require
from .batching import bucketed, pad_rows

logger = logging.getLogger(__name__)

FORMAT_PROP = "metacompress.format"  # the names of .onnx_export, kept here so this module needs no torch
META_PROP = "metacompress.meta"
TOKENIZER_PROP = "metacompress.tokenizer"
PAD_PROP = "metacompress.pad_token_id"


class OnnxClassifier:
    """An exported classifier: ``predict_logits``/``predict_proba`` like ``CodeClassifier``'s."""

    def __init__(self, path: str | Path | None, session: Any = None) -> None:
        """``path``: the ``.onnx`` file. ``session``: an existing ``InferenceSession`` of it
        to use instead of building one per thread count (e.g. MLflow's, when the file is
        not at hand)."""
        require("onnxruntime", "ONNX Runtime inference")
        if not path and session is None:
            raise ValueError("OnnxClassifier needs the .onnx file's path or an InferenceSession of it")
        self.path = Path(path) if path else None
        self._fixed = session
        self._sessions: dict[int, Any] = {}
        first = session or self.session()
        props = dict(first.get_modelmeta().custom_metadata_map)
        if META_PROP not in props or TOKENIZER_PROP not in props:
            raise ValueError(
                f"ONNX model {path or '<session>'} has no metacompress metadata ({META_PROP}, {TOKENIZER_PROP}): "
                "it cannot tokenise code. Export it with mlflow_metacompress.models.onnx_export (or "
                "log_onnx_classifier), which stores the tokenizer, labels and max length in the file"
            )
        meta = json.loads(props[META_PROP])
        self.labels: list[str] = [str(x) for x in meta.get("labels", ["0", "1"])]
        self.pair_mode: str | None = meta.get("pair_mode")
        self.max_length = int(meta.get("max_length", 256))
        self.extra: dict[str, Any] = dict(meta.get("extra") or {})
        self.pad_id = int(props.get(PAD_PROP, 1))
        self.tokenizer = _tokenizer(json.loads(props[TOKENIZER_PROP]))
        self.input_names = [i.name for i in first.get_inputs()]

    @property
    def num_labels(self) -> int:
        return len(self.labels)

    @property
    def quantization(self) -> dict[str, Any] | None:
        """The quantization scheme recorded in the file (``{"dtype": "int8", ...}``), if any."""
        return self.extra.get("quantization")

    def session(self, threads: Any = None) -> Any:
        """The ``InferenceSession`` for :func:`~mlflow_metacompress.threads.resolve`'s count."""
        if self._fixed is not None:
            return self._fixed
        from ..threads import resolve

        return self._session(resolve(threads, source="threads"))

    def _session(self, threads: int) -> Any:
        if threads not in self._sessions:
            import onnxruntime as ort

            opts = ort.SessionOptions()
            opts.intra_op_num_threads = threads
            opts.inter_op_num_threads = 1
            opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            opts.log_severity_level = 3  # errors only
            self._sessions[threads] = ort.InferenceSession(
                str(self.path), sess_options=opts, providers=["CPUExecutionProvider"]
            )
        return self._sessions[threads]

    def predict_logits(
        self,
        tokenizer: Any = None,
        texts: list[str] | None = None,
        texts_b: list[str] | None = None,
        batch_size: int = 32,
        progress: bool = False,
        *,
        max_tokens: int | None = None,
        threads: Any = None,
        **_: Any,
    ) -> np.ndarray:
        """Logits (N×K, float32) in the length-bucketed batches of the torch path.
        ``tokenizer`` defaults to the file's own (the argument keeps ``CodeClassifier``'s
        call shape); other torch-only keywords (``precision``, ``chunk_rows``) are ignored."""
        from tqdm.auto import tqdm

        texts = list(texts or [])
        tok = tokenizer if tokenizer is not None else self.tokenizer
        session = self.session(threads)
        out = np.zeros((len(texts), self.num_labels), dtype=np.float32)
        with tqdm(total=len(texts), desc="onnxruntime inference", disable=not progress, leave=False) as bar:
            for tokens, rows, batches in bucketed(
                tok, texts, texts_b, self.pair_mode, self.max_length, batch_size, max_tokens, 0
            ):
                for b in batches:
                    feed: dict[str, np.ndarray] = {}
                    for (ids_name, mask_name), col in zip(
                        (("input_ids", "attention_mask"), ("input_ids_b", "attention_mask_b")), tokens.ids, strict=False
                    ):
                        feed[ids_name], feed[mask_name] = pad_rows([col[i] for i in b], self.pad_id)
                    logits = session.run(["logits"], {k: v for k, v in feed.items() if k in self.input_names})[0]
                    out[rows[b]] = logits
                    bar.update(len(b))
        return out

    def predict_proba(
        self, tokenizer: Any = None, texts: list[str] | None = None, texts_b: list[str] | None = None, **kw: Any
    ) -> np.ndarray:
        """Class probabilities (N×K): the softmax of :meth:`predict_logits`, in float64 then float32."""
        logits = self.predict_logits(tokenizer, texts, texts_b, **kw).astype(np.float64)
        logits -= logits.max(axis=1, keepdims=True)
        e = np.exp(logits)
        return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)

    def measurements(self) -> dict[str, float]:
        """``params`` (the weights stored in the graph, int8 or float) and ``size_mb`` (the
        file's bytes / 10^6), as ``distill.arch.measure_model`` reports them; ``gflops``
        when the file's metadata records the source model's."""
        import onnx

        if self.path is None:
            raise ValueError("measurements need the ONNX file, not only a session")
        proto = onnx.load(str(self.path), load_external_data=False)
        weights = 0
        for init in proto.graph.initializer:
            if init.name.endswith(("_scale", "_zero_point")) or not len(init.dims):
                continue  # quantization scales and zero points, and scalar constants, are not weights
            if init.data_type in (onnx.TensorProto.INT8, onnx.TensorProto.UINT8, onnx.TensorProto.FLOAT):
                weights += int(np.prod(init.dims))
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*"))
        out = {"params": float(weights), "size_mb": size / 1e6}
        if "gflops" in self.extra:
            out["gflops"] = float(self.extra["gflops"])
        return out


def _tokenizer(files: dict[str, dict[str, str]]) -> Any:
    """The tokenizer rebuilt from the files :func:`.onnx_export.tokenizer_files` stored."""
    require("transformers", "tokenizing code for an ONNX classifier")
    from transformers import AutoTokenizer

    with tempfile.TemporaryDirectory() as tmp:
        for name, text in files.get("text", {}).items():
            target = Path(tmp) / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        for name, data in files.get("binary", {}).items():
            target = Path(tmp) / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(base64.b64decode(data))
        return AutoTokenizer.from_pretrained(tmp)


def onnx_file(model_dir: str | Path) -> Path:
    """The ``.onnx`` file of an ``mlflow.onnx`` model folder (its ``MLmodel`` names it)."""
    import yaml

    model_dir = Path(model_dir)
    mlmodel = yaml.safe_load((model_dir / "MLmodel").read_text())
    data = (mlmodel.get("flavors", {}).get("onnx") or {}).get("data")
    if not data:
        raise ValueError(f"{model_dir} is not an mlflow.onnx model (no onnx flavor in its MLmodel)")
    return model_dir / data
