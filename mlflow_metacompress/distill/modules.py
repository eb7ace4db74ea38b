"""The Lightning module shared by teacher fine-tuning and every distillation method.

It holds exactly one network, the model being trained. Distillation never puts the
teacher in the loop: teacher outputs arrive precomputed in the batch
(``batch["teacher_logits"]``, see :mod:`.soft_labels`), following the soft-label
protocol of Compressor (Shi et al., ASE 2022). Losses are plain callables
``loss_fn(outputs, batch) -> scalar``; an ``extra_loss`` hook with the same signature is
added to it, so later methods (AVATAR, MORPH, ...) only supply functions. Loss
callables are kept outside the module tree, so nothing they reference can reach the
``state_dict`` or a checkpoint. :class:`FidelityModule` (the ``fidelity`` method) adds a
projection of the student's states and per-step metamorphic variants.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .._optional import require

require("torch", "distillation", "distill")
require("lightning", "distillation", "distill")

# imported after the require() checks, so that a missing extra fails with its install command
import lightning as L  # noqa: E402 - after require()
import torch  # noqa: E402 - after require()
from torch import nn  # noqa: E402 - after require()

from .datasets import model_inputs  # noqa: E402 - after require()
from .losses import (  # noqa: E402 - after require()
    FidelityWeights,
    fidelity_loss,
    hard_label_loss,
    kd_loss,
    morph_loss,
    relation_agreement,
)

if TYPE_CHECKING:
    from ..models.classifier import CodeClassifier


@dataclass
class StepOutput:
    """What the model produced for a batch."""

    logits: torch.Tensor
    hidden_states: tuple[torch.Tensor, ...] | None = None


LossFn = Callable[[StepOutput, dict[str, Any]], torch.Tensor]


def cross_entropy_loss(out: StepOutput, batch: dict[str, Any]) -> torch.Tensor:
    """Hard-label loss for fine-tuning a teacher (labels in ``batch["labels"]``)."""
    if "labels" not in batch:
        raise KeyError("cross_entropy_loss needs batch['labels']")
    return hard_label_loss(out.logits, batch["labels"])


def soft_label_loss(temperature: float = 1.0) -> LossFn:
    """KD loss against cached teacher logits (``batch["teacher_logits"]``) at ``temperature``."""

    def loss(out: StepOutput, batch: dict[str, Any]) -> torch.Tensor:
        if "teacher_logits" not in batch:
            raise KeyError("soft_label_loss needs batch['teacher_logits'] (cached teacher outputs)")
        return kd_loss(out.logits, batch["teacher_logits"], temperature)

    loss.__name__ = f"kd_T{temperature:g}"
    return loss


def morph_soft_label_loss(temperature: float, cosine_weight: float = 1.0) -> LossFn:
    """MORPH's loss (:func:`.losses.morph_loss`: KD + cosine term) against cached teacher logits."""

    def loss(out: StepOutput, batch: dict[str, Any]) -> torch.Tensor:
        if "teacher_logits" not in batch:
            raise KeyError("morph loss needs batch['teacher_logits'] (cached teacher outputs)")
        return morph_loss(out.logits, batch["teacher_logits"], temperature, cosine_weight)

    loss.__name__ = f"morph_T{temperature:g}"
    return loss


class ClassifierModule(L.LightningModule):
    """Trains ``model`` (a :class:`~mlflow_metacompress.models.classifier.CodeClassifier`)
    with ``loss_fn`` (+ ``extra_loss``); validates accuracy on labelled batches.

    Logged per epoch: ``train_loss``, ``val_loss`` (cross-entropy) and ``val_acc``.
    AdamW with linear warm-up and linear decay.
    """

    def __init__(
        self,
        model: CodeClassifier,
        loss_fn: LossFn = cross_entropy_loss,
        extra_loss: LossFn | None = None,
        lr: float = 5e-4,
        weight_decay: float = 0.01,
        warmup_ratio: float = 0.1,
        output_hidden_states: bool = False,
    ) -> None:
        super().__init__()
        self.model = model
        # a tuple is not registered as a submodule: nothing in the losses is saved
        self._losses: tuple[LossFn, LossFn | None] = (loss_fn, extra_loss)
        self.lr, self.weight_decay, self.warmup_ratio = lr, weight_decay, warmup_ratio
        self.output_hidden_states = output_hidden_states

    def forward(self, batch: dict[str, Any]) -> StepOutput:
        logits, states = self.model(**model_inputs(batch), output_hidden_states=self.output_hidden_states)
        return StepOutput(logits, states)

    def training_step(self, batch: dict[str, Any], batch_idx: int) -> torch.Tensor:
        out = self(batch)
        loss_fn, extra = self._losses
        loss = loss_fn(out, batch)
        if extra is not None:
            loss = loss + extra(out, batch)
        self.log(
            "train_loss", loss, on_step=False, on_epoch=True, prog_bar=True, batch_size=len(out.logits), sync_dist=True
        )
        return loss

    def validation_step(self, batch: dict[str, Any], batch_idx: int) -> None:
        logits = self.model(**model_inputs(batch))[0]
        n = len(logits)
        if "labels" in batch:
            self.log("val_loss", hard_label_loss(logits, batch["labels"]), on_epoch=True, batch_size=n, sync_dist=True)
            acc = (logits.argmax(dim=-1) == batch["labels"]).float().mean()
            self.log("val_acc", acc, on_epoch=True, prog_bar=True, batch_size=n, sync_dist=True)
        if "teacher_logits" in batch:
            agree = (logits.argmax(dim=-1) == batch["teacher_logits"].argmax(dim=-1)).float().mean()
            self.log("val_agreement", agree, on_epoch=True, batch_size=n, sync_dist=True)
            kept = relation_agreement(logits, batch["teacher_logits"]).float().mean()
            self.log("val_relations_kept", kept, on_epoch=True, batch_size=n, sync_dist=True)

    def configure_optimizers(self) -> Any:
        decay: list[nn.Parameter] = []
        no_decay: list[nn.Parameter] = []
        for name, p in self.model.named_parameters():
            if p.requires_grad:
                (no_decay if p.ndim < 2 or "LayerNorm" in name or "bias" in name else decay).append(p)
        opt = torch.optim.AdamW(
            [{"params": decay, "weight_decay": self.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
            lr=self.lr,
        )
        total = max(1, int(self.trainer.estimated_stepping_batches))
        warmup = int(self.warmup_ratio * total)

        def schedule(step: int) -> float:
            if step < warmup:
                return (step + 1) / (warmup + 1)
            return max(0.0, (total - step) / max(1, total - warmup))

        sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


class FidelityModule(ClassifierModule):
    """The ``fidelity`` method's module: the student, a learned projection of its
    ``[CLS]`` state into the teacher's space, and per-step metamorphic variants.

    Each training batch holds originals (indices into the unlabeled set). For every
    original, up to ``variants_per_step`` of its cached variants (``variant_of[i]`` lists
    the rows of the variant table ``var_texts``/``var_logits``/``var_states`` derived from
    original ``i``) are drawn and run through the student in the same step, so KD on
    variants and sample/variant consistency see both (:func:`.losses.fidelity_loss`).
    Teacher logits and states are arrays computed beforehand (:mod:`.fidelity_cache`),
    and the variants are tokenised once here, not in every step that draws them
    (:func:`~mlflow_metacompress.models.batching.tokenise_all`, as :mod:`.batches`).
    The projection lives beside the student, not inside it: it is trained but never
    registered, so the student's size is unchanged.
    """

    def __init__(
        self,
        model: CodeClassifier,
        tokenizer: Any,
        orig_logits: np.ndarray,
        orig_states: np.ndarray,
        var_texts: list[str],
        var_texts_b: list[str] | None,
        var_logits: np.ndarray,
        var_states: np.ndarray,
        variant_of: list[np.ndarray],
        weights: FidelityWeights,
        variants_per_step: int = 1,
        lr: float = 1e-3,
        seed: int = 0,
    ) -> None:
        super().__init__(model, lr=lr, output_hidden_states=True)
        student_dim = model.encoder.config.hidden_size
        self.projection = nn.Linear(student_dim, orig_states.shape[1])
        self._tokenizer = tokenizer
        self._var_tokens: Any = None  # the variants' token ids, computed at the first step that draws one
        self._orig = (
            torch.as_tensor(orig_logits, dtype=torch.float32),
            torch.as_tensor(orig_states, dtype=torch.float32),
        )
        self._var = (torch.as_tensor(var_logits, dtype=torch.float32), torch.as_tensor(var_states, dtype=torch.float32))
        self._var_texts, self._var_texts_b, self._variant_of = var_texts, var_texts_b, variant_of
        self.weights, self.variants_per_step = weights, variants_per_step
        self._rng = np.random.default_rng(seed)

    def draw_variants(self, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(variant rows, parent batch positions)``: up to ``variants_per_step`` distinct
        variants per original, drawn at random each step."""
        rows: list[int] = []
        parents: list[int] = []
        for pos, i in enumerate(index):
            pool = self._variant_of[int(i)]
            if len(pool):
                take = self._rng.choice(pool, min(self.variants_per_step, len(pool)), replace=False)
                rows.extend(int(r) for r in take)
                parents.extend([pos] * len(take))
        return np.asarray(rows, dtype=np.int64), np.asarray(parents, dtype=np.int64)

    def _encode_variants(self, rows: np.ndarray) -> dict[str, torch.Tensor]:
        """The model inputs of variant ``rows``: all variants tokenised once, then padded per step."""
        from ..models.batching import collate, tokenise_all
        from ..models.encoder import pad_id

        if self._var_tokens is None:
            meta = self.model.meta
            tokens = tokenise_all(self._tokenizer, self._var_texts, self._var_texts_b, meta.pair_mode, meta.max_length)
            left = getattr(self._tokenizer, "padding_side", "right") == "left"
            self._var_tokens = (tokens, pad_id(self._tokenizer, self.model.encoder), left)
        tokens, pad, left = self._var_tokens
        return collate(tokens, rows, pad, left)

    def training_step(self, batch: dict[str, Any], batch_idx: int) -> torch.Tensor:
        index = batch["index"].cpu().numpy()
        logits, states = self.model(**model_inputs(batch), output_hidden_states=True)
        loss, parts = self.fidelity_terms(index, logits, states)
        self.log_terms(loss, parts, len(logits))
        return loss

    def fidelity_terms(self, index: Any, logits: torch.Tensor, states: Any) -> tuple[torch.Tensor, dict[str, float]]:
        """:func:`.losses.fidelity_loss` of a batch (rows ``index``, the student's ``logits``
        and hidden ``states`` on them) with a draw of their cached variants."""
        t_o, z_o = (x[torch.as_tensor(index)].to(logits.device) for x in self._orig)
        rows, parents = self.draw_variants(index)
        kw: dict[str, Any] = {}
        if len(rows):
            enc = {k: v.to(logits.device) for k, v in self._encode_variants(rows).items()}
            v_logits, v_states = self.model(**enc, output_hidden_states=True)
            r = torch.as_tensor(rows)
            kw = dict(
                s_var=v_logits,
                t_var=self._var[0][r].to(logits.device),
                h_var=self.projection(v_states[-1][:, 0, :]),
                z_var=self._var[1][r].to(logits.device),
                parent=torch.as_tensor(parents, device=logits.device),
            )
        return fidelity_loss(logits, t_o, self.projection(states[-1][:, 0, :]), z_o, w=self.weights, **kw)

    def log_terms(self, loss: torch.Tensor, parts: dict[str, float], n: int) -> None:
        """``train_loss`` and each ``train_<term>``, per epoch."""
        self.log("train_loss", loss, on_step=False, on_epoch=True, prog_bar=True, batch_size=n, sync_dist=True)
        for name, value in parts.items():
            self.log(f"train_{name}", value, on_step=False, on_epoch=True, batch_size=n, sync_dist=True)

    def configure_optimizers(self) -> Any:
        """The parent's AdamW + schedule, with the projection in the decayed group."""
        config = super().configure_optimizers()
        opt = config["optimizer"]
        opt.param_groups[0]["params"].extend(self.projection.parameters())
        for state_key in ("initial_lr",):
            opt.param_groups[0].setdefault(state_key, self.lr)
        return config
