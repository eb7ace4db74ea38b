"""Data and naming for the end-to-end pipeline: the task, its splits and model names.

The pipeline's ``task`` is ``vulnerability`` (Devign-shaped: ``func``/``target``) or
``clone`` (BigCloneBench-shaped: ``func1``/``func2``/``label``). With an empty
``data_dir`` the splits come from the embedded generators
(:mod:`mlflow_metacompress.data.generators`: Juliet-style C functions and C clone pairs,
generated, not real); otherwise from a CodeXGLUE folder read by
:mod:`mlflow_metacompress.data.codexglue` (Devign, Zhou et al., NeurIPS 2019;
BigCloneBench, Svajlenko et al., 2014). Each split is capped at the profile's budget by
a seeded, label-stratified sample (:func:`..data.sampling.cap_rows`, the same sampler
as distillation's ``limit``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..data.sampling import cap_rows
from ..profiles import Profile

logger = logging.getLogger(__name__)

TASK_ALIASES = {
    "vulnerability": "vulnerability",
    "devign": "vulnerability",
    "defect": "vulnerability",
    "clone": "clone",
    "bigclonebench": "clone",
}
CODEXGLUE_TASK = {"vulnerability": "devign", "clone": "bigclonebench"}


@dataclass
class TaskData:
    """The splits of one pipeline run and where they came from."""

    task: str  # vulnerability | clone
    codexglue_task: str  # devign | bigclonebench (the loaders' and distillers' name)
    source: str  # "generated" or the data directory
    frames: dict[str, pd.DataFrame]
    code_columns: tuple[str, ...]
    label_column: str

    @property
    def dataset(self) -> str:
        """Short name used in registered model names: ``generated-<task>`` or the CodeXGLUE task."""
        return f"generated-{self.task}" if self.source == "generated" else self.codexglue_task

    @property
    def language(self) -> str:
        """The code's language: C for Devign and for every generated task (the clone
        generator writes C too), Java for BigCloneBench. The pipeline sets it in
        ``evaluator_config``, so the evaluator never has to detect (and warn about) it."""
        return "c" if self.source == "generated" or self.codexglue_task == "devign" else "java"

    def model_name(self, role: str) -> str:
        """Registered model name of the teacher (``role="teacher"``) or of a method's student."""
        return f"metacompress-{self.dataset}-{role}"

    def sizes(self) -> dict[str, int]:
        return {split: len(df) for split, df in self.frames.items()}


def normalise_task(task: str) -> str:
    """``vulnerability`` or ``clone`` (``devign``/``bigclonebench`` are accepted too)."""
    try:
        return TASK_ALIASES[task.strip().lower()]
    except (KeyError, AttributeError):
        raise ValueError(f"unknown task {task!r}; expected 'vulnerability' or 'clone'") from None


def load_task_data(task: str, data_dir: str | Path | None, profile: Profile, seed: int = 0) -> TaskData:
    """Splits for ``task``: generated when ``data_dir`` is empty, else read from
    ``data_dir`` (a CodeXGLUE task folder or its parent), capped at the profile's budget."""
    from ..data.codexglue import get_task, load_task

    task = normalise_task(task)
    spec = get_task(CODEXGLUE_TASK[task])
    if data_dir in (None, ""):
        from ..data.generators import make_splits

        frames = make_splits(task, profile.generated_rows, seed)
        source = "generated"
        logger.info("generated %s data (%d samples, seed %d): embedded, not real", task, profile.generated_rows, seed)
    else:
        folder = Path(data_dir).expanduser()
        if not folder.exists():
            raise FileNotFoundError(f"data_dir {str(data_dir)!r} does not exist (resolved to {folder.resolve()})")
        frames = {split: load_task(spec.name, split, folder) for split in ("train", "valid", "test")}
        source = str(folder)
    caps = {"train": profile.train_rows, "valid": profile.valid_rows, "test": profile.eval_rows}
    for split, df in frames.items():
        missing = [c for c in (*spec.code_columns, spec.label_column) if c not in df.columns]
        if missing:
            raise KeyError(f"{split} split of {source} lacks column(s) {missing}; it has {list(df.columns)}")
        if df.empty:
            raise ValueError(f"{split} split of {source} is empty")
        frames[split] = cap_rows(df, caps[split], spec.label_column, seed)
    data = TaskData(task, spec.name, source, frames, tuple(spec.code_columns), spec.label_column)
    logger.info("%s data from %s: %s rows", task, source, data.sizes())
    return data


def judged_rows(model_uri: str, split: str = "test") -> pd.DataFrame:
    """The rows the main job judged a registered student on (``split="test"``), rebuilt
    from what it logged: the version's ``metacompress.evaluation_run_id`` tag leads to its
    evaluation run, whose parent (the ``main`` pipeline run) logged ``pipeline.task``,
    ``pipeline.data_source``, ``pipeline.profile`` and ``pipeline.seed``; the same
    :func:`load_task_data` call then gives the same capped, seeded split, so an
    evaluation on these rows reproduces the job's metrics (MR1 row for row).

    ``model_uri`` is ``models:/<name>/<version>`` or ``models:/<name>@<alias>``.
    """
    from mlflow import MlflowClient

    from ..distill.soft_labels import resolve_model_uri
    from ..gates.registry import TAG_RUN
    from ..profiles import get_profile

    pinned = resolve_model_uri(model_uri)
    if not pinned.startswith("models:/"):
        raise ValueError(f"judged_rows needs a registered model (models:/<name>/<version>), got {model_uri!r}")
    name, _, version = pinned[len("models:/") :].rpartition("/")
    client = MlflowClient()
    run_id = (client.get_model_version(name, version).tags or {}).get(TAG_RUN)
    if not run_id:
        raise ValueError(f"{pinned} has no {TAG_RUN!r} tag: the main job has not judged it")
    keys = ("pipeline.task", "pipeline.data_source", "pipeline.profile", "pipeline.seed")
    run, params = client.get_run(run_id), {}
    for _ in range(4):  # up from the evaluation run to the main run that logged the budgets
        parent = run.data.tags.get("mlflow.parentRunId")
        if parent is None:
            break
        run = client.get_run(parent)
        params = run.data.params
        if all(k in params for k in keys):
            break
    missing = [k for k in keys if k not in params]
    if missing:
        raise ValueError(
            f"the evaluation run {run_id} of {pinned} was not started by a main pipeline run "
            f"(no ancestor logged params {missing})"
        )
    source = params["pipeline.data_source"]
    data = load_task_data(
        params["pipeline.task"],
        None if source == "generated" else source,
        get_profile(params["pipeline.profile"], params["pipeline.task"]),
        int(params["pipeline.seed"]),
    )
    if split not in data.frames:
        raise ValueError(f"unknown split {split!r}; expected one of {sorted(data.frames)}")
    return data.frames[split]
