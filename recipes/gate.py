"""MLproject entry point ``gate``: judge a registered student with a gate policy and
move its ``champion`` alias only if it passes. Without ``--evaluation-run-id`` the
student is first evaluated on the test split against its tagged teacher.

A failing (or refused) verdict is an outcome, not an error: the run ends FINISHED with
the tag ``metacompress.verdict`` (passed/failed) and the metric ``gate_passed`` (1/0),
and the exit code is 0. Only a crash exits non-zero (the run is then FAILED). In a CI
script that must stop on a failing student, use ``metacompress gate`` (exit code 1)."""

from __future__ import annotations

import argparse
import sys

from _args import add_data_args, add_threads_arg, bars, checked_threads, job_run, run_main, setup


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    add_data_args(parser)
    parser.add_argument("--model-name", required=True)
    parser.add_argument("--version", required=True)
    parser.add_argument("--policy", default="auto", help="auto (the profile's), quick, a preset or a policy YAML path")
    parser.add_argument("--evaluation-run-id", default="", help="reuse this evaluation run instead of evaluating")
    parser.add_argument("--alias", default="champion")
    add_threads_arg(parser)
    args = parser.parse_args(argv)
    threads = checked_threads(args)
    setup()
    import mlflow

    from mlflow_metacompress.gates import PromotionRefusedError, promote
    from mlflow_metacompress.gates.gate import GATE_PASSED, log_verdict
    from mlflow_metacompress.gates.registry import TAG_VERDICT
    from mlflow_metacompress.pipeline.data import load_task_data
    from mlflow_metacompress.pipeline.stages import gate_stage
    from mlflow_metacompress.profiles import get_profile, resolve_policy

    profile = get_profile(args.profile, args.task)
    policy = resolve_policy(args.policy, profile)
    with job_run(f"gate-{args.model_name}-v{args.version}") as run:
        if args.evaluation_run_id:
            try:
                decision = promote(args.model_name, args.version, args.evaluation_run_id, policy, alias=args.alias)
            except PromotionRefusedError as exc:
                decision = exc.decision
                print(f"{decision.summary()}\nrefused: {exc}")
            else:
                print(decision.summary())
            log_verdict(run.info.run_id, decision)
            return 0
        data = load_task_data(args.task, args.data_dir or None, profile, args.seed)
        outcome = gate_stage(
            "",
            args.model_name,
            args.version,
            data,
            profile,
            policy,
            args.alias,
            args.seed,
            progress=bars(args),
            threads=threads,
        )
        verdict = outcome.tags.get(TAG_VERDICT)  # passed/failed, also when the promotion was refused
        if verdict in ("passed", "failed"):
            mlflow.set_tag(TAG_VERDICT, verdict)
            mlflow.log_metric(GATE_PASSED, 1.0 if verdict == "passed" else 0.0)
    print(
        f"{args.model_name} v{args.version}: {outcome.verdict}; alias {args.alias!r} "
        f"{'moved' if outcome.alias_moved else 'not moved'}"
    )
    for message in outcome.failed_checks:
        print(f"  FAIL {message}")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
