"""``harness qualify``: plan + run + report in one command, in rounds (every row first, then only the
undecided ones); the gate is its exit code."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness import jsonio
from harness.backends import registry
from harness.cli import option_groups, requests
from harness.cli.checked_types import nonempty_path
from harness.cli.command import Command
from harness.cli.commands.plan import decided
from harness.cli.output import EXIT_INFRASTRUCTURE, Output, exit_code, given, policy, said, suggested
from harness.errors import InputError


def arguments(parser: argparse.ArgumentParser) -> None:
    option_groups.matrix_arg(parser)
    option_groups.run_args(parser, cluster_help=False)
    option_groups.verbosity_args(parser)
    parser.add_argument(
        "--report-out", type=nonempty_path, help="report folder (default: reports/<plan name>)"
    )
    parser.add_argument(
        "--all-rounds",
        action="store_true",
        help="run every round of the matrix for every row (default: 3 rounds, then more, up to the "
        "matrix's rounds, only for the rows still undecided)",
    )
    option_groups.strict_arg(parser)
    option_groups.history_arg(
        parser, "also add the results to this history folder once judged (harness history add)"
    )


def handle(args: argparse.Namespace, out: Output) -> int:
    from harness.executors import launch
    from harness.report import ownership, pipeline
    from harness.workflows import qualify

    if args.backend == "k8s" or args.dry_run:
        raise InputError.one(
            "--backend", "", "qualify runs and judges; 'run --backend k8s --dry-run' prints the Jobs"
        )
    if args.history is not None:  # refused before the work, not after it: the gate's code stays its own
        from harness.history.layout import check_usable

        check_usable(args.history)
    plan = requests.plan(args.matrix, registry.realizing(args.backend), args)
    for line in decided(plan):
        out.say(line)
    missing = requests.torch_check(plan, args)
    if missing:
        out.warn(f"warning: {missing}")
    if len(plan.cells) == 1 and plan.left_out:
        out.warn(
            "only the baseline can be made on this host: its rounds run, and the report compares nothing"
        )
    results = args.out or Path("results") / plan.name
    report_out = jsonio.future_output_folder(args.report_out or Path("reports") / plan.name, "report_out")
    ownership.refuse_inside_report(results, "out")
    ownership.check(report_out, [results], "report_out")  # before the runs, not after them
    request = requests.run_request(args, plan.backend, results)
    args.kept_in = results  # what a Ctrl-C says was kept
    steps = launch.Steps(request, out.say, out.detail, out.console.runs)  # a fresh start: the first only
    done = qualify.run_rounds(plan, results, args.all_rounds, steps, out.say)
    if done.stopped:
        from harness.executors import runs

        if runs.nothing_ran(done.outcomes) is None:  # exit_code says why where the GPUs were the reason
            out.warn(f"no run could start, so no later round is run: {runs.none_started(done.outcomes)}")
        exit_code(done.outcomes, out)  # for what it says: the code is 3 whichever it is
        # no run started, so there is nothing to judge: a run that could not complete, never a regression
        print(f"outcome: infrastructure-failure (exit {EXIT_INFRASTRUCTURE})")
        return EXIT_INFRASTRUCTURE
    if done.busy:  # the report judges what there is; this says what to do instead of more rounds
        again = suggested(args, "qualify", [*given(args), "--fresh"])
        out.warn(
            f"a busy host spoiled these rows: with it quiet (load under its cores), '{again}' moves these "
            "rounds aside and measures again"
        )
    if not done.measured and not done.busy:  # a finished folder: say so, and how to get more
        out.say(
            f"nothing was left to decide: {results} already held every round this needed, from earlier "
            f"runs, and they are kept ({done.asked}; the matrix asks at most {plan.rounds}); for more, "
            f"raise 'rounds:' in {args.matrix} (qualify then runs only the undecided rows), or run with "
            "--fresh to measure everything again"
        )
    code = said(pipeline.report(plan, [results], report_out, policy(args), out.warn))
    if args.history is not None:
        from harness.history import add

        kept = add.add(args.history, [results])
        out.say(
            f"history {args.history}: {len(kept.added)} run(s) added, {len(kept.already)} held already, "
            f"{kept.runs} in all"
        )
    return code


COMMAND = Command(
    "qualify",
    "plan + run + report: exit 0 no regression, 1 a regression, 3 a run could not complete",
    "--matrix matrix.yaml",
    arguments,
    handle,
    codes=True,
)
