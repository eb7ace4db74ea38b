"""``metacompress evaluate``: run the MetaCompress evaluator (arXiv 2511.05476) on a data
file in a new MLflow run and print the headline metrics and the run id.

Example::

    metacompress evaluate --student models:/vuln-student/1 --teacher models:/vuln-teacher@champion \\
        --data test.jsonl --targets target --evaluator-config '{"transforms": "all"}'

It is ``mlflow.models.evaluate(model=student, data=df, targets=..., model_type="metacompress",
evaluators="metacompress", evaluator_config={"teacher": teacher, **config})``.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Mapping
from typing import Any

from ..cli_common import json_object  # shared with `metacompress gate`; importable from here as before


def headline_names() -> tuple[str, ...]:
    """The metrics printed, in order: accuracy, each registered relation's rate
    (:mod:`mlflow_metacompress.relations`), any violation; each also appears with a
    ``/metamorphic`` suffix when the evaluation ran transformations or attacks."""
    from ..relations import registered_relations

    rates = tuple(r.rate_metric for r in registered_relations())
    return ("teacher_accuracy", "student_accuracy", "accuracy_drop", *rates, "any_violation_rate")


def add_evaluate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "evaluate",
        help="compare a student with its teacher (MR1-MR4) in a new MLflow run",
        description="Run the MetaCompress evaluator (arXiv 2511.05476) on a data file in a new "
        "MLflow run; print the headline metrics and the run id. Exit code 2 on bad input.",
    )
    p.add_argument("--student", required=True, help="student model URI (models:/name/1, runs:/id/model, a local path)")
    p.add_argument("--teacher", required=True, help="teacher model URI")
    p.add_argument("--data", required=True, help="evaluation table: .jsonl, .json, .csv or .parquet")
    p.add_argument(
        "--targets", default=None, help="label column of --data (default: none; accuracy and attacks need it)"
    )
    p.add_argument(
        "--evaluator-config",
        default="{}",
        help='extra evaluator_config as a JSON object, e.g. \'{"transforms": "all", "language": "c"}\'',
    )
    p.add_argument(
        "--threads",
        default=None,
        help="torch threads for inference and speed timings (evaluator_config key threads); "
        "default: $METACOMPRESS_THREADS, else the free cores",
    )
    p.add_argument("--experiment", default=None, help="MLflow experiment name (created if missing)")
    p.add_argument("--run-name", default=None, help="name of the new MLflow run")
    p.add_argument("--json", action="store_true", help="print the run id and every metric as JSON")
    p.set_defaults(func=run)


def cli_evaluator_config(text: str, teacher: str) -> dict[str, Any]:
    """``{"teacher": teacher, **json}``; ``ValueError`` for invalid JSON, a non-object or a second teacher."""
    config = json_object(text)
    if "teacher" in config:
        raise ValueError("--evaluator-config must not set 'teacher'; use --teacher")
    return {"teacher": teacher, **config}


def headline(metrics: Mapping[str, float]) -> list[tuple[str, float]]:
    """The headline metrics present in ``metrics``, each followed by its ``/metamorphic`` form."""
    out = []
    for name in headline_names():
        for key in (name, f"{name}/metamorphic"):
            if key in metrics:
                out.append((key, float(metrics[key])))
    return out


def _format(value: float) -> str:
    return "nan" if math.isnan(value) else f"{value:.4f}"


def _experiment_id(name: str) -> str:
    """The id of experiment ``name``, created if missing (without changing the active experiment)."""
    from mlflow import MlflowClient

    client = MlflowClient()
    found = client.get_experiment_by_name(name)
    return found.experiment_id if found is not None else client.create_experiment(name)


def run(args: argparse.Namespace) -> int:
    """Evaluate ``args.student`` against ``args.teacher`` on ``args.data``; exit code 0."""
    import mlflow

    from ..adapters.model_refs import check_model_uri
    from ..data.tables import read_table
    from .config import check_config

    config = cli_evaluator_config(args.evaluator_config, args.teacher)
    if args.threads is not None:
        from ..threads import parse_threads

        if "threads" in config:
            raise ValueError("--evaluator-config sets 'threads' and so does --threads; give one")
        config["threads"] = parse_threads(args.threads, "--threads")
    check_config(config)  # keys and value types: before any model loads or any run starts
    df = read_table(args.data)
    if args.targets is not None and args.targets not in df.columns:
        raise ValueError(f"--targets column {args.targets!r} not in {args.data}; it has {list(df.columns)}")
    check_model_uri(args.teacher, "teacher")  # MLflow's evaluate loads the student before our evaluator runs
    check_model_uri(args.student, "student")
    experiment_id = _experiment_id(args.experiment) if args.experiment else None
    with mlflow.start_run(run_name=args.run_name, experiment_id=experiment_id) as active:
        result = mlflow.models.evaluate(
            model=args.student,
            data=df,
            targets=args.targets,
            model_type="metacompress",
            evaluators="metacompress",
            evaluator_config=config,
        )
    run_id = active.info.run_id
    if args.json:
        print(json.dumps({"run_id": run_id, "metrics": dict(sorted(result.metrics.items()))}, indent=2))
        return 0
    rows = headline(result.metrics)
    width = max((len(k) for k, _ in rows), default=0)
    for key, value in rows:
        print(f"{key:<{width}}  {_format(value)}")
    print(f"run_id: {run_id}")
    return 0
