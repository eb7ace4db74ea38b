"""MLproject entry point ``distill``: distil and register one student per method
(``metacompress-<dataset>-<method>``) from a registered teacher."""

from __future__ import annotations

import argparse
import sys
import tempfile

from _args import add_data_args, add_device_args, bars, job_run, run_main, setup, trainer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    add_data_args(parser)
    add_device_args(parser)
    parser.add_argument(
        "--teacher",
        required=True,
        help="teacher model URI, e.g. models:/metacompress-generated-vulnerability-teacher/1",
    )
    parser.add_argument(
        "--methods",
        default="all",
        help="comma-separated methods, or all (every module of mlflow_metacompress/distill/methods/)",
    )
    parser.add_argument("--size-mb", type=float, default=0.0, help="student size target in MB (0: the profile's)")
    args = parser.parse_args(argv)
    setup()
    devices = trainer(args)

    from mlflow_metacompress.pipeline.data import load_task_data
    from mlflow_metacompress.pipeline.stages import resolve_methods, student_stage
    from mlflow_metacompress.profiles import get_profile

    profile = get_profile(args.profile, args.task)
    methods = resolve_methods(args.methods)
    data = load_task_data(args.task, args.data_dir or None, profile, args.seed)
    with job_run(f"distill-{data.dataset}"), tempfile.TemporaryDirectory(prefix="metacompress-distill-") as cache:
        for method in methods:
            result = student_stage(
                data, profile, args.teacher, method, args.size_mb or None, args.seed, cache, bars(args), trainer=devices
            )
            print(
                f"{method}: {result.model_uri} test_acc={result.metrics.get('test_acc', float('nan')):.4f} "
                f"size_mb={result.metrics.get('size_mb', float('nan')):.3f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
