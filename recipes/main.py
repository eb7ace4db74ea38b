"""MLproject entry point ``main``: the whole pipeline (data → teacher → students →
metacompress evaluation → gate → comparison table)."""

from __future__ import annotations

import argparse
import sys

from _args import add_data_args, add_device_args, run_main, setup, trainer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    add_data_args(parser)
    add_device_args(parser)
    parser.add_argument("--size-mb", type=float, default=0.0, help="student size target in MB (0: the profile's)")
    parser.add_argument("--policy", default="auto", help="auto (the profile's), quick, a preset or a policy YAML path")
    parser.add_argument(
        "--methods",
        default="all",
        help="comma-separated methods, or all (every module of mlflow_metacompress/distill/methods/)",
    )
    parser.add_argument(
        "--reference",
        choices=("true", "false"),
        default="false",
        help="true: train a second teacher with another seed and gate each student's excess over it",
    )
    args = parser.parse_args(argv)
    uri = setup()
    devices = trainer(args)
    from mlflow_metacompress.pipeline import PipelineConfig, run_pipeline

    result = run_pipeline(
        PipelineConfig(
            task=args.task,
            data_dir=args.data_dir or None,
            size_mb=args.size_mb or None,
            policy=args.policy,
            seed=args.seed,
            profile=args.profile,
            methods=args.methods,
            progress=args.progress == "true",
            settings=devices,
            reference=args.reference == "true",
        )
    )
    print(f"\nMetaCompress pipeline run {result.run_id} (tracking {uri})\n")
    print(result.markdown)
    for method, error in result.errors.items():
        print(f"method {method} failed: {error}", file=sys.stderr)
    return 1 if result.errors else 0


if __name__ == "__main__":
    sys.exit(run_main(main))
