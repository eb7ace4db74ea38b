"""The Lightning module shared by teacher fine-tuning and every distillation method.

It holds exactly one network, the model being trained. Distillation never puts the
teacher in the loop: teacher outputs arrive precomputed in the batch
(``batch["teacher_logits"]``, see :mod:`.soft_labels`), following the soft-label
protocol of Compressor (Shi et al., ASE 2022). Losses are plain callables
``loss_fn(outputs, batch) -> scalar``; an ``extra_loss`` hook with the same signature is
added to it, so later methods (AVATAR, MORPH, ...) only supply functions. Loss
callables are kept outside the module tree, so nothing they reference can reach the
``state_dict`` or a checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import lightning as L
import torch

from .datasets import model_inputs
from .losses import hard_label_loss, kd_loss, relation_agreement


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


class ClassifierModule(L.LightningModule):
    """Trains ``model`` (a :class:`~mlflow_metacompress.models.classifier.CodeClassifier`)
    with ``loss_fn`` (+ ``extra_loss``); validates accuracy on labelled batches.

    Logged per epoch: ``train_loss``, ``val_loss`` (cross-entropy) and ``val_acc``.
    AdamW with linear warm-up and linear decay.
    """

    def __init__(
        self,
        model: torch.nn.Module,
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
        self.log("train_loss", loss, on_step=False, on_epoch=True, prog_bar=True, batch_size=len(out.logits))
        return loss

    def validation_step(self, batch: dict[str, Any], batch_idx: int) -> None:
        logits = self.model(**model_inputs(batch))[0]
        n = len(logits)
        if "labels" in batch:
            self.log("val_loss", hard_label_loss(logits, batch["labels"]), on_epoch=True, batch_size=n)
            acc = (logits.argmax(dim=-1) == batch["labels"]).float().mean()
            self.log("val_acc", acc, on_epoch=True, prog_bar=True, batch_size=n)
        if "teacher_logits" in batch:
            agree = (logits.argmax(dim=-1) == batch["teacher_logits"].argmax(dim=-1)).float().mean()
            self.log("val_agreement", agree, on_epoch=True, batch_size=n)
            kept = relation_agreement(logits, batch["teacher_logits"]).float().mean()
            self.log("val_relations_kept", kept, on_epoch=True, batch_size=n)

    def configure_optimizers(self) -> Any:
        decay, no_decay = [], []
        for name, p in self.model.named_parameters():
            if p.requires_grad:
                (no_decay if p.ndim < 2 or "LayerNorm" in name or "bias" in name else decay).append(p)
        opt = torch.optim.AdamW(
            [{"params": decay, "weight_decay": self.weight_decay}, {"params": no_decay, "weight_decay": 0.0}], lr=self.lr
        )
        total = max(1, int(self.trainer.estimated_stepping_batches))
        warmup = int(self.warmup_ratio * total)

        def schedule(step: int) -> float:
            if step < warmup:
                return (step + 1) / (warmup + 1)
            return max(0.0, (total - step) / max(1, total - warmup))

        sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}
