"""The Lightning module of the ``fidelity`` method: the student, a learned projection
of its ``[CLS]`` state into the teacher's space, and per-step metamorphic variants.

Each training batch holds originals (indices into the unlabeled set). For every
original, up to ``variants_per_step`` of its cached variants are drawn and run through
the student in the same step, so KD on variants and sample/variant consistency see
both (:func:`.fidelity_loss.fidelity_loss`). Teacher logits and states are arrays
computed beforehand (:mod:`.fidelity_cache`). The projection lives beside the student,
not inside it: it is trained but never registered, so the student's size is unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from .datasets import model_inputs
from .fidelity_loss import FidelityWeights, fidelity_loss
from .modules import ClassifierModule


class FidelityModule(ClassifierModule):
    """Trains ``model`` with the fidelity loss; ``variant_of[i]`` lists the rows of the
    variant table (``var_texts``/``var_logits``/``var_states``) derived from original ``i``."""

    def __init__(
        self, model: nn.Module, tokenizer: Any, orig_logits: np.ndarray, orig_states: np.ndarray,
        var_texts: list[str], var_texts_b: list[str] | None, var_logits: np.ndarray, var_states: np.ndarray,
        variant_of: list[np.ndarray], weights: FidelityWeights = FidelityWeights(), variants_per_step: int = 1,
        lr: float = 1e-3, seed: int = 0,
    ) -> None:
        super().__init__(model, lr=lr, output_hidden_states=True)
        student_dim = model.encoder.config.hidden_size  # type: ignore[union-attr]
        self.projection = nn.Linear(student_dim, orig_states.shape[1])
        self._tokenizer = tokenizer
        self._orig = (torch.as_tensor(orig_logits, dtype=torch.float32), torch.as_tensor(orig_states, dtype=torch.float32))
        self._var = (torch.as_tensor(var_logits, dtype=torch.float32), torch.as_tensor(var_states, dtype=torch.float32))
        self._var_texts, self._var_texts_b, self._variant_of = var_texts, var_texts_b, variant_of
        self.weights, self.variants_per_step = weights, variants_per_step
        self._rng = np.random.default_rng(seed)

    def draw_variants(self, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(variant rows, parent batch positions)``: up to ``variants_per_step`` distinct
        variants per original, drawn at random each step."""
        rows, parents = [], []
        for pos, i in enumerate(index):
            pool = self._variant_of[int(i)]
            if len(pool):
                take = self._rng.choice(pool, min(self.variants_per_step, len(pool)), replace=False)
                rows.extend(int(r) for r in take)
                parents.extend([pos] * len(take))
        return np.asarray(rows, dtype=np.int64), np.asarray(parents, dtype=np.int64)

    def training_step(self, batch: dict[str, Any], batch_idx: int) -> torch.Tensor:
        index = batch["index"].cpu().numpy()
        logits, states = self.model(**model_inputs(batch), output_hidden_states=True)
        t_o, z_o = (x[torch.as_tensor(index)].to(logits.device) for x in self._orig)
        rows, parents = self.draw_variants(index)
        kw: dict[str, Any] = {}
        if len(rows):
            a = [self._var_texts[r] for r in rows]
            b = [self._var_texts_b[r] for r in rows] if self._var_texts_b is not None else None
            enc = {k: v.to(logits.device) for k, v in self.model.encode(self._tokenizer, a, b).items()}  # type: ignore[operator]
            v_logits, v_states = self.model(**enc, output_hidden_states=True)
            r = torch.as_tensor(rows)
            kw = dict(s_var=v_logits, t_var=self._var[0][r].to(logits.device),
                      h_var=self.projection(v_states[-1][:, 0, :]), z_var=self._var[1][r].to(logits.device),
                      parent=torch.as_tensor(parents, device=logits.device))
        loss, parts = fidelity_loss(logits, t_o, self.projection(states[-1][:, 0, :]), z_o, w=self.weights, **kw)
        n = len(logits)
        self.log("train_loss", loss, on_step=False, on_epoch=True, prog_bar=True, batch_size=n)
        for name, value in parts.items():
            self.log(f"train_{name}", value, on_step=False, on_epoch=True, batch_size=n)
        return loss

    def configure_optimizers(self) -> Any:
        """The parent's AdamW + schedule, with the projection in the decayed group."""
        config = super().configure_optimizers()
        opt = config["optimizer"]
        opt.param_groups[0]["params"].extend(self.projection.parameters())
        for state_key in ("initial_lr",):
            opt.param_groups[0].setdefault(state_key, self.lr)
        return config
