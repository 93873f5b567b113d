"""``harness init|plan|run|validate|report|compare|qualify|...``: the one place that prints and picks exit
codes.

Exit codes: 0 fine (qualify/report/compare: no regression), 1 a regression (or, for run, a failed
cell), 2 bad input, 3 an infrastructure failure (runs that could not complete, or this machine
cannot run what was asked), 130 interrupted. A regression outranks an infrastructure failure.

The commands that read results folders are ``cli_results``', those of docker images and Kubernetes
``cli_docker``'s; what every command shares (exit codes, where lines go) is ``cli_output``'s. Each
command imports what it needs (pandas, scipy, jsonschema...) when it runs, so that ``--help`` and a
mistyped command answer at once.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from harness import jsonio
from harness.backends import registry
from harness.cli import docker as cli_docker
from harness.cli import history as cli_history
from harness.cli import parser, requests
from harness.cli import results as cli_results
from harness.cli.console import NORMAL, Console, InertStream
from harness.cli.output import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_INFRASTRUCTURE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PIPE,
    Output,
    exit_code,
    policy,
    said,
)
from harness.errors import BackendUnavailable, HarnessError, InputError

if TYPE_CHECKING:
    from harness.plan.model import Plan

DESCRIPTION = (
    "Which PyTorch x cuDNN combination should we ship, and what changes if we switch? Plan a version "
    "matrix, run the workload suite in every cell, and judge each cell against the baseline."
)


def main(argv: list[str] | None = None, prog: str = parser.PROG) -> int:
    """The command's exit code (the installed ``harness`` script calls this; ``python -m harness`` passes
    its own ``prog``). Everything it prints passes through ``InertStream``: result text never drives the
    terminal; a reader that leaves (``| head``) ends it quietly, as it ends Unix tools."""
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = InertStream(sys.stdout), InertStream(sys.stderr)
    try:
        code = _command(argv, prog)
        sys.stdout.flush()  # here, where a reader that left is caught, not at the interpreter's exit
        return code
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), streams[0].fileno())  # nothing more to flush at exit
        return EXIT_PIPE
    finally:
        sys.stdout, sys.stderr = streams


def _command(argv: list[str] | None, prog: str) -> int:
    args = parser.parser(DESCRIPTION, prog).parse_args(argv)
    args.prog = prog  # what the next steps a command suggests are called with
    out = Output(Console(getattr(args, "verbosity", NORMAL)))
    try:
        return COMMANDS[args.command](args, out)
    except InputError as exc:  # the library names what the command line gave by its setting; here, its flag
        for problem in exc.problems:
            out.warn(f"error: {requests.flagged(problem)}")
        return EXIT_BAD_INPUT
    except BackendUnavailable as exc:  # this machine cannot run what was asked, or the run had to stop
        out.warn(f"error: {requests.flagged_error(exc)}")
        return EXIT_INFRASTRUCTURE
    except HarnessError as exc:
        out.warn(f"error: {requests.flagged_error(exc)}")
        return EXIT_FAILED
    except KeyboardInterrupt:
        out.warn("interrupted")
        return EXIT_INTERRUPTED
    finally:
        out.console.close()


def _init(args: argparse.Namespace, out: Output) -> int:
    from harness.plan import starter

    path = shlex.quote(str(starter.write(args.matrix, args.force)))
    print(
        f"wrote {path}; edit it, then '{args.prog} plan --matrix {path}' lists its cells and "
        f"'{args.prog} qualify --matrix {path}' runs and judges them"
    )
    return EXIT_OK


def _plan(args: argparse.Namespace, out: Output) -> int:
    from tabulate import tabulate

    from harness.backends.host import has_nvidia_gpu
    from harness.plan.axes import AXES

    plan = requests.plan(args.matrix, None, args)
    if args.json:
        print(json.dumps(plan.to_json(), indent=2))
        return EXIT_OK
    rows = [
        [c.id + (" *" if c.id == plan.baseline_id else ""), *(c.text(a) for a in AXES)] for c in plan.cells
    ]
    print(tabulate(rows, headers=["cell (* baseline)", *(a.title for a in AXES)]))
    print(
        f"\n{len(plan.cells)} cells x {len(plan.knob_sets)} knob sets, backend {plan.backend}, "
        f"suite profile {plan.suite.profile}, regression threshold {plan.regression_pct:g}%"
    )
    decided = _decided(plan)
    if decided:
        print("\n" + "\n".join(decided))
    if plan.backend == "local" and not has_nvidia_gpu():
        for note in (_cuda_builds_without_a_gpu(plan), _cudnn_releases_without_a_gpu(plan)):
            if note:
                print(f"\nnote: {note}")
    return EXIT_OK


def _decided(plan: Plan) -> list[str]:
    """What this host made of the matrix's conditional cuDNN sources: the release each ``{wheel: newest}``
    is, and each cell left out with why (named, never run and failed)."""
    lines = [f"chosen here: {c.written.label} is cell {c.cell_id}: {c.how}" for c in plan.chosen]
    if plan.left_out:
        count = f"{len(plan.left_out)} cell" + ("s" if len(plan.left_out) > 1 else "")
        lines.append(f"left out here ({count} of the matrix; not run, not failed):")
        lines += [f"  {left.cell.label}: {left.why}" for left in plan.left_out]
    return lines


def _cudnn_releases_without_a_gpu(plan: Plan) -> str | None:
    """On a host with no NVIDIA GPU, a cell of a cuDNN release or a system cuDNN cannot run: the suite runs
    on the CPU, where torch never calls cuDNN, and a CPU build of torch has none to replace."""
    chosen = sorted({c.cudnn.label for c in plan.cells if c.cudnn.kind in ("wheel", "system")})
    if not chosen:
        return None
    return (
        f"this host has no NVIDIA GPU: the cells of cuDNN {', '.join(chosen)} need one (on a CPU torch never "
        "calls cuDNN, and a CPU build of torch has none to replace); run this matrix on a GPU host"
    )


def _cuda_builds_without_a_gpu(plan: Plan) -> str | None:
    """On a host with no NVIDIA GPU, a bare torch version installs PyPI's default, a CUDA build with some 2.5
    GB of nvidia-* wheels per environment: say so, and how to ask for the CPU build instead."""
    bare = sorted({c.torch for c in plan.cells if c.torch[:1].isdigit() and "+" not in c.torch})
    if not bare:
        return None
    cpu = ", ".join(f"'{version}+cpu'" for version in bare)
    return (
        f"this host has no NVIDIA GPU, and torch {', '.join(bare)} from PyPI is a CUDA build (with about "
        f"2.5 GB of nvidia-* wheels in each environment); for a CPU run, write torch: [{cpu}] and pass "
        "--index-url https://download.pytorch.org/whl/cpu (or a --wheelhouse that holds those builds)"
    )


def _validate(args: argparse.Namespace, out: Output) -> int:
    from harness.results import documents

    bad = 0
    for path in args.files:
        _, problems = documents.check(path)
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
        bad += bool(problems)
        if not problems:
            print(f"ok: {path}")
    return EXIT_BAD_INPUT if bad else EXIT_OK


def _run(args: argparse.Namespace, out: Output) -> int:
    if args.backend == "k8s" or args.dry_run:
        return cli_docker.k8s(args, out)
    from harness.executors import launch

    plan = requests.plan(args.matrix, registry.realizing(args.backend), args)
    for line in _decided(plan):
        out.say(line)
    request = requests.run_request(args, plan.backend, args.out or Path("results") / plan.name)
    return exit_code(launch.run(plan, request, out.say, out.detail, out.console.runs), out)


def _slurm_task(args: argparse.Namespace, out: Output) -> int:
    from harness.executors.slurm import task as slurm_task

    slurm_task.run_task(args.results, args.tasks, args.index, out.say)
    return EXIT_OK  # the task ran: a failed cell is a result, not a failed task


def _qualify(args: argparse.Namespace, out: Output) -> int:
    from harness.executors import launch
    from harness.report import pipeline as folders
    from harness.workflows import qualify

    if args.backend == "k8s" or args.dry_run:
        raise InputError.one(
            "--backend", "", "qualify runs and judges; 'run --backend k8s --dry-run' prints the Jobs"
        )
    plan = requests.plan(args.matrix, registry.realizing(args.backend), args)
    for line in _decided(plan):
        out.say(line)
    if len(plan.cells) == 1 and plan.left_out:
        out.warn(
            "only the baseline can be made on this host: its rounds run, and the report compares nothing"
        )
    results = args.out or Path("results") / plan.name
    report_out = jsonio.output_folder(args.report_out or Path("reports") / plan.name, "report_out")
    request = requests.run_request(args, plan.backend, results)
    steps = launch.Steps(request, out.say, out.detail, out.console.runs)  # a fresh start: the first only
    done = qualify.run_rounds(plan, results, args.all_rounds, steps, out.say)
    if done.stopped:
        from harness.executors import runs

        if runs.nothing_ran(done.outcomes) is None:  # exit_code says why where the GPUs were the reason
            out.warn(f"no run could start, so no later round is run: {runs.none_started(done.outcomes)}")
        return exit_code(done.outcomes, out)
    if done.busy:  # the report judges what there is; this says what to do instead of more rounds
        again = shlex.join(["python", "-m", "harness", "qualify", "--matrix", str(args.matrix)])
        out.warn(
            f"a busy host spoiled these rows: with it quiet (load under its cores), '{again} --out "
            f"{shlex.quote(str(results))} --fresh' moves these rounds aside and measures again"
        )
    if not done.measured and not done.busy:  # a finished folder: say so, and how to get more
        out.say(
            f"nothing was left to decide: {results} already held every round this needed, from earlier "
            f"runs, and they are kept ({done.asked}; the matrix asks at most {plan.rounds}); for more, "
            f"raise 'rounds:' in {args.matrix} (qualify then runs only the undecided rows), or run with "
            "--fresh to measure everything again"
        )
    code = said(folders.report(plan, [results], report_out, policy(args), out.warn))
    if args.history is not None:
        from harness.history import add

        kept = add.add(args.history, [results])
        out.say(
            f"history {args.history}: {len(kept.added)} run(s) added, {len(kept.already)} held already, "
            f"{kept.runs} in all"
        )
    return code


def _bisect(args: argparse.Namespace, out: Output) -> int:
    from harness.workflows.bisect import bisect, rounds_said, run_with

    plan = requests.plan(args.matrix, registry.realizing(args.backend), args)
    workload, _, dtype = args.row.partition(":")
    results = args.out or Path("results") / f"{plan.name}-bisect" / f"{workload}-{dtype}"
    # a fresh search measures every release it needs again: no folder's earlier rounds are reused
    reuse = [] if args.fresh else args.results or [p for p in [Path("results") / plan.name] if p.is_dir()]
    run = run_with(requests.run_request(args, plan.backend, results), out.say, out.detail)
    found = bisect(plan, args.row, args.good, args.bad, results, reuse, run, out.say)
    ratio = f"{found.ratio:.3f}" if found.ratio is not None else "n/a"
    ran = f", what ran: {found.what_ran}" if found.what_ran else ""
    if found.located and not found.significant:
        print(
            f"{found.row}: the likeliest step is {found.before.label} -> {found.after.label} "
            f"({found.verdict}, ratio {ratio}{ran}), but no step is shown to be a change: {args.bad} "
            f"against {args.good} is {found.ends}. The search followed each release's median; more rounds "
            f"(raise 'rounds:' in {args.matrix} past its {plan.rounds}) or a quieter host decide it"
        )
    elif found.located:
        print(
            f"{found.row}: the change began at {found.before.label} -> {found.after.label} "
            f"({found.verdict}, ratio {ratio}{ran})"
        )
    else:
        print(
            f"{found.row}: {args.bad} is not judged different from {args.good} ({found.verdict}, ratio "
            f"{ratio}): there is no change to locate; for a change, pick a bad release that a report of "
            "the sweep calls slower or faster (its 'Where each change began')"
        )
    for probe in found.probes:
        how = "measured" if probe.measured else "reused"
        print(f"  {probe.release.label}: {probe.verdict} ({rounds_said(probe.rounds)}, {how})")
    where = f"; new results in {results}/" if found.measured else "; every round was reused, none measured"
    print(
        f"measured {found.measured} of the {found.between} releases from {args.good} to {args.bad} "
        f"(a full sweep measures {found.between}){where}"
    )
    return EXIT_OK


COMMANDS = {
    "init": _init,
    "plan": _plan,
    "validate": _validate,
    "run": _run,
    "images": cli_docker.images,
    "slurm-task": _slurm_task,
    "rerun": cli_docker.rerun,
    "gather": cli_docker.gather,
    "report": cli_results.report,
    "compare": cli_results.compare,
    "repro": cli_results.repro,
    "qualify": _qualify,
    "bisect": _bisect,
    "history": cli_history.history,
    "site": cli_history.site,
}
