"""The classification head of a :class:`~.classifier.CodeClassifier`: RoBERTa's, as
CodeBERT's fine-tuning and the CodeXGLUE baselines use it."""

from __future__ import annotations

import torch
from torch import nn


class ClassificationHead(nn.Module):
    """RoBERTa's head: dropout → dense → tanh → dropout → projection."""

    def __init__(self, in_dim: int, hidden: int, num_labels: int, dropout: float = 0.1) -> None:
        super().__init__()
        self.dense = nn.Linear(in_dim, hidden)
        self.dropout = nn.Dropout(dropout)
        self.out_proj = nn.Linear(hidden, num_labels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.tanh(self.dense(self.dropout(x)))
        return self.out_proj(self.dropout(x))
