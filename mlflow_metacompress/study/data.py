"""The reproduction study's data (``metacompress`` ``reproduce`` entry point).

The MetaCompress study (Awal, Rochan, Roy, arXiv 2511.05476) follows Compressor's
protocol (Shi et al., ASE 2022): the teacher is fine-tuned on the labelled half of the
10% BigCloneBench training sample, and students are distilled on the *unlabeled* half,
labelled by the teacher's soft outputs. ``../shared/data/bigclonebench`` holds both
halves in full:

- ``train_full.txt`` (44,475 labelled pairs) trains the teacher, all of it;
- ``unlabeled_codebert.txt`` (44,506 pairs, with the label a real fine-tuned CodeBERT
  predicted) is the distillation set: students see only our teacher's soft labels on
  it. A seeded, label-stratified ``oracle_rows`` subset is held out of distillation
  and kept for the teacher-as-oracle comparison against CodeBERT's hard labels;
- ``valid.txt`` selects, ``test.txt`` evaluates (balanced); :func:`eval_rows` picks the judged
  test rows (issue 42: the selection rows, the rows left for confirmation, a natural-ratio resample);
- every pair file is joined with ``data_full.jsonl`` (falls back to ``data.jsonl``).

For Devign (``task=vulnerability``) the teacher trains on ``train_full.jsonl`` when
present, the distillation set is the unlabelled half of it (no CodeBERT labels exist,
so the oracle comparison is skipped).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..data.sampling import cap_rows
from ..pipeline.data import CODEXGLUE_TASK, normalise_task

if TYPE_CHECKING:
    from .config import StudyConfig

logger = logging.getLogger(__name__)

CODEBERT_FILE = "unlabeled_codebert.txt"


@dataclass
class StudyData:
    """Frames of one reproduction study."""

    task: str  # vulnerability | clone
    codexglue_task: str  # devign | bigclonebench
    folder: Path
    teacher_train: pd.DataFrame  # every labelled training row
    distill: pd.DataFrame  # rows students distil on (labels: CodeBERT's or none)
    oracle: pd.DataFrame | None  # held-out CodeBERT-labelled rows (clone only)
    valid: pd.DataFrame
    test: pd.DataFrame
    code_columns: tuple[str, ...]
    label_column: str

    def frames(self, train: pd.DataFrame) -> dict[str, pd.DataFrame]:
        """The ``train``/``valid``/``test`` dict the distillation functions take."""
        return {"train": train, "valid": self.valid, "test": self.test}

    def sizes(self) -> dict[str, int]:
        out = {
            "teacher_train": len(self.teacher_train),
            "distill": len(self.distill),
            "valid": len(self.valid),
            "test": len(self.test),
        }
        if self.oracle is not None:
            out["oracle"] = len(self.oracle)
        return out


def _task_folder(data_dir: str | Path, name: str) -> Path:
    folder = Path(data_dir).expanduser()
    if not folder.exists():
        raise FileNotFoundError(f"data_dir {str(data_dir)!r} does not exist (resolved to {folder.resolve()})")
    return folder / name if (folder / name).is_dir() else folder


def load_study_data(
    task: str, data_dir: str | Path, *, oracle_rows: int = 2000, distill_rows: int | None = None, seed: int = 0
) -> StudyData:
    """The frames of a reproduction study on ``task`` from ``data_dir`` (see the module
    docstring). ``distill_rows`` caps the distillation set (label-stratified, seeded with
    ``seed``, the data seed, not the student's); ``oracle_rows`` pairs are held out first."""
    from ..data.codexglue import get_task, load_bigclonebench, load_devign, read_functions

    task = normalise_task(task)
    spec = get_task(CODEXGLUE_TASK[task])
    folder = _task_folder(data_dir, spec.name)
    label = spec.label_column
    oracle = None
    if task == "clone":
        data_file = folder / "data_full.jsonl"
        if not data_file.is_file():
            data_file = folder / "data.jsonl"
        functions = read_functions(data_file)
        train_file = folder / "train_full.txt"
        if not train_file.is_file():
            raise FileNotFoundError(
                f"{train_file} not found: the reproduction trains the teacher on the full training file"
            )
        teacher_train = load_bigclonebench(folder, str(train_file), functions)
        codebert = load_bigclonebench(folder, str(folder / CODEBERT_FILE), functions)
        oracle = cap_rows(codebert, min(oracle_rows, len(codebert) // 2), label, seed)
        held = set(zip(oracle["idx1"], oracle["idx2"], strict=True))
        keep = [(a, b) not in held for a, b in zip(codebert["idx1"], codebert["idx2"], strict=True)]
        distill = codebert[keep].reset_index(drop=True)
        valid = load_bigclonebench(folder, "valid", functions)
        test = load_bigclonebench(folder, "test", functions)
    else:
        from ..distill.datasets import split_halves

        full = folder / "train_full.jsonl"
        teacher_all = load_devign(full if full.is_file() else folder / "train.jsonl")
        teacher_train, distill = split_halves(teacher_all, seed)
        valid, test = load_devign(folder, "valid"), load_devign(folder, "test")
    if distill_rows is not None:
        distill = cap_rows(distill, distill_rows, label, seed)
    data = StudyData(
        task,
        spec.name,
        folder,
        teacher_train.reset_index(drop=True),
        distill.reset_index(drop=True),
        oracle,
        valid,
        test,
        tuple(spec.code_columns),
        label,
    )
    logger.info("reproduction data from %s: %s", folder, data.sizes())
    return data


NATURAL_CLONE_RATIO = 0.14  # BigCloneBench's share of clone pairs (issue 42's natural-ratio confirmation)


def eval_rows(cfg: StudyConfig, data: Any) -> Any:
    """The test rows every student is judged on: the same label-stratified sample for every
    method and seed (so methods are compared on the same rows); with ``eval_split``
    "confirmation" the test rows that sample left out, and with "natural" those rows with
    clones subsampled to :data:`NATURAL_CLONE_RATIO` (every non-clone kept; seed ``data_seed``)."""
    from ..data.sampling import cap_positions, cap_rows

    if cfg.eval_split == "selection":
        return cap_rows(data.test, cfg.eval_rows, data.label_column, cfg.data_seed)
    if cfg.eval_split not in ("confirmation", "natural"):
        raise ValueError(f"eval_split must be selection, confirmation or natural, got {cfg.eval_split!r}")
    test = data.test.reset_index(drop=True)
    rest = test.drop(index=cap_positions(test, cfg.eval_rows, data.label_column, cfg.data_seed))
    if cfg.eval_split == "natural":
        clones = rest[rest[data.label_column] == 1]
        others = rest[rest[data.label_column] != 1]
        keep = min(len(clones), round(NATURAL_CLONE_RATIO * len(others) / (1 - NATURAL_CLONE_RATIO)))
        rest = rest.loc[sorted([*others.index, *clones.sample(n=keep, random_state=cfg.data_seed).index])]
    return rest.reset_index(drop=True)
