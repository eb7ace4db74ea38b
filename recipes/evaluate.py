"""MLproject entry point ``evaluate``: the metacompress evaluation of one registered
student against its teacher (transformations and the profile's attacks) on the test split."""

from __future__ import annotations

import argparse
import json
import sys

from _args import add_data_args, add_threads_arg, bars, checked_threads, job_run, run_main, setup


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    add_data_args(parser)
    parser.add_argument("--model-uri", required=True, help="student model URI, e.g. models:/name/1")
    parser.add_argument(
        "--teacher", default="", help="teacher model URI (default: the student's metacompress.teacher tag)"
    )
    add_threads_arg(parser)
    args = parser.parse_args(argv)
    threads = checked_threads(args)
    setup()

    from mlflow_metacompress.pipeline.data import load_task_data
    from mlflow_metacompress.pipeline.stages import evaluate_stage
    from mlflow_metacompress.profiles import get_profile

    profile = get_profile(args.profile, args.task)
    data = load_task_data(args.task, args.data_dir or None, profile, args.seed)
    with job_run(f"evaluate-{data.dataset}"):
        result = evaluate_stage(
            args.model_uri, data, profile, args.teacher or None, args.seed, progress=bars(args), threads=threads
        )
    print(json.dumps(dict(sorted(result.metrics.items())), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
