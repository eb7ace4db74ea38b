"""The reusable training step of every distillation method.

:func:`train_student` trains a student (only the student enters the Lightning module)
on cached teacher outputs with a loss (default: soft-label KD at T = 1, as Compressor,
Shi et al., ASE 2022) plus an optional extra-loss hook, and keeps the best validation
checkpoint. Methods import it from here; :func:`.runner.distill_student` calls methods.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .datasets import CodeExamples
from .options import MethodOptions

if TYPE_CHECKING:
    from .context import DistillContext
    from .training import FitConfig, FitResult


def train_student(
    model: Any,
    tokenizer: Any,
    inputs: Sequence[CodeExamples],
    valid: CodeExamples | None,
    loss_fn: Any = None,
    extra_loss: Any = None,
    fit_config: FitConfig | None = None,
    lr: float = MethodOptions.lr,
    output_hidden_states: bool = False,
    checkpoint_dir: str | Path | None = None,
) -> FitResult:
    """Train ``model`` on the concatenation of ``inputs`` with ``loss_fn`` (default:
    KD at T = 1 on cached teacher logits) plus ``extra_loss``; keep the best
    validation checkpoint. Only the student enters the Lightning module."""
    from torch.utils.data import ConcatDataset

    from .modules import ClassifierModule, soft_label_loss
    from .training import fit

    if not inputs:
        raise ValueError("train_student needs at least one CodeExamples input")
    module = ClassifierModule(
        model, loss_fn or soft_label_loss(1.0), extra_loss, lr=lr, output_hidden_states=output_hidden_states
    )
    data = inputs[0] if len(inputs) == 1 else ConcatDataset(list(inputs))
    return fit(module, tokenizer, data, valid, fit_config, checkpoint_dir=checkpoint_dir)


def train_on_soft_labels(ctx: DistillContext, model: Any, tokenizer: Any, temperature: float, lr: float) -> FitResult:
    """The plain KD fit of AVATAR and Compressor: :func:`train_student` on the unlabeled set's
    cached teacher logits with soft-label KD at ``temperature`` (Hinton et al., 2015; Shi et
    al., ASE 2022), selected on the validation set with ``ctx.fit_config``."""
    from .modules import soft_label_loss

    return train_student(
        model, tokenizer, [ctx.unlabeled], ctx.valid, soft_label_loss(temperature), fit_config=ctx.fit_config, lr=lr
    )
