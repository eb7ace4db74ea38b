"""The ``repair`` method's rounds and module: search deviations, learn them, check them.

DFLARE (Tian, Zhang, Wang, Zhou, Cheung, "Finding Deviated Behaviors of the Compressed
DNN Models for Image Classifications", TOSEM 2023) retrained compressed models on the
deviating inputs its search found. Here a round (:func:`repair_rounds`) runs the
deviation search (:func:`~mlflow_metacompress.attacks.deviation.find_deviations`,
restricted to the training rewrites) on a sample of training rows, labels the verified
deviating variants with the teacher (``label``: the cached soft labels and states of
:mod:`.fidelity_cache`), trains the student on them with replayed training rows
(``train``), then re-queries the student on that round's deviations: ``removed`` counts
those it no longer shows. :class:`RepairModule` is :class:`.modules.FidelityModule` plus
the optional intermediate-layer terms of :mod:`.align` (TinyBERT, Jiao et al. 2020;
MiniLM, Wang et al. 2020), for which a frozen teacher runs beside the student.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._optional import require
from ..deviation_defaults import DEFAULT_DEPTH

require("torch", "the repair method", "distill")

import torch  # noqa: E402 - after require()
from torch import nn  # noqa: E402 - after require()

from .align import attention_loss, capture_values, heads_of, hidden_loss, value_loss  # noqa: E402 - after require()
from .datasets import CodeExamples, model_inputs  # noqa: E402 - after require()
from .modules import FidelityModule  # noqa: E402 - after require()

logger = logging.getLogger(__name__)
PredictFn = Callable[[pd.DataFrame], np.ndarray]
LabelFn = Callable[[CodeExamples], tuple[np.ndarray, np.ndarray]]
TrainFn = Callable[[int, CodeExamples, np.ndarray, np.ndarray], None]
LAYER_ALIGN = ("hidden", "attention", "value", "minilm", "both", "all")
# each option's terms: TinyBERT's hidden states, MiniLM's attention distributions and value relations
ALIGN_PARTS: dict[str, frozenset[str]] = {
    "hidden": frozenset({"hidden"}),
    "attention": frozenset({"attention"}),
    "value": frozenset({"value"}),
    "minilm": frozenset({"attention", "value"}),
    "both": frozenset({"hidden", "attention"}),
    "all": frozenset({"hidden", "attention", "value"}),
}


@dataclass(frozen=True)
class RoundFigures:
    """One round, as logged (``repair_<field>``, step = the round)."""

    rows_searched: int
    agreeing_rows: int
    deviations_found: int
    paired_queries: int
    queries_per_deviation: float
    removed: int
    remaining: int
    training_rows: int

    def metrics(self) -> dict[str, float]:
        return {f"repair_{k}": float(v) for k, v in asdict(self).items() if v == v}  # NaN left out


def predictor(model: Any, tokenizer: Any, columns: Sequence[str], batch_size: int = 64) -> PredictFn:
    """``df -> N×K`` probabilities of a CodeClassifier over the code ``columns`` (eval mode)."""

    def predict(df: pd.DataFrame) -> np.ndarray:
        training = model.training
        model.eval()
        b = df[columns[1]].astype(str).tolist() if len(columns) > 1 else None
        try:
            a = df[columns[0]].astype(str).tolist()
            return np.asarray(model.predict_proba(tokenizer, a, b, batch_size=batch_size))
        finally:
            model.train(training)

    return predict


def frame_of(rows: CodeExamples, columns: Sequence[str]) -> pd.DataFrame:
    """The rows as the data frame the deviation search reads."""
    data = {columns[0]: rows.texts}
    if len(columns) > 1:
        data[columns[1]] = rows.texts_b or []
    return pd.DataFrame(data)


def still_deviating(found: Sequence[Any], student: PredictFn, columns: Sequence[str], rows: CodeExamples) -> int:
    """How many of the verified deviations ``found`` (indices into ``rows``) the student still
    shows: a fresh query on each variant against the teacher's verified label."""
    if not found:
        return 0
    sub = CodeExamples(
        [str(d.variant_code) for d in found], None if rows.texts_b is None else [rows.texts_b[d.index] for d in found]
    )
    probs = student(frame_of(sub, columns))
    teacher = np.asarray([d.teacher_probs for d in found])
    return int((probs.argmax(1) != teacher.argmax(1)).sum())


def repair_rounds(
    rows: CodeExamples,
    columns: Sequence[str],
    language: str,
    teacher: PredictFn,
    student: PredictFn,
    label: LabelFn,
    train: TrainFn,
    *,
    rounds: int,
    queries: int,
    search_rows: int,
    operators: Sequence[str],
    search: str = "dflare",
    seed: int = 0,
    progress: bool = False,
    depth: int = DEFAULT_DEPTH,
) -> list[RoundFigures]:
    """Run the rounds; each logs its :class:`RoundFigures` to the active MLflow run (step =
    round). ``train(round, examples, logits, states)`` trains the student on every deviating
    variant found so far (with the teacher's ``label``)."""
    import mlflow
    from tqdm.auto import tqdm

    from ..attacks.deviation import find_deviations

    texts: list[str] = []
    texts_b: list[str] | None = None if rows.texts_b is None else []
    logits: list[np.ndarray] = []
    states: list[np.ndarray] = []
    figures: list[RoundFigures] = []
    for r in tqdm(range(1, rounds + 1), desc="repair rounds", disable=not progress):
        pick = np.sort(np.random.default_rng([seed, r]).permutation(len(rows))[:search_rows])
        sample = CodeExamples(
            [rows.texts[i] for i in pick], None if rows.texts_b is None else [rows.texts_b[i] for i in pick]
        )
        records = find_deviations(
            teacher, student, frame_of(sample, columns), columns, language,
            queries=queries, search=search, seed=seed * 1000 + r, operators=list(operators), depth=depth,
        )  # fmt: skip
        found = [d for d in records if d.found and d.variant_code is not None]
        spent = sum(d.queries for d in records)
        if found:
            new = CodeExamples(
                [str(d.variant_code) for d in found],
                None if sample.texts_b is None else [sample.texts_b[d.index] for d in found],
            )
            t_logits, t_states = label(new)
            texts += new.texts
            if texts_b is not None:
                texts_b += new.texts_b or []
            logits.append(t_logits)
            states.append(t_states)
            train(
                r,
                CodeExamples(list(texts), None if texts_b is None else list(texts_b)),
                np.concatenate(logits),
                np.concatenate(states),
            )
        remaining = still_deviating(found, student, columns, sample)
        fig = RoundFigures(
            rows_searched=len(records),
            agreeing_rows=sum(d.agreed_at_start for d in records),
            deviations_found=len(found),
            paired_queries=spent,
            queries_per_deviation=spent / len(found) if found else float("nan"),
            removed=len(found) - remaining,
            remaining=remaining,
            training_rows=len(texts),
        )
        figures.append(fig)
        logger.info("repair round %d/%d: %s", r, rounds, fig)
        if mlflow.active_run() is not None:
            mlflow.log_metrics(fig.metrics(), step=r)
    return figures


class RepairModule(FidelityModule):
    """:class:`.modules.FidelityModule` plus ``layer_weight ·`` (TinyBERT's hidden-state and/or
    MiniLM's attention loss, :mod:`.align`) on the originals of each batch when ``layer_align``
    is set. ``teacher`` (a frozen CodeClassifier and its tokenizer) is kept in a tuple, outside
    the module tree, so it never reaches the optimiser or a checkpoint; ``texts``/``texts_b``
    are the training rows' code (what the teacher reads). The layer projection, like the
    ``[CLS]`` one, lives beside the student (identity when the widths match)."""

    def __init__(
        self,
        *args: Any,
        layer_align: str | None = None,
        layer_weight: float = 1.0,
        buckets: int = 16,
        teacher: tuple[Any, Any] | None = None,
        texts: tuple[list[str], list[str] | None] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        if layer_align is not None and layer_align not in LAYER_ALIGN:
            raise ValueError(f"layer_align must be one of {LAYER_ALIGN} or None, got {layer_align!r}")
        if layer_align is not None and (teacher is None or texts is None):
            raise ValueError("layer_align needs the teacher and the training rows' texts")
        self.layer_align, self.layer_weight, self.buckets = layer_align, layer_weight, buckets
        self.parts = ALIGN_PARTS[layer_align] if layer_align is not None else frozenset()
        self._teacher, self._texts = teacher, texts
        self._attention: list[torch.Tensor] = []
        self._values: list[torch.Tensor] = []
        self.layer_projection: nn.Module = nn.Identity()
        if teacher is not None and "hidden" in self.parts:
            s, t = self.model.encoder.config.hidden_size, teacher[0].encoder.config.hidden_size
            self.layer_projection = nn.Linear(s, t) if s != t else nn.Identity()

    def _teacher_layers(self, index: np.ndarray, device: torch.device) -> tuple[Any, torch.Tensor, Any]:
        """The teacher's encoder outputs on the rows, their mask, and its last layer's values (or None)."""
        assert self._teacher is not None and self._texts is not None
        model, tokenizer = self._teacher
        model.to(device).eval()
        a = [self._texts[0][i] for i in index]
        b = None if self._texts[1] is None else [self._texts[1][i] for i in index]
        enc = model.encode(tokenizer, a, b)
        values: list[torch.Tensor] = []
        with torch.no_grad(), capture_values(model.encoder if "value" in self.parts else None, values):
            out = model.encoder(
                input_ids=enc["input_ids"].to(device),
                attention_mask=enc["attention_mask"].to(device),
                output_hidden_states=True,
                output_attentions="attention" in self.parts,
            )
        return out, enc["attention_mask"].to(device), values[0] if values else None

    def layer_terms(self, batch: dict[str, Any], states: tuple[torch.Tensor, ...]) -> dict[str, torch.Tensor]:
        """The alignment terms of this batch's originals (``states``: the student's)."""
        index = batch["index"].cpu().numpy()
        out, t_mask, t_values = self._teacher_layers(index, states[-1].device)
        s_mask = batch["attention_mask"]
        terms: dict[str, torch.Tensor] = {}
        if "value" in self.parts:
            assert self._teacher is not None and t_values is not None and self._values
            heads = (heads_of(self.model.encoder), heads_of(self._teacher[0].encoder))
            terms["value"] = value_loss(self._values[0], t_values, heads, s_mask, t_mask, self.buckets)
        if "hidden" in self.parts:
            terms["hidden"] = hidden_loss(
                states, out.hidden_states, s_mask, t_mask, self.layer_projection, self.buckets
            )
        if "attention" in self.parts:
            if not self._attention or self._attention[0] is None or out.attentions is None:
                raise RuntimeError("attention alignment needs the eager kernel: train inside eager_attention(...)")
            terms["attention"] = attention_loss(self._attention[0], out.attentions[-1], s_mask, t_mask, self.buckets)
        return terms

    def training_step(self, batch: dict[str, Any], batch_idx: int) -> torch.Tensor:
        index = batch["index"].cpu().numpy()
        self._attention.clear()
        self._values.clear()
        hook = None
        if "attention" in self.parts:  # the last layer's weights (eager kernel), this forward only
            encoder: Any = self.model.encoder
            last = encoder.encoder.layer[-1].attention.self
            hook = last.register_forward_hook(lambda _m, _i, out: self._attention.append(out[1]))
        try:
            with capture_values(self.model.encoder if "value" in self.parts else None, self._values):
                logits, states = self.model(**model_inputs(batch), output_hidden_states=True)
        finally:
            if hook is not None:
                hook.remove()
        layer = self.layer_terms(batch, states) if self.layer_align else {}
        loss, parts = self.fidelity_terms(index, logits, states)
        for name, term in layer.items():
            loss = loss + self.layer_weight * term
            parts[name] = float(term.detach())
        self.log_terms(loss, parts, len(logits))
        return loss

    def configure_optimizers(self) -> Any:
        """The fidelity optimiser, with the layer projection's weights added."""
        config = super().configure_optimizers()
        config["optimizer"].param_groups[0]["params"].extend(self.layer_projection.parameters())
        return config
