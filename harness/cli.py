"""``harness init|plan|run|validate|report|compare|qualify|...``: the one place that prints and picks exit
codes.

Exit codes: 0 fine (qualify/report/compare: no regression), 1 a regression (or, for run, a failed
cell), 2 bad input, 3 an infrastructure failure (runs that could not complete, or this machine
cannot run what was asked), 130 interrupted. A regression outranks an infrastructure failure.

Each command imports what it needs (pandas, scipy, jsonschema...) when it runs, so that ``--help`` and
a mistyped command answer at once.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import io
import json
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from harness import arguments, jsonio, suite_listing
from harness.backends import gpu_access, registry
from harness.console import NORMAL, Console, InertStream
from harness.errors import BackendUnavailable, HarnessError, InputError

if TYPE_CHECKING:
    from harness.executors.runs import CellOutcome
    from harness.plan.model import Plan
    from harness.report import folders
    from harness.report.verdicts import Outcome, Policy

DESCRIPTION = (
    "Which PyTorch x cuDNN combination should we ship, and what changes if we switch? Plan a version "
    "matrix, run the workload suite in every cell, and judge each cell against the baseline."
)
CONSOLE = Console()  # main() makes the one for its command line (-q, -v)
EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INFRASTRUCTURE, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_PIPE = 141  # the shell's code for a writer whose reader left (128 + SIGPIPE)
# qualify's first rounds for every row; later rounds (up to the matrix's) only for the undecided ones
FIRST_ROUNDS = 3
# the release gate's outcomes (report, compare, qualify); the report and verdict.json record the code
GATE_EXIT: dict[Outcome, int] = {
    "pass": EXIT_OK,
    "pass-with-inconclusive": EXIT_OK,
    "regression": EXIT_FAILED,
    "infrastructure-failure": EXIT_INFRASTRUCTURE,
}


def main(argv: list[str] | None = None, prog: str = arguments.PROG) -> int:
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
    global CONSOLE
    args = arguments.parser(DESCRIPTION, prog).parse_args(argv)
    args.prog = prog  # what the next steps a command suggests are called with
    CONSOLE = Console(getattr(args, "verbosity", NORMAL))
    try:
        return COMMANDS[args.command](args)
    except InputError as exc:
        for problem in exc.problems:
            _warn(f"error: {problem}")
        return EXIT_BAD_INPUT
    except BackendUnavailable as exc:  # this machine cannot run what was asked, or the run had to stop
        _warn(f"error: {exc}")
        return EXIT_INFRASTRUCTURE
    except HarnessError as exc:
        _warn(f"error: {exc}")
        return EXIT_FAILED
    except KeyboardInterrupt:
        _warn("interrupted")
        return EXIT_INTERRUPTED
    finally:
        CONSOLE.close()


def _say(line: str) -> None:
    CONSOLE.say(line)


def _progress(line: str) -> None:  # what a backend says while one run goes on (builds, the suite's lines)
    CONSOLE.detail(line)


def _warn(line: str) -> None:
    CONSOLE.close()  # a warning is never drawn over by the bar
    print(line, file=sys.stderr, flush=True)


def _load_plan(path: Path, backend: str | None = None) -> Plan:
    """The matrix, checked for the backend that will realize its cells (the command line's, else its own)."""
    from harness.plan import matrix

    return matrix.load(path, suite_listing.workload_ids(), registry.cell_problems, backend)


def _init(args: argparse.Namespace) -> int:
    from harness.plan import starter

    path = shlex.quote(str(starter.write(args.matrix, args.force)))
    print(
        f"wrote {path}; edit it, then '{args.prog} plan --matrix {path}' lists its cells and "
        f"'{args.prog} qualify --matrix {path}' runs and judges them"
    )
    return EXIT_OK


def _plan(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from harness.plan.axes import AXES

    plan = _load_plan(args.matrix)
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
    return EXIT_OK


def _validate(args: argparse.Namespace) -> int:
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


def _run(args: argparse.Namespace) -> int:
    if args.backend == "k8s" or args.dry_run:
        return _k8s(args)
    plan = _load_plan(args.matrix, registry.realizing(args.backend))
    return _exit_code(_run_plan(plan, args, args.out or Path("results") / plan.name))


def _run_plan(
    plan: Plan, args: argparse.Namespace, out: Path, rounds: range | None = None
) -> list[CellOutcome]:
    from harness.executors import launch

    request = arguments.run_request(args, plan.backend, out)
    return launch.run(plan, request, _say, _progress, CONSOLE.runs, rounds)


def _exit_code(outcomes: list[CellOutcome]) -> int:
    """0 all ran; 3 nothing could run because the host cannot give the containers their GPUs; else 1."""
    if outcomes and all(o.stage == gpu_access.STAGE for o in outcomes):
        _warn(f"nothing could run: {outcomes[0].reason}")
        return EXIT_INFRASTRUCTURE
    return EXIT_FAILED if any(o.status != "ok" for o in outcomes) else EXIT_OK


def _k8s(args: argparse.Namespace) -> int:
    """Print one Indexed Job per cell (--dry-run), or submit them where a cluster is configured."""
    if args.backend != "k8s":
        raise InputError.one("--dry-run", "", "only --backend k8s has a dry run")
    import yaml

    from harness.executors import k8s_jobs, launch

    plan = _load_plan(args.matrix, "docker")
    cells = launch.select(plan, tuple(args.only or ()))
    jobs = k8s_jobs.render(plan, cells, arguments.build_options(args), arguments.k8s_target(args))
    if args.dry_run:
        print(yaml.safe_dump_all(jobs, sort_keys=False), end="")
        _warn(f"# {len(jobs)} Indexed Jobs, {plan.rounds} completions each")
        return EXIT_OK
    from harness.executors import k8s_submit

    _say(
        f"submitting {len(jobs)} Indexed Jobs ({plan.rounds} completions each) to namespace "
        f"{args.k8s_namespace}"
    )
    return EXIT_OK if k8s_submit.submit(jobs, args.k8s_namespace, _say) else EXIT_FAILED


def _slurm_task(args: argparse.Namespace) -> int:
    from harness.executors import slurm

    slurm.run_task(args.results, args.tasks, args.index, _say)
    return EXIT_OK  # the task ran: a failed cell is a result, not a failed task


def _images(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from harness import images

    plan = _load_plan(args.matrix, "docker")
    options = arguments.build_options(args)
    if args.dry_run:
        for cell in plan.cells:
            rendered = images.render(cell, options, plan.image_python)
            print(f"# ===== {rendered.reference}\n{rendered.dockerfile}")
        return EXIT_OK
    from harness.backends.docker import build_all

    log_dir = args.log_dir or Path("results") / plan.name / "logs"
    rows = [
        [b.cell_id, b.image.reference, b.state, f"{b.seconds:.1f}", b.error or ""]
        for b in build_all(options, plan, log_dir, _say, _progress)
    ]
    print(tabulate(rows, headers=["cell", "image", "state", "seconds", "error"]))
    states = [row[2] for row in rows]
    print(f"{states.count('built')} built, {states.count('cached')} cached, {states.count('FAILED')} failed")
    return EXIT_FAILED if "FAILED" in states else EXIT_OK


def _rerun(args: argparse.Namespace) -> int:
    from harness.executors.rerun import rerun

    out = args.out or Path("results") / "rerun"
    doc, path = rerun(args.result, arguments.settings(args, "docker"), out, _say)
    failure = f": {doc['failure']['reason']}" if doc["failure"] else ""
    print(f"{doc['cell']['id']}: {doc['status']}{failure} -> {path}")
    return EXIT_OK if doc["status"] == "ok" else EXIT_FAILED


def _gather(args: argparse.Namespace) -> int:
    from harness.executors import k8s_gather, k8s_jobs

    plan = _load_plan(args.matrix, "docker")
    if not args.source.is_dir():
        raise InputError.one(
            "--from", str(args.source), "is not a folder: give the copy of the results volume"
        )
    out = jsonio.output_folder(args.out or Path("results") / plan.name, "--out")
    target = k8s_jobs.Target(args.k8s_registry)
    done = k8s_gather.gather(plan, args.source, out, arguments.build_options(args), target, _say)
    for name, why in done.refused:
        _warn(f"error: {args.source / name}: {why}")
    print(
        f"gathered {len(done.kept)} results into {out}/, refused {len(done.refused)}; report with "
        f"'{args.prog} report --results {out}'"
    )
    return EXIT_BAD_INPUT if done.refused or not done.kept else EXIT_OK


def _report(args: argparse.Namespace) -> int:
    from harness.report import folders

    dirs = args.results or [Path("results") / _load_plan(args.matrix).name]
    plan = folders.merged_plan(dirs)
    return _said(folders.report(plan, dirs, args.out or Path("reports") / plan.name, _policy(args), _warn))


def _policy(args: argparse.Namespace) -> Policy:
    from harness.report.verdicts import Policy

    return Policy(GATE_EXIT, strict=args.strict)


def _said(report: folders.Report, stream: TextIO | None = None) -> int:
    """Print where the report went and its gate's summary; the gate's outcome is the exit code."""
    rendered, loaded, gate = report.rendered, report.loaded, report.analysis.gate
    out = stream or sys.stdout
    if rendered is not None:
        files = ", ".join(map(str, (rendered.markdown, rendered.html, rendered.csv, rendered.verdict_json)))
        print(
            f"report: {files} ({len(loaded.documents)} results, {len(loaded.quarantined)} quarantined)",
            file=out,
        )
    for line in gate.lines:
        print(line, file=out)
    return gate.exit_code


def _compare(args: argparse.Namespace) -> int:
    from harness.report import folders

    pairs = folders.compare(
        args.a,
        args.b,
        args.only,
        (args.cell_a or args.cell, args.cell_b or args.cell),
        args.threshold_pct,
        args.alpha,
        _policy(args),
        args.out,
        _warn,
    ).pairs
    # CSV and JSON are read by programs: their rows (every cell's in one table) alone go to stdout
    machine = args.format in ("csv", "json")
    summary = sys.stderr if machine else sys.stdout
    if machine:
        print(_compared(pairs, args))
    codes = []
    for pair in pairs:
        if len(pairs) > 1:  # cell by cell: each cell's rows and verdict under its id
            print(f"\n{'### ' if args.format == 'md' else ''}cell {pair.title}:", file=summary)
        if not machine:
            print(_compared([pair], args))
        codes.append(_said(pair.report, summary))
    # a regression outranks an infrastructure failure, which outranks a pass
    return max(codes, key=(EXIT_OK, EXIT_INFRASTRUCTURE, EXIT_FAILED).index)


def _compared(pairs: Sequence[folders.Pair], args: argparse.Namespace) -> str:
    """compare's rows as --format asks: one pair's as they are; several pairs' (CSV, JSON) in one table
    with the cell first."""
    from harness.report import terminal

    texts = [
        terminal.comparison(p.report.analysis.timing, args.format, args.only_changed, args.sort)
        for p in pairs
    ]
    if len(pairs) == 1:
        return texts[0]
    if args.format == "json":
        records = [
            {"cell": p.title, **row} for p, text in zip(pairs, texts, strict=True) for row in json.loads(text)
        ]
        return json.dumps(records, indent=1)
    table: list[list[str]] = []
    for p, text in zip(pairs, texts, strict=True):
        header, *rows = csv.reader(io.StringIO(text))
        table += [] if table else [["cell", *header]]
        table += [[p.title, *row] for row in rows]
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(table)
    return out.getvalue().rstrip("\n")


def _repro(args: argparse.Namespace) -> int:
    from harness import repro
    from harness.report import folders
    from harness.report.verdicts import Policy

    plan = folders.merged_plan(args.results)
    out = args.out or Path("repro") / f"{args.workload}-{args.dtype}"
    jsonio.output_folder(out, "--out")
    from harness.results import folder

    with folder.locked(out):  # two reproducers into one folder never mix their files
        written = repro.write(
            plan,
            args.results,
            args.workload,
            args.dtype,
            args.candidate,
            args.knobs,
            out,
            Policy(GATE_EXIT),
            arguments.build_options(args),
        )
    print(f"reproducer of {written.title}:")
    for path in written.files:
        print(f"  {path}")
    return EXIT_OK


def _qualify(args: argparse.Namespace) -> int:
    from harness.report import folders

    if args.backend == "k8s" or args.dry_run:
        raise InputError.one(
            "--backend", "", "qualify runs and judges; 'run --backend k8s --dry-run' prints the Jobs"
        )
    plan = _load_plan(args.matrix, registry.realizing(args.backend))
    out = args.out or Path("results") / plan.name
    report_out = jsonio.output_folder(args.report_out or Path("reports") / plan.name, "--report-out")
    first = plan.rounds if args.all_rounds else min(FIRST_ROUNDS, plan.rounds)
    outcomes = _run_plan(plan, args, out, range(1, first + 1))  # plan.json: the whole plan
    if _exit_code(outcomes) == EXIT_INFRASTRUCTURE:
        return EXIT_INFRASTRUCTURE
    ran = any(not o.kept for o in outcomes)
    for round_index in range(first + 1, plan.rounds + 1):
        still = folders.undecided(plan, [out])
        if still is None:
            _say(f"every row is decided after {round_index - 1} rounds; the other rounds are not needed")
            break
        _say(
            f"round {round_index} of at most {plan.rounds}: {still.count} rows still undecided; running "
            f"{', '.join(f'{w} {d}' for w, d in still.rows)} again in {len(still.cells)} cells"
        )
        later = dataclasses.replace(
            plan,
            cells=tuple(c for c in plan.cells if c.id in still.cells),
            suite=dataclasses.replace(
                plan.suite,
                workloads=tuple(dict.fromkeys(w for w, _ in still.rows)),
                dtypes=tuple(dict.fromkeys(d for _, d in still.rows)),
                rows=tuple(f"{w}:{d}" for w, d in still.rows),  # exactly these, not the product
            ),
        )
        outcomes = _run_plan(later, args, out, range(round_index, round_index + 1))
        if _exit_code(outcomes) == EXIT_INFRASTRUCTURE:
            return EXIT_INFRASTRUCTURE
        ran = ran or any(not o.kept for o in outcomes)
    if not ran:  # a finished folder: say so, and how to get more rounds, rather than judge in silence
        _say(
            f"nothing was left to decide: {out} already holds every round the matrix asks ({plan.rounds}) "
            f"of the rows that needed them; for more, raise 'rounds:' in {args.matrix} (qualify then runs "
            "only the undecided rows), or run with --fresh to measure everything again"
        )
    return _said(folders.report(plan, [out], report_out, _policy(args), _warn))


def _bisect(args: argparse.Namespace) -> int:
    from harness.bisect import bisect, run_with

    plan = _load_plan(args.matrix, registry.realizing(args.backend))
    workload, _, dtype = args.row.partition(":")
    out = args.out or Path("results") / f"{plan.name}-bisect" / f"{workload}-{dtype}"
    reuse = args.results or [p for p in [Path("results") / plan.name] if p.is_dir()]
    request = arguments.run_request(args, plan.backend, out)
    found = bisect(plan, args.row, args.good, args.bad, out, reuse, run_with(request, _say, _progress), _say)
    ratio = f"{found.ratio:.3f}" if found.ratio is not None else "n/a"
    ran = f", what ran: {found.what_ran}" if found.what_ran else ""
    print(
        f"{found.row}: the change began at {found.before.label} -> {found.after.label} "
        f"({found.verdict}, ratio {ratio}{ran})"
    )
    for probe in found.probes:
        how = "measured" if probe.measured else "reused"
        print(f"  {probe.release.label}: {probe.verdict} ({probe.rounds} rounds, {how})")
    print(
        f"measured {found.measured} of the {found.between} releases from {args.good} to {args.bad} "
        f"(a full sweep measures {found.between}); new results in {out}/"
    )
    return EXIT_OK


COMMANDS = {
    "init": _init,
    "plan": _plan,
    "validate": _validate,
    "run": _run,
    "images": _images,
    "slurm-task": _slurm_task,
    "rerun": _rerun,
    "gather": _gather,
    "report": _report,
    "compare": _compare,
    "repro": _repro,
    "qualify": _qualify,
    "bisect": _bisect,
}
