"""MLproject entry point ``teacher``: fine-tune and register the teacher
(``metacompress-<dataset>-teacher``) on the task's labelled half."""

from __future__ import annotations

import argparse
import sys

from _args import add_data_args, add_device_args, bars, job_run, run_main, setup, trainer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    add_data_args(parser)
    add_device_args(parser)
    args = parser.parse_args(argv)
    setup()
    devices = trainer(args)

    from mlflow_metacompress.pipeline.data import load_task_data
    from mlflow_metacompress.pipeline.stages import teacher_stage
    from mlflow_metacompress.profiles import get_profile

    profile = get_profile(args.profile, args.task)
    data = load_task_data(args.task, args.data_dir or None, profile, args.seed)
    with job_run(f"teacher-{data.dataset}"):
        result = teacher_stage(data, profile, args.seed, bars(args), trainer=devices)
    print(
        f"teacher {result.model_uri}: test_acc={result.metrics.get('test_acc', float('nan')):.4f} "
        f"size_mb={result.metrics.get('size_mb', float('nan')):.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
