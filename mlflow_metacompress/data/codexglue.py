"""Loaders for the CodeXGLUE code-classification formats (Lu et al., 2021).

- **Devign / Defect detection** (Zhou et al., NeurIPS 2019): jsonl rows
  ``{func, target, idx, project, commit_id}`` → DataFrame ``func``/``target`` (+ ``idx``,
  ``project``, ``commit_id`` when present).
- **BigCloneBench / Clone detection** (Svajlenko et al., 2014): ``data.jsonl`` rows
  ``{func, idx}`` plus pair files of ``idx1 idx2 label`` lines (tab- or space-separated)
  → DataFrame ``func1``/``func2``/``label`` (+ ``idx1``, ``idx2``).

These are the columns the MetaCompress evaluator consumes. Every malformed line raises
:class:`DataFormatError` naming the file and the 1-based line number. When the machine
is online, :func:`load_devign_hub` and :func:`load_bigclonebench_hub` read the same
datasets from the Hugging Face hub (needs the optional ``datasets`` extra).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

logger = logging.getLogger(__name__)

SPLITS = ("train", "valid", "test")
HUB_DEVIGN = "google/code_x_glue_cc_defect_detection"
HUB_BIGCLONEBENCH = "google/code_x_glue_cc_clone_detection_big_clone_bench"


class DataFormatError(ValueError):
    """A dataset file has a malformed line; the message names the file and line."""


def _binary_label(value: Any, where: str, key: str) -> int:
    """Accept 0/1 (ints, bools, or their string forms); reject anything else."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)) and value in (0, 1):
        return int(value)
    if isinstance(value, str) and value.strip() in ("0", "1"):
        return int(value.strip())
    raise DataFormatError(f"{where}: {key} must be 0 or 1, got {value!r}")


def json_objects(path: Path, lines: Iterable[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-blank JSON-lines line; :class:`DataFormatError`
    naming ``file:line`` for invalid JSON or a line that is not an object."""
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataFormatError(f"{path}:{lineno}: invalid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(row, dict):
            raise DataFormatError(f"{path}:{lineno}: expected a JSON object per line, got {type(row).__name__}")
        yield lineno, row


def read_jsonl(path: str | Path, required: tuple[str, ...]) -> list[dict[str, Any]]:
    """Read a jsonl file whose rows are objects holding ``required`` keys.

    Blank lines are skipped. Raises :class:`DataFormatError` (``file:line``) on bad JSON,
    a non-object row, a missing key or a non-string ``func``.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"dataset file not found: {path}")
    rows: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as fh:
        for lineno, row in json_objects(path, fh):
            where = f"{path}:{lineno}"
            missing = [k for k in required if k not in row]
            if missing:
                raise DataFormatError(f"{where}: missing key(s) {missing}; row has {sorted(row)}")
            if "func" in row and not isinstance(row["func"], str):
                raise DataFormatError(f"{where}: func must be a string, got {type(row['func']).__name__}")
            row["_line"] = lineno
            rows.append(row)
    return rows


def _split_file(path_or_dir: str | Path, split: str | None, suffix: str) -> Path:
    path = Path(path_or_dir)
    if path.is_dir():
        if split is None:
            raise ValueError(f"{path} is a directory: pass split= one of {SPLITS}")
        return path / f"{split}{suffix}"
    return path


def load_devign(path_or_dir: str | Path, split: str | None = None) -> pd.DataFrame:
    """Devign rows as a DataFrame with ``func`` (str) and ``target`` (0/1 int).

    ``path_or_dir`` is a jsonl file, or a directory with ``{split}.jsonl``.
    """
    path = _split_file(path_or_dir, split, ".jsonl")
    rows = read_jsonl(path, ("func", "target"))
    for row in rows:
        row["target"] = _binary_label(row["target"], f"{path}:{row['_line']}", "target")
    df = pd.DataFrame(rows, columns=["func", "target", "idx", "project", "commit_id", "_line"])
    df = df.drop(columns="_line").dropna(axis=1, how="all")
    df["target"] = df["target"].astype("int64")
    logger.info("loaded %d Devign rows from %s", len(df), path)
    return df.reset_index(drop=True)


def read_functions(path: str | Path) -> dict[str, str]:
    """BigCloneBench ``data.jsonl`` as ``{idx (str): func}``; duplicate ids are errors."""
    path = Path(path)
    functions: dict[str, str] = {}
    for row in read_jsonl(path, ("func", "idx")):
        key = str(row["idx"]).strip()
        if key in functions:
            raise DataFormatError(f"{path}:{row['_line']}: duplicate idx {key!r}")
        functions[key] = row["func"]
    return functions


def read_pairs(path: str | Path, functions: dict[str, str]) -> pd.DataFrame:
    """Read ``idx1 idx2 label`` lines (tabs or spaces) and join the function text."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"pair file not found: {path}")
    records = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            parts = line.split()
            if not parts:
                continue
            where = f"{path}:{lineno}"
            if len(parts) != 3:
                raise DataFormatError(
                    f"{where}: expected 'idx1 idx2 label', got {len(parts)} field(s): {line.strip()!r}"
                )
            a, b, label = parts
            for key in (a, b):
                if key not in functions:
                    raise DataFormatError(f"{where}: function id {key!r} is not in data.jsonl")
            records.append((functions[a], functions[b], _binary_label(label, where, "label"), a, b))
    df = pd.DataFrame(records, columns=["func1", "func2", "label", "idx1", "idx2"])
    df["label"] = df["label"].astype("int64")
    return df


def load_bigclonebench(data_dir: str | Path, split: str, functions: dict[str, str] | None = None) -> pd.DataFrame:
    """Clone pairs of ``{data_dir}/{split}.txt`` joined with ``{data_dir}/data.jsonl``.

    ``split`` may also be a path to a pair file. Pass ``functions`` (from
    :func:`read_functions`) to avoid re-reading ``data.jsonl`` for several splits.
    """
    data_dir = Path(data_dir)
    pair_file = Path(split) if Path(split).suffix == ".txt" else data_dir / f"{split}.txt"
    if functions is None:
        functions = read_functions(data_dir / "data.jsonl")
    df = read_pairs(pair_file, functions)
    logger.info("loaded %d BigCloneBench pairs from %s", len(df), pair_file)
    return df


# ---------------------------------------------------------------------- Hugging Face hub
def _hub_loader() -> Callable[..., Any]:
    """``datasets.load_dataset``, or an error naming the ``datasets`` extra."""
    from .._optional import require

    return require("datasets", "CodeXGLUE data from the Hugging Face hub").load_dataset


def _hub_split(split: str) -> str:
    return "validation" if split == "valid" else split


def load_devign_hub(split: str, name: str = HUB_DEVIGN) -> pd.DataFrame:
    """Devign from the Hugging Face hub (online only; needs ``datasets``)."""
    load_dataset = _hub_loader()

    ds = load_dataset(name, split=_hub_split(split)).to_pandas()
    df = pd.DataFrame({"func": ds["func"].astype(str), "target": ds["target"].astype("int64")})
    for col in ("project", "commit_id"):
        if col in ds:
            df[col] = ds[col]
    df["idx"] = ds["id"] if "id" in ds else range(len(ds))
    return df


def load_bigclonebench_hub(split: str, name: str = HUB_BIGCLONEBENCH) -> pd.DataFrame:
    """BigCloneBench pairs from the Hugging Face hub (online only; needs ``datasets``)."""
    load_dataset = _hub_loader()

    ds = load_dataset(name, split=_hub_split(split)).to_pandas()
    return pd.DataFrame(
        {
            "func1": ds["func1"].astype(str),
            "func2": ds["func2"].astype(str),
            "label": ds["label"].astype("int64"),
            "idx1": ds["id1"].astype(str),
            "idx2": ds["id2"].astype(str),
        }
    )


# ---------------------------------------------------------------------- tasks
@dataclass(frozen=True)
class TaskSpec:
    """How a task's DataFrame is read and which columns the models consume."""

    name: str
    code_columns: tuple[str, ...]
    label_column: str
    local: Callable[[Path, str], pd.DataFrame]
    hub: Callable[[str], pd.DataFrame]

    @property
    def is_pair(self) -> bool:
        return len(self.code_columns) == 2


TASKS: dict[str, TaskSpec] = {
    "devign": TaskSpec("devign", ("func",), "target", lambda d, s: load_devign(d, s), load_devign_hub),
    "bigclonebench": TaskSpec(
        "bigclonebench", ("func1", "func2"), "label", lambda d, s: load_bigclonebench(d, s), load_bigclonebench_hub
    ),
}


def get_task(task: str) -> TaskSpec:
    """The :class:`TaskSpec` called ``task`` (``devign`` or ``bigclonebench``)."""
    try:
        return TASKS[task]
    except KeyError:
        raise ValueError(f"unknown task {task!r}; expected one of {sorted(TASKS)}") from None


def load_task(task: str, split: str, data_dir: str | Path | None = None) -> pd.DataFrame:
    """One split of ``task`` from ``data_dir`` (CodeXGLUE layout), or from the hub when
    ``data_dir`` is None. ``data_dir`` may be the task folder or its parent."""
    spec = get_task(task)
    if data_dir is None:
        return spec.hub(split)
    data_dir = Path(data_dir)
    if (data_dir / spec.name).is_dir():
        data_dir = data_dir / spec.name
    return spec.local(data_dir, split)
