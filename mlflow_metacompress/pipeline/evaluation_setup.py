"""What the evaluate and gate stages (:mod:`.stages`) hand the MetaCompress evaluator (Awal,
Rochan, Roy, arXiv 2511.05476): the profile's ``evaluator_config`` (transformations and at
least one attack), the teacher a registered student was distilled from, and the
evaluation run's name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..profiles import Profile
from .data import TaskData


def evaluator_config(
    data: TaskData,
    profile: Profile,
    seed: int = 0,
    cache_dir: str | Path | None = None,
    progress: bool = True,
    threads: int | str | None = None,
    precision: str | None = None,
) -> dict[str, Any]:
    """The metacompress ``evaluator_config`` of the profile (transformations + attacks),
    with the data's ``language`` set (:attr:`.data.TaskData.language`); ``threads``
    (torch threads of inference) and ``precision`` (the inference precision the job's
    ``--precision`` implies, :meth:`~mlflow_metacompress.distill.devices.TrainerSettings.evaluator_config`)
    only when set."""
    if not profile.attacks:
        raise ValueError(f"profile {profile.name!r} names no attack; the pipeline evaluates with at least one")
    cfg: dict[str, Any] = {
        "code_columns": list(data.code_columns),
        "language": data.language,
        "transforms": profile.transforms,
        "attacks": list(profile.attacks),
        "attack_budget": profile.attack_budget,
        "attack_max_samples": profile.attack_max_samples,
        "batch_size": profile.eval_batch_size,
        "seed": seed,
        "progress": progress,
    }
    if cache_dir is not None:
        cfg["cache_dir"] = str(cache_dir)
    if threads not in (None, "", "auto", 0):
        cfg["threads"] = threads
    if precision:
        cfg["precision"] = precision
    return cfg


def teacher_of(model_uri: str) -> str:
    """The ``metacompress.teacher`` tag of a ``models:/name/version`` or ``models:/name@alias`` URI."""
    from mlflow import MlflowClient

    from ..distill.soft_labels import resolve_model_uri
    from ..gates.promotion import TAG_TEACHER

    pinned = resolve_model_uri(model_uri)
    if not pinned.startswith("models:/"):
        raise ValueError(f"cannot read the teacher of {model_uri!r}: pass teacher=<model URI> explicitly")
    name, _, version = pinned[len("models:/") :].rpartition("/")
    teacher = (MlflowClient().get_model_version(name, version).tags or {}).get(TAG_TEACHER)
    if not teacher:
        raise ValueError(f"{pinned} has no {TAG_TEACHER!r} tag: pass teacher=<model URI> explicitly")
    return teacher


def evaluation_run_name(model_uri: str) -> str:
    """``evaluate-<name>-v<version>`` for ``models:/<name>/<version>`` (the gate's
    ``gate-<name>-v<version>``), else ``evaluate-`` and the URI's last part."""
    if model_uri.startswith("models:/"):
        name, _, version = model_uri[len("models:/") :].rpartition("/")
        if name and version.isdigit():
            return f"evaluate-{name}-v{version}"
    return f"evaluate-{model_uri.rstrip('/').rsplit('/', 1)[-1]}"
