"""An MLflow ``PythonModel`` returning class probabilities for code classifiers.

``pyfunc.predict(df)`` returns a DataFrame with one float column per class, in the
model's label order. Models are logged from code (``python_model=`` the path of
:mod:`.pyfunc_model`, which calls ``mlflow.models.set_model``), so nothing is pickled and
loading runs this package's code. It wraps either a :class:`~.classifier.CodeClassifier` directory
(``metacompress.json`` present) or any Hugging Face sequence classifier saved with
``save_pretrained`` (tokenizer in the same directory). Loading works offline.
"""

from __future__ import annotations

import logging
import tempfile
import warnings
from pathlib import Path
from typing import Any

import mlflow
import pandas as pd
from mlflow.pyfunc import PythonModel

from ..precision import AUTO, PRECISION_ENV, for_inference, requested  # noqa: F401 - PRECISION_ENV: its old import path

logger = logging.getLogger(__name__)

HF_ARTIFACT = "hf_dir"
MODEL_CODE = Path(__file__).with_name("pyfunc_model.py")  # the models-from-code file MLflow runs on load


class CodeClassifierPyfunc(PythonModel):
    """``predict`` → DataFrame of class probabilities.

    ``model_config`` keys: ``code_columns`` (one or two column names; default: the
    first one or two string columns of the input), ``batch_size`` (default 32),
    ``device`` (default: ``cuda`` when available, else ``cpu``), ``precision``
    (``auto``, the default: bf16 autocast where the CPU has AVX512-BF16/AMX or the GPU
    supports bf16, else fp32; or ``fp32``, ``bf16``, ``fp16``; probabilities are always
    formed in float32, :mod:`mlflow_metacompress.precision`) and ``max_tokens`` (a
    padded-token budget per batch instead of a fixed ``batch_size``;
    :meth:`~.classifier.CodeClassifier.predict_logits`). ``batch_size``, ``precision``
    and ``max_tokens`` can also be passed per call in ``params``; the
    environment variable ``METACOMPRESS_PRECISION`` sets the precision when neither does.
    ``precision`` and ``max_tokens`` apply to ``CodeClassifier`` directories only.
    ``threads`` (``params`` or ``model_config``) sets torch's threads for the call;
    without it a call runs on the threads of the enclosing work (e.g. the evaluator's),
    else ``$METACOMPRESS_THREADS``, else the free cores (:mod:`mlflow_metacompress.threads`).
    """

    def load_context(self, context: Any) -> None:
        from .._optional import require

        require("torch", "model mode (loading a metacompress code classifier)")
        require("transformers", "model mode (loading a metacompress code classifier)")
        from .classifier import CodeClassifier
        from .meta import META_FILE

        directory = Path(context.artifacts[HF_ARTIFACT])
        self._config = dict(getattr(context, "model_config", None) or {})
        import torch

        device = self._config.get("device") or ("cuda" if torch.cuda.is_available() else "cpu")
        # exactly one of _model (a CodeClassifier directory) and _hf (any other transformers model) is set
        self._model: CodeClassifier | None = None
        self._hf: Any = None
        from ..heartbeat import on_terminal
        from ..quiet import quiet_libraries

        with quiet_libraries(bars=on_terminal()):  # transformers' "Loading weights" bars only on a terminal
            if (directory / META_FILE).exists():
                self._model, self._tokenizer = CodeClassifier.load(directory)
                self._model.to(device)
            else:
                from transformers import AutoModelForSequenceClassification, AutoTokenizer

                self._hf = AutoModelForSequenceClassification.from_pretrained(directory).eval()
                self._tokenizer = AutoTokenizer.from_pretrained(directory)
                self._hf.to(device)
        self._device = device

    @property
    def labels(self) -> list[str]:
        if self._model is not None:
            return list(self._model.meta.labels)
        id2label = self._hf.config.id2label
        return [str(id2label[i]) for i in range(len(id2label))]

    def _columns(self, df: pd.DataFrame) -> list[str]:
        cols = self._config.get("code_columns")
        if cols:
            missing = [c for c in cols if c not in df.columns]
            if missing:
                raise KeyError(f"input is missing code column(s) {missing}; it has {list(df.columns)}")
            return list(cols)
        pair = self._model is not None and self._model.meta.pair_mode is not None
        text_cols = [c for c in df.columns if df[c].dtype == object or pd.api.types.is_string_dtype(df[c])]
        need = 2 if pair else 1
        if len(text_cols) < need:
            raise KeyError(f"expected {need} code column(s) of strings; found {text_cols}")
        return text_cols[:need]

    def _option(self, params: dict[str, Any] | None, key: str, default: Any) -> Any:
        """``params[key]``, else ``model_config[key]``, else ``default``."""
        for source in (params or {}, self._config):
            if source.get(key) is not None:
                return source[key]
        return default

    def precision(self, params: dict[str, Any] | None = None) -> str:
        """The resolved inference precision of a call (``fp32``, ``bf16``, ``fp16``): ``params``,
        else ``model_config``, else ``$METACOMPRESS_PRECISION``, else ``auto``
        (:func:`mlflow_metacompress.precision.for_inference`: bf16 where the device runs it natively)."""
        value = self._option(params, "precision", None)  # None: for_inference reads $METACOMPRESS_PRECISION
        quantized = self._model is not None and bool(self._model.meta.extra.get("quantization"))
        if quantized and requested(None if value is None else str(value)) == AUTO:
            return (
                "fp32"  # a quantized copy computes in its own dtypes, without autocast (CodeClassifier.predict_logits)
            )
        return for_inference(None if value is None else str(value), "cuda" if "cuda" in str(self._device) else "cpu")

    def predict(self, context: Any, model_input: pd.DataFrame, params: dict[str, Any] | None = None) -> pd.DataFrame:
        from ..threads import using

        with using(self._option(params, "threads", None), source="threads (params or model_config)"):
            return self._predict(model_input, params)

    def _predict(self, model_input: pd.DataFrame, params: dict[str, Any] | None) -> pd.DataFrame:
        if isinstance(model_input, pd.Series):
            model_input = model_input.to_frame()
        if not isinstance(model_input, pd.DataFrame):
            model_input = pd.DataFrame({"text": list(model_input)})
        cols = self._columns(model_input)
        texts = [str(x) for x in model_input[cols[0]]]
        texts_b = [str(x) for x in model_input[cols[1]]] if len(cols) > 1 else None
        batch_size = int(self._option(params, "batch_size", 32))
        if self._model is not None:
            max_tokens = self._option(params, "max_tokens", None)
            precision = self.precision(params)
            probs = self._model.predict_proba(
                self._tokenizer,
                texts,
                texts_b,
                batch_size=batch_size,
                precision=precision,
                max_tokens=int(max_tokens) if max_tokens is not None else None,
            )
        else:
            probs = _hf_predict_proba(self._hf, self._tokenizer, texts, texts_b, batch_size)
        return pd.DataFrame(probs, columns=self.labels, index=model_input.index)


def _hf_predict_proba(model: Any, tokenizer: Any, texts: list[str], texts_b: list[str] | None, batch_size: int) -> Any:
    import numpy as np
    import torch

    out = []
    with torch.inference_mode():
        for s in range(0, len(texts), batch_size):
            args = (texts[s : s + batch_size],) + ((texts_b[s : s + batch_size],) if texts_b else ())
            enc = tokenizer(*args, truncation=True, padding=True, return_tensors="pt").to(model.device)
            out.append(torch.softmax(model(**enc).logits.float(), dim=-1).cpu().numpy())
    return np.concatenate(out) if out else np.zeros((0, model.config.num_labels))


def log_code_classifier(
    model_or_dir: Any,
    tokenizer: Any = None,
    *,
    name: str = "model",
    registered_model_name: str | None = None,
    code_columns: list[str] | None = None,
    input_example: pd.DataFrame | None = None,
    tags: dict[str, str] | None = None,
) -> Any:
    """Log a classifier as a pyfunc model (and register it when a name is given).

    ``model_or_dir`` is a :class:`CodeClassifier` (then ``tokenizer`` is required) or a
    directory holding either format. ``tags`` go on the registered model version.
    Returns MLflow's ``ModelInfo``; ``info.registered_model_version`` is set when registered.
    """
    from mlflow.models import infer_signature

    with tempfile.TemporaryDirectory() as tmp:
        if isinstance(model_or_dir, (str, Path)):
            directory = Path(model_or_dir)
        else:
            if tokenizer is None:
                raise ValueError("log_code_classifier needs the tokenizer with a model object")
            directory = model_or_dir.save(Path(tmp) / "hf", tokenizer)
        wrapper = CodeClassifierPyfunc()
        cols = code_columns or ["func"]
        example = (
            input_example
            if input_example is not None
            else pd.DataFrame({c: ["int f(int a) { return a; }"] for c in cols})
        )
        signature = None
        try:
            ctx = type(
                "Ctx", (), {"artifacts": {HF_ARTIFACT: str(directory)}, "model_config": {"code_columns": cols}}
            )()
            wrapper.load_context(ctx)
            signature = infer_signature(example, wrapper.predict(ctx, example))
        except Exception as exc:  # signature is a nicety; logging must not fail on it
            logger.warning("could not infer a signature: %s", exc)
        with warnings.catch_warnings():  # the signature comes from our own example: no input_example needed
            warnings.filterwarnings("ignore", message=r"(\x1b\[[0-9;]*m)?An input example was not provided")
            info = _log(name, directory, cols, signature, registered_model_name)
    if registered_model_name and tags:
        client = mlflow.MlflowClient()
        for k, v in tags.items():
            client.set_model_version_tag(registered_model_name, str(info.registered_model_version), k, str(v))
    return info


def _log(name: str, directory: Path, cols: list[str], signature: Any, registered_model_name: str | None) -> Any:
    """``mlflow.pyfunc.log_model`` from code (:data:`MODEL_CODE`) with ``directory`` as the ``hf_dir`` artifact."""
    return mlflow.pyfunc.log_model(
        name=name,
        python_model=str(MODEL_CODE),  # models from code: nothing is pickled
        artifacts={HF_ARTIFACT: str(directory)},
        model_config={"code_columns": cols},
        signature=signature,
        registered_model_name=registered_model_name,
        pip_requirements=_requirements(),
    )


def _requirements() -> list[str]:
    from importlib.metadata import version

    reqs = []
    for pkg in ("mlflow", "torch", "transformers", "tokenizers", "pandas", "numpy"):
        try:
            reqs.append(f"{pkg}=={version(pkg)}")
        except Exception:
            reqs.append(pkg)
    return reqs
