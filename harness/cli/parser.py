"""The command line: every subcommand's arguments (their values are checked where parsed: ``argument_types``).

Building the parser loads no heavy library (scipy, pandas, jsonschema, rich, docker...): ``--help``
answers at once. What a command needs beyond its arguments is imported where it is used.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from harness.cli import option_groups
from harness.cli.checked_types import TIMEOUT, Parser, Version, index_url, number
from harness.plan.model import DEFAULT_ALPHA, DEFAULT_REGRESSION_PCT
from harness.report.writers import choices

PROG = "harness"  # the installed command; 'python -m harness' names itself (__main__)


EXIT_CODES = """exit codes:
  0    fine (report, compare, qualify: no regression)
  1    a regression (run: a cell failed)
  2    bad input: one 'error: FILE:LINE: FIELD: message' line per problem
  3    an infrastructure failure: runs that could not complete (re-run them)
  130  interrupted"""


def parser(description: str, prog: str = PROG) -> argparse.ArgumentParser:
    """Every subcommand's arguments; ``args.command`` names the subcommand. ``prog`` is how the command
    is called in its usage lines and examples."""
    parser = Parser(prog=prog, description=description, epilog=EXIT_CODES)
    parser.add_argument(
        "--version", action=Version, help="print the harness, suite and schema versions and exit"
    )
    commands = (
        "init",
        "plan",
        "validate",
        "run",
        "images",
        "rerun",
        "gather",
        "report",
        "compare",
        "repro",
        "qualify",
        "bisect",
        "history",
        "site",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="{" + ",".join(commands) + "}")

    def command(
        name: str, summary: str, example: str, more: str = "", codes: bool = False
    ) -> argparse.ArgumentParser:
        """A subcommand whose help says what it does in one line and shows an example to copy."""
        shown = f"example: %(prog)s {example}".rstrip()  # argparse writes the subcommand's own prog
        epilog = "\n\n".join(part for part in (more, shown, EXIT_CODES if codes else "") if part)
        return sub.add_parser(name, help=summary, description=summary, epilog=epilog)

    init = command(
        "init",
        "write a starter matrix.yaml, every key explained in a comment",
        "",
        more="The starter runs anywhere (no GPU or Docker engine needed); edit it, then 'plan' lists its "
        "cells\nand 'qualify' runs and judges them.",
    )
    init.add_argument(
        "--matrix",
        type=Path,
        default=option_groups.DEFAULT_MATRIX,
        help="where to write it (default: matrix.yaml)",
    )
    init.add_argument("--force", action="store_true", help="replace a file already there")

    plan = command(
        "plan",
        "validate a matrix and list its cells (no side effects)",
        "--matrix matrix.yaml",
        more="A cuDNN source with a device or optional term is decided on this host as a run would decide "
        "it\n(with the interpreter and the package source these options give): the cells it leaves out are "
        "listed,\nwith why.",
    )
    option_groups.matrix_arg(plan)
    plan.add_argument("--json", action="store_true", help="print the plan as JSON")
    plan.add_argument(
        "--python",
        help="interpreter with torch for torch: installed cells, as run takes it (default: this one)",
    )
    plan.add_argument(
        "--wheelhouse",
        type=Path,
        help="where cuDNN wheels come from, as run takes it: {wheel: newest} is the newest release in it",
    )
    plan.add_argument(
        "--index-url",
        type=index_url,
        help="package index, as run takes it (default: the installers' own, PyPI): {wheel: newest} is the "
        "newest release on it",
    )

    validate = command(
        "validate",
        "check result documents against schemas/result.schema.json",
        "results/smoke/torch-installed_cudnn-bundled_2ecb882014.r1.json.gz",
    )
    validate.add_argument("files", nargs="+", type=Path, help="result files (.json or .json.gz)")

    run = command(
        "run", "run the suite in every cell of a matrix", "--matrix matrix.yaml --out results/smoke"
    )
    option_groups.matrix_arg(run)
    option_groups.run_args(run)
    option_groups.verbosity_args(run)

    imgs = command(
        "images", "render and build one image per cell (docker backend)", "--matrix sweep.yaml --dry-run"
    )
    option_groups.matrix_arg(imgs)
    option_groups.build_args(imgs)
    option_groups.verbosity_args(imgs)
    imgs.add_argument("--dry-run", action="store_true", help="print each rendered Dockerfile; build nothing")
    imgs.add_argument("--log-dir", type=Path, help="build logs (default: results/<matrix name>/logs)")

    task = sub.add_parser("slurm-task")  # HIDDEN: not in the help's list of commands
    task.add_argument("--results", type=Path, required=True)
    task.add_argument("--tasks", type=Path, required=True)
    task.add_argument("--index", type=int, required=True)

    rerun = command(
        "rerun",
        "run the exact image a docker result came from again",
        "results/sweep/torch2.11.0-cu130_cudnn-bundled_6d1f1e3a2b.r1.json.gz --out results/rerun",
    )
    rerun.add_argument("result", type=Path, help="a docker result file (.json.gz) whose image runs again")
    rerun.add_argument("--out", type=Path, help="results folder for the new result (default: results/rerun)")
    rerun.add_argument("--timeout-s", type=TIMEOUT, default=3600.0, help="time limit for the run")
    rerun.add_argument("--gpus", default="all", help="GPU ids the container gets, e.g. 0,1, or 'all'")
    option_groups.gpu_access_arg(rerun)

    gather = command(
        "gather",
        "collect what Kubernetes pods wrote (a copy of the results volume) into a results folder",
        "--matrix sweep.yaml --from volume-copy --out results/sweep",
    )
    option_groups.matrix_arg(gather)
    gather.add_argument(
        "--from", dest="source", type=Path, required=True, help="the copy of the results volume (kubectl cp)"
    )
    gather.add_argument("--out", type=Path, help="results folder (default: results/<matrix name>)")
    gather.add_argument("--k8s-registry", help="registry the cell images were pushed to, as given to run")
    option_groups.build_args(gather)

    rep = command(
        "report",
        "validate and merge results into reports/, with verdicts",
        "--results results/smoke",
        codes=True,
    )
    rep.add_argument(
        "--results",
        type=Path,
        action="append",
        help="results folder (repeatable: shards or machines of one matrix merge; "
        "default: results/<matrix name>)",
    )
    option_groups.matrix_arg(rep)
    rep.add_argument("--out", type=Path, help="report folder (default: reports/<plan name>)")
    option_groups.strict_arg(rep)

    cmp = command(
        "compare",
        "ad-hoc comparison of two runs (result files or folders): A is the baseline",
        "results/before results/after --cell bundled",
        more="A side's cells are never pooled: one cell a side is compared A -> B; folders that hold the "
        "same cells\nare compared cell by cell; otherwise --cell (or --cell-a, --cell-b) picks one.\n"
        "Each row is judged over the per-round medians: with 3 to 6 rounds a side by Welch's t on their"
        " logs\n(A -> B and the ratio: their geometric means) and TOST for same, at the 1 - 2 alpha"
        " interval; with 7\n"
        "or more by the Mann-Whitney U test (their medians) and a 99%% bootstrap interval; with one round a\n"
        "side from that process's samples, never a verdict. The rounds column names the test.",
        codes=True,
    )
    cmp.add_argument("a", type=Path, metavar="A", help="baseline: a result file or a results folder")
    cmp.add_argument("b", type=Path, metavar="B", help="candidate: a result file or a results folder")
    cmp.add_argument(
        "--cell",
        metavar="TEXT",
        help="on each side, take only the cell whose id contains TEXT (e.g. bundled, or a whole cell id)",
    )
    cmp.add_argument("--cell-a", metavar="TEXT", help="as --cell, for side A only (over --cell)")
    cmp.add_argument("--cell-b", metavar="TEXT", help="as --cell, for side B only (over --cell)")
    cmp.add_argument(
        "--only",
        metavar="TEXT",
        help="in folders, take only result files whose name contains TEXT (e.g. r1. for first rounds)",
    )
    cmp.add_argument(
        "--threshold-pct",
        type=number("a regression threshold in %", 0, 1000),
        help="a row is slower or faster only beyond this change, for every workload (default: the "
        "thresholds of A's plan.json, per workload too, as report judges; B's where A has none; "
        f"{DEFAULT_REGRESSION_PCT:g} where neither has one)",
    )
    cmp.add_argument(
        "--alpha",
        type=number("a significance level", 0, 0.5),
        help="significance level of the test (Welch's t or Mann-Whitney U; TOST uses 1 - 2 alpha; default: "
        f"A's plan's, else B's, {DEFAULT_ALPHA:g} where neither has one)",
    )
    cmp.add_argument(
        "--out",
        type=Path,
        help="also write the full report (Markdown, HTML, CSV, verdict.json) here; cell by cell, one "
        "folder per cell in it",
    )
    cmp.add_argument(
        "--only-changed", action="store_true", help="print only the rows whose verdict is not 'same'"
    )
    cmp.add_argument(
        "--sort",
        choices=choices.SORTS,
        default="name",
        help="row order: the report's, or the largest change first",
    )
    cmp.add_argument(
        "--format",
        choices=choices.FORMATS,
        default="table",
        help="what to print: a table, Markdown, CSV or JSON",
    )
    option_groups.strict_arg(cmp)

    repro = command(
        "repro",
        "write a standalone reproducer (script, README, Dockerfiles) of one report row",
        "--results results/smoke --workload conv2d_r50_3x3 --dtype bf16",
    )
    repro.add_argument(
        "--results", type=Path, action="append", required=True, help="results folder (repeatable)"
    )
    repro.add_argument("--workload", required=True, help="the row's workload, e.g. sdpa")
    repro.add_argument("--dtype", required=True, help="the row's dtype, e.g. bf16")
    repro.add_argument(
        "--candidate", help="text in the row's cell id or label, where several cells have the row"
    )
    repro.add_argument(
        "--knobs", help="the row's knobs as the report writes them, e.g. 'benchmark=0 deterministic=0 tf32=0'"
    )
    repro.add_argument(
        "--out", type=Path, help="folder for the reproducer (default: repro/<workload>-<dtype>)"
    )
    option_groups.build_args(repro)  # for docker cells' Dockerfiles

    qualify = command(
        "qualify",
        "plan + run + report: exit 0 no regression, 1 a regression, 3 a run could not complete",
        "--matrix matrix.yaml",
        codes=True,
    )
    option_groups.matrix_arg(qualify)
    option_groups.run_args(qualify, cluster_help=False)
    option_groups.verbosity_args(qualify)
    qualify.add_argument("--report-out", type=Path, help="report folder (default: reports/<plan name>)")
    qualify.add_argument(
        "--all-rounds",
        action="store_true",
        help="run every round of the matrix for every row (default: 3 rounds, then more, up to the "
        "matrix's rounds, only for the rows still undecided)",
    )
    option_groups.strict_arg(qualify)
    option_groups.history_arg(
        qualify, "also add the results to this history folder once judged (harness history add)"
    )

    bisect = command(
        "bisect",
        "find the first release where one row changed, measuring as few releases as it can",
        "--matrix sweep.yaml --row conv2d_r50_3x3:bf16 --good 9.12.0.46 --bad 9.28.1.4",
        more="A binary search along the matrix's release axis (cuDNN {wheel: X} releases, or torch "
        "versions)\nbetween a good and a bad release, for one row; results already in --results are reused.",
        codes=True,
    )
    option_groups.matrix_arg(bisect)
    bisect.add_argument("--row", required=True, metavar="WORKLOAD:DTYPE", help="the row, e.g. sdpa:bf16")
    bisect.add_argument("--good", required=True, help="a release on the axis where the row is as it was")
    bisect.add_argument("--bad", required=True, help="a release on the axis where the row has changed")
    bisect.add_argument(
        "--results",
        type=Path,
        action="append",
        help="results folder whose rounds are reused (repeatable; default: results/<matrix name>)",
    )
    option_groups.run_args(
        bisect, cluster_help=False, out_default="results/<matrix name>-bisect/<workload>-<dtype>"
    )
    option_groups.verbosity_args(bisect)
    _history_commands(command)
    return parser


def _history_commands(command: Any) -> None:
    hist = command(
        "history",
        "keep every run: add results to a history, list it, rebuild its index",
        "add results/sweep --history history",
        more="A history keeps each result document as it came (named by its digest) and an index derived\n"
        "from them; a run is imported once however often it is added, and never altered.",
    )
    hist.add_argument("action", choices=("add", "list", "reindex"), help="what to do")
    hist.add_argument("results", nargs="*", type=Path, help="add: results folders or files")
    option_groups.history_arg(hist)
    option_groups.matrix_arg(hist)
    hist.add_argument("--json", action="store_true", help="list: print what it holds as JSON")
    hist.add_argument("--newest", type=int, default=10, help="list: how many of the newest runs to show")
    site = command(
        "site",
        "publish a history as a static site (no server; opens from file://)",
        "--history history --out site",
    )
    option_groups.history_arg(site)
    option_groups.matrix_arg(site)
    site.add_argument("--out", type=Path, default=Path("site"), help="site folder (default: site)")
    site.add_argument(
        "--full", action="store_true", help="rebuild every page (default: only the pages new runs touch)"
    )
