"""MLproject entry point ``gate``: judge a registered student with a gate policy and
move its ``champion`` alias only if it passes. Without ``--evaluation-run-id`` the
student is first evaluated on the test split against its tagged teacher.
Exit code 0 when the version passed, 1 when it failed or the promotion was refused."""

from __future__ import annotations

import argparse
import sys

from _args import add_data_args, setup


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    add_data_args(parser)
    parser.add_argument("--model-name", required=True)
    parser.add_argument("--version", required=True)
    parser.add_argument("--policy", default="auto", help="auto (the profile's), quick, a preset or a policy YAML path")
    parser.add_argument("--evaluation-run-id", default="", help="reuse this evaluation run instead of evaluating")
    parser.add_argument("--alias", default="champion")
    args = parser.parse_args(argv)
    setup()
    import mlflow

    from mlflow_metacompress.gates import PromotionRefusedError, promote
    from mlflow_metacompress.pipeline.data import load_task_data
    from mlflow_metacompress.pipeline.stages import gate_stage
    from mlflow_metacompress.pipeline.profiles import get_profile, resolve_policy

    profile = get_profile(args.profile)
    policy = resolve_policy(args.policy, profile)
    if args.evaluation_run_id:
        try:
            decision = promote(args.model_name, args.version, args.evaluation_run_id, policy, alias=args.alias)
        except PromotionRefusedError as exc:
            print(f"{exc.decision.summary()}\nrefused: {exc}")
            return 1
        print(decision.summary())
        return 0 if decision.passed else 1
    data = load_task_data(args.task, args.data_dir or None, profile, args.seed)
    with mlflow.start_run(run_name=f"gate-{args.model_name}-v{args.version}"):
        outcome = gate_stage("", args.model_name, args.version, data, profile, policy, args.alias, args.seed,
                             progress=args.progress == "true")
    print(f"{args.model_name} v{args.version}: {outcome.verdict}; alias {args.alias!r} "
          f"{'moved' if outcome.alias_moved else 'not moved'}")
    for message in outcome.failed_checks:
        print(f"  FAIL {message}")
    return 0 if outcome.verdict == "passed" else 1


if __name__ == "__main__":
    sys.exit(main())
