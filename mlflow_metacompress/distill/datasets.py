"""Training inputs for teachers and students: texts, optional labels and soft labels.

Compressor (Shi et al., ASE 2022) splits the training set in two halves: the labelled
half fine-tunes the teacher, the unlabeled half is labelled by the teacher's soft
outputs and used to distil the student. :func:`split_halves` makes that split
deterministic; :class:`CodeExamples` carries one half, and :class:`Collator` tokenises
batches on the fly with the model's own ``encode`` (dynamic padding).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from torch.utils.data import Dataset

    _MapDataset = Dataset[dict[str, Any]]
else:  # a map-style dataset by its __len__ and __getitem__: no torch import for data preparation
    _MapDataset = object


@dataclass
class CodeExamples(_MapDataset):
    """Texts (one or two columns), hard labels and teacher logits, row-aligned."""

    texts: list[str]
    texts_b: list[str] | None = None
    labels: np.ndarray | None = None
    teacher_logits: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = len(self.texts)
        for name in ("texts_b", "labels", "teacher_logits"):
            value = getattr(self, name)
            if value is not None and len(value) != n:
                raise ValueError(f"CodeExamples.{name} has {len(value)} rows, texts has {n}")

    def __len__(self) -> int:
        return len(self.texts)

    def __getitem__(self, i: int) -> dict[str, Any]:
        item: dict[str, Any] = {"index": i, "text": self.texts[i]}
        if self.texts_b is not None:
            item["text_b"] = self.texts_b[i]
        if self.labels is not None:
            item["label"] = int(self.labels[i])
        if self.teacher_logits is not None:
            item["teacher_logits"] = self.teacher_logits[i]
        return item

    @classmethod
    def from_frame(
        cls,
        df: pd.DataFrame,
        code_columns: Sequence[str],
        label_column: str | None = None,
        teacher_logits: np.ndarray | None = None,
    ) -> CodeExamples:
        """Build from a DataFrame; names the missing column when one is absent."""
        needed = list(code_columns) + ([label_column] if label_column else [])
        missing = [c for c in needed if c not in df.columns]
        if missing:
            raise KeyError(f"DataFrame is missing column(s) {missing}; it has {list(df.columns)}")
        if not 1 <= len(code_columns) <= 2:
            raise ValueError(f"expected one or two code columns, got {list(code_columns)}")
        texts = [str(x) for x in df[code_columns[0]]]
        texts_b = [str(x) for x in df[code_columns[1]]] if len(code_columns) == 2 else None
        labels = df[label_column].to_numpy(dtype=np.int64) if label_column else None
        return cls(texts, texts_b, labels, teacher_logits)


def split_halves(df: pd.DataFrame, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Shuffle with ``seed`` and cut in two: (labelled half for the teacher, unlabeled
    half for distillation), as in Compressor's training protocol."""
    perm = np.random.default_rng(seed).permutation(len(df))
    cut = len(df) // 2
    return df.iloc[np.sort(perm[:cut])].reset_index(drop=True), df.iloc[np.sort(perm[cut:])].reset_index(drop=True)


class Collator:
    """Tokenise a list of :meth:`CodeExamples.__getitem__` items into tensors.

    ``encode(texts, texts_b)`` is usually ``functools.partial(model.encode, tokenizer)``.
    """

    def __init__(self, encode: Any) -> None:
        self.encode = encode

    def __call__(self, items: list[dict[str, Any]]) -> dict[str, Any]:
        texts = [it["text"] for it in items]
        texts_b = [it["text_b"] for it in items] if "text_b" in items[0] else None
        batch: dict[str, Any] = dict(self.encode(texts, texts_b))
        return with_targets(batch, items)


def with_targets(batch: dict[str, Any], items: list[dict[str, Any]]) -> dict[str, Any]:
    """``batch`` with the items' row ``index``, ``labels`` and ``teacher_logits`` (when they
    have them) as tensors: what every training collator adds to the model inputs."""
    import torch

    batch["index"] = torch.tensor([it["index"] for it in items], dtype=torch.long)
    if "label" in items[0]:
        batch["labels"] = torch.tensor([it["label"] for it in items], dtype=torch.long)
    if "teacher_logits" in items[0]:
        batch["teacher_logits"] = torch.tensor(np.stack([it["teacher_logits"] for it in items]), dtype=torch.float32)
    return batch


MODEL_INPUTS = ("input_ids", "attention_mask", "input_ids_b", "attention_mask_b")


def model_inputs(batch: dict[str, Any]) -> dict[str, Any]:
    """The keys of ``batch`` that :meth:`CodeClassifier.forward` accepts."""
    return {k: batch[k] for k in MODEL_INPUTS if k in batch}


def load_splits(
    data: str | Any | dict[str, pd.DataFrame],
    task: str,
    limit: int | None = None,
    seed: int = 0,
) -> dict[str, pd.DataFrame]:
    """``train``/``valid``/``test`` frames of ``task`` from a CodeXGLUE directory (its
    parent also works), or from a dict of ready frames. ``data=None`` reads the hub.
    ``limit`` keeps at most that many rows per split: a seeded, label-stratified sample
    in the original order (:func:`..data.sampling.cap_rows`, the pipeline's sampler)."""
    from ..data.codexglue import get_task, load_task
    from ..data.sampling import cap_rows

    spec = get_task(task)
    if isinstance(data, dict):
        missing = [s for s in ("train", "valid", "test") if s not in data]
        if missing:
            raise KeyError(f"data dict is missing split(s) {missing}")
        frames = {s: data[s] for s in ("train", "valid", "test")}
    else:
        frames = {s: load_task(task, s, data) for s in ("train", "valid", "test")}
    for split, df in frames.items():
        needed = [*spec.code_columns, spec.label_column]
        absent = [c for c in needed if c not in df.columns]
        if absent:
            raise KeyError(f"{split} split is missing column(s) {absent}; it has {list(df.columns)}")
        if limit is not None:
            frames[split] = cap_rows(df, limit, spec.label_column, seed)
    return frames
