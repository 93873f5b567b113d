"""The command line: every subcommand's arguments, and values checked where they are parsed.

argparse turns an ``ArgumentTypeError`` into one ``error: argument --x: ...`` line and exit 2, so a
``--timeout-s nan`` is refused before anything runs instead of failing every run it would have timed.

Building the parser loads no heavy library (scipy, pandas, jsonschema, rich, docker...): ``--help``
answers at once. What a command needs beyond its arguments is imported where it is used.
"""

from __future__ import annotations

import argparse
import difflib
import math
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from harness import __version__, images
from harness.backends import gpu_access, registry
from harness.console import NORMAL, QUIET, VERBOSE
from harness.errors import InputError, Problem
from harness.plan.model import DEFAULT_ALPHA, DEFAULT_REGRESSION_PCT
from harness.report import choices

if TYPE_CHECKING:
    from harness.executors import k8s_jobs
    from harness.executors.launch import RunRequest

DEFAULT_MATRIX = Path("matrix.yaml")
PROG = "harness"  # the installed command; 'python -m harness' names itself (__main__)


def number(what: str, above: float, at_most: float) -> Callable[[str], float]:
    """An argparse type: a finite number in (above, at_most]; ``what`` says what it is in the error."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and above < value <= at_most):
            raise argparse.ArgumentTypeError(
                f"{text!r} is not {what}: a number > {above:g} and <= {at_most:g}"
            )
        return value

    parse.__name__ = what  # argparse names the type in some messages
    return parse


def count(text: str) -> int:
    """An argparse type: a whole number >= 0."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 0")
    return value


def memory(text: str) -> str:
    """An argparse type: a container memory limit as Docker reads it (16g, 512m, 1073741824)."""
    if not re.fullmatch(r"[1-9][0-9]{0,15}[bkmgBKMG]?", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a memory size such as 16g, 512m or 1073741824")
    return text


def slurm_setting(name: str) -> Callable[[str], str]:
    """An argparse type: the Slurm setting ``name`` (partition, account, time), one plain token as an
    '#SBATCH' line needs."""

    def parse(text: str) -> str:
        from harness.executors import slurm

        problem = slurm.setting_problem(name, text)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return text

    parse.__name__ = f"Slurm {name}"
    return parse


def index_url(text: str) -> str:
    """An argparse type: a package index URL, which an image build writes into its Dockerfile's RUN lines."""
    if not images.INDEX_URL_FORM.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a plain http(s) URL: {images.INDEX_URL_FIX}")
    return text


TIMEOUT = number("a time limit in seconds", 0, 7 * 86400)


EXIT_CODES = """exit codes:
  0    fine (report, compare, qualify: no regression)
  1    a regression (run: a cell failed)
  2    bad input: one 'error: FILE:LINE: FIELD: message' line per problem
  3    an infrastructure failure: runs that could not complete (re-run them)
  130  interrupted"""
HIDDEN = ("slurm-task",)  # what each task of a Slurm array runs: not for people


class _Help(argparse.RawDescriptionHelpFormatter):
    """Every option's default in its help, where it has one worth saying."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (
            "default" in text
            or default in (None, False, True, argparse.SUPPRESS)
            or not action.option_strings
        ):
            return text
        return f"{text} (default: {default})"


class _Version(argparse.Action):
    """``--version``: the suite's and the schemas' versions, read only when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> NoReturn:
        from harness.report.verdicts import VERDICT_SCHEMA_VERSION
        from harness.suite import RESULT_SCHEMA_VERSION, SUITE_VERSION

        parser._print_message(
            f"harness {__version__}, suite {SUITE_VERSION}, result schema {RESULT_SCHEMA_VERSION}, "
            f"verdict schema {VERDICT_SCHEMA_VERSION}\n",
            sys.stdout,
        )
        parser.exit()


class _Parser(argparse.ArgumentParser):
    """No abbreviated options (``--gpu`` is not ``--gpus``), defaults shown, and "did you mean" for a
    mistyped subcommand."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", _Help)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def error(self, message: str) -> NoReturn:
        wrong = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if wrong:
            choices = [c.strip(" '") for c in wrong.group(2).split(",")]
            choices = [c for c in choices if c not in HIDDEN]
            close = difflib.get_close_matches(wrong.group(1), choices, n=1)
            message = f"invalid choice: '{wrong.group(1)}'" + (
                f"; did you mean '{close[0]}'?" if close else f" (choose from {', '.join(choices)})"
            )
        super().error(message)


def parser(description: str, prog: str = PROG) -> argparse.ArgumentParser:
    """Every subcommand's arguments; ``args.command`` names the subcommand. ``prog`` is how the command
    is called in its usage lines and examples."""
    parser = _Parser(prog=prog, description=description, epilog=EXIT_CODES)
    parser.add_argument(
        "--version", action=_Version, help="print the harness, suite and schema versions and exit"
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
        "--matrix", type=Path, default=DEFAULT_MATRIX, help="where to write it (default: matrix.yaml)"
    )
    init.add_argument("--force", action="store_true", help="replace a file already there")

    plan = command("plan", "validate a matrix and list its cells (no side effects)", "--matrix matrix.yaml")
    _matrix_arg(plan)
    plan.add_argument("--json", action="store_true", help="print the plan as JSON")

    validate = command(
        "validate",
        "check result documents against schemas/result.schema.json",
        "results/smoke/torch-installed_cudnn-bundled_2ecb882014.r1.json.gz",
    )
    validate.add_argument("files", nargs="+", type=Path, help="result files (.json or .json.gz)")

    run = command(
        "run", "run the suite in every cell of a matrix", "--matrix matrix.yaml --out results/smoke"
    )
    _matrix_arg(run)
    _run_args(run)
    _verbosity_args(run)

    imgs = command(
        "images", "render and build one image per cell (docker backend)", "--matrix sweep.yaml --dry-run"
    )
    _matrix_arg(imgs)
    _build_args(imgs)
    _verbosity_args(imgs)
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
    _gpu_access_arg(rerun)

    gather = command(
        "gather",
        "collect what Kubernetes pods wrote (a copy of the results volume) into a results folder",
        "--matrix sweep.yaml --from volume-copy --out results/sweep",
    )
    _matrix_arg(gather)
    gather.add_argument(
        "--from", dest="source", type=Path, required=True, help="the copy of the results volume (kubectl cp)"
    )
    gather.add_argument("--out", type=Path, help="results folder (default: results/<matrix name>)")
    gather.add_argument("--k8s-registry", help="registry the cell images were pushed to, as given to run")
    _build_args(gather)

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
    _matrix_arg(rep)
    rep.add_argument("--out", type=Path, help="report folder (default: reports/<plan name>)")
    _strict_arg(rep)

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
        default=DEFAULT_REGRESSION_PCT,
        help="a row is slower or faster only beyond this change",
    )
    cmp.add_argument(
        "--alpha",
        type=number("a significance level", 0, 0.5),
        default=DEFAULT_ALPHA,
        help="significance level of the test (Welch's t or Mann-Whitney U; TOST uses 1 - 2 alpha)",
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
    _strict_arg(cmp)

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
    _build_args(repro)  # for docker cells' Dockerfiles

    qualify = command(
        "qualify",
        "plan + run + report: exit 0 no regression, 1 a regression, 3 a run could not complete",
        "--matrix matrix.yaml",
        codes=True,
    )
    _matrix_arg(qualify)
    _run_args(qualify)
    _verbosity_args(qualify)
    qualify.add_argument("--report-out", type=Path, help="report folder (default: reports/<plan name>)")
    qualify.add_argument(
        "--all-rounds",
        action="store_true",
        help="run every round of the matrix for every row (default: 3 rounds, then more, up to the "
        "matrix's rounds, only for the rows still undecided)",
    )
    _strict_arg(qualify)

    bisect = command(
        "bisect",
        "find the first release where one row changed, measuring as few releases as it can",
        "--matrix sweep.yaml --row conv2d_r50_3x3:bf16 --good 9.12.0.46 --bad 9.28.1.4",
        more="A binary search along the matrix's release axis (cuDNN {wheel: X} releases, or torch "
        "versions)\nbetween a good and a bad release, for one row; results already in --results are reused.",
        codes=True,
    )
    _matrix_arg(bisect)
    bisect.add_argument("--row", required=True, metavar="WORKLOAD:DTYPE", help="the row, e.g. sdpa:bf16")
    bisect.add_argument("--good", required=True, help="a release on the axis where the row is as it was")
    bisect.add_argument("--bad", required=True, help="a release on the axis where the row has changed")
    bisect.add_argument(
        "--results",
        type=Path,
        action="append",
        help="results folder whose rounds are reused (repeatable; default: results/<matrix name>)",
    )
    _run_args(bisect)
    _verbosity_args(bisect)
    return parser


def _verbosity_args(parser: argparse.ArgumentParser) -> None:
    loud = parser.add_mutually_exclusive_group()
    loud.add_argument(
        "-q",
        "--quiet",
        dest="verbosity",
        action="store_const",
        const=QUIET,
        default=NORMAL,
        help="print only warnings, errors and the summary",
    )
    loud.add_argument(
        "-v",
        "--verbose",
        dest="verbosity",
        action="store_const",
        const=VERBOSE,
        help="also print what each run says as it goes (the suite's measurements, image builds)",
    )


def _strict_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--strict", action="store_true", help="exit 1 also on inconclusive or missing comparisons"
    )


def _matrix_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--matrix", type=Path, default=DEFAULT_MATRIX, help="matrix file (default: matrix.yaml)"
    )


def _run_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, help="results folder (default: results/<matrix name>)")
    parser.add_argument(
        "--timeout-s", type=TIMEOUT, default=3600.0, help="time limit per cell (default 3600)"
    )
    parser.add_argument(
        "--backend",
        choices=(*registry.KINDS, "slurm", "k8s"),
        help="override the matrix's backend; slurm: submit one array job, each task running the matrix's "
        "own backend (local or docker) on its node",
    )
    parser.add_argument(
        "--gpus",
        help="GPU ids to run on, one run per GPU at a time (e.g. 0,1, or 'all'); a suite with a multi-GPU "
        "workload gets them all, one run at a time (default: one run at a time on every GPU the backend "
        "sees)",
    )
    parser.add_argument(
        "--only",
        action="append",
        metavar="TEXT",
        help="run only the cells whose id contains TEXT (repeatable)",
    )
    again = parser.add_mutually_exclusive_group()
    again.add_argument(
        "--rerun-failed",
        action="store_true",
        help="run only the runs whose earlier result in --out failed (default: keep every valid result "
        "of the same image and suite version, and run what is missing)",
    )
    again.add_argument(
        "--fresh", action="store_true", help="run everything again; earlier results move to superseded/"
    )
    local = parser.add_argument_group("local backend")
    local.add_argument(
        "--python",
        help="interpreter with torch for the local backend's torch: installed cells (default: this one); "
        "a cell with a torch version runs in an environment of its own, kept in $HARNESS_CACHE "
        "(default ~/.cache/cudnn-harness)",
    )
    _build_args(parser.add_argument_group("packages (docker images; local environments and cuDNN wheels)"))
    docker = parser.add_argument_group("docker backend")
    docker.add_argument(
        "--memory",
        type=memory,
        help="memory limit per container, e.g. 16g (default: none); a cell past it fails as OOM",
    )
    _gpu_access_arg(docker)
    queue = parser.add_argument_group("slurm (--backend slurm)")
    queue.add_argument(
        "--slurm-partition",
        type=slurm_setting("partition"),
        help="partition (default: the matrix's slurm.partition)",
    )
    queue.add_argument("--slurm-account", type=slurm_setting("account"), help="account to charge")
    queue.add_argument(
        "--slurm-time",
        type=slurm_setting("time"),
        help="time limit per task, e.g. 30, 01:00:00 (default 01:00:00)",
    )
    queue.add_argument(
        "--slurm-gpus", type=count, help="GPUs per task (default 1 for a GPU suite, 0 for device: cpu)"
    )
    k8s = parser.add_argument_group("kubernetes (--backend k8s)")
    k8s.add_argument(
        "--dry-run",
        action="store_true",
        help="print one Indexed Job per cell, submit nothing "
        "(without it, --backend k8s submits them through the configured cluster's API)",
    )
    k8s.add_argument("--k8s-registry", help="registry the cell images were pushed to (prefixes the tag)")
    k8s.add_argument("--k8s-namespace", default="default", help="namespace of the Jobs (default: default)")
    k8s.add_argument(
        "--k8s-results-claim",
        default="cudnn-harness-results",
        help="PersistentVolumeClaim mounted at /results",
    )


def _gpu_access_arg(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    parser.add_argument(
        "--gpu-access",
        choices=gpu_access.MODES,
        help="how containers get their GPUs (default: the matrix's docker.gpu_access, else "
        "toolkit): toolkit = a device request (--gpus, needs the NVIDIA Container Toolkit); cdi = CDI names "
        "nvidia.com/gpu=N (Docker 25+, Podman); devices = /dev/nvidia* and the driver's libraries, read-only",
    )


def _build_args(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    parser.add_argument(
        "--wheelhouse",
        type=Path,
        help="install offline, from this folder of wheels alone (pip --no-index --find-links DIR): image "
        "builds, and the local backend's cell environments and cuDNN wheels",
    )
    parser.add_argument(
        "--ca-bundle", type=Path, help="extra CA bundle for builds behind a TLS-intercepting proxy"
    )
    parser.add_argument(
        "--index-url",
        type=index_url,
        help="package index (default: images: PyTorch's index for the CUDA variant; the local backend: "
        "the installer's default, PyPI)",
    )


def k8s_target(args: argparse.Namespace) -> k8s_jobs.Target:
    """Where --backend k8s sends its Jobs."""
    from harness.executors import k8s_jobs

    return k8s_jobs.Target(args.k8s_registry, args.k8s_namespace, args.k8s_results_claim, args.timeout_s)


def build_options(args: argparse.Namespace) -> images.BuildOptions:
    problems = []
    if args.wheelhouse is not None and not any(args.wheelhouse.glob("*.whl")):
        problems.append(Problem(str(args.wheelhouse), "--wheelhouse", "holds no .whl files"))
    if args.ca_bundle is not None and not args.ca_bundle.is_file():
        problems.append(Problem(str(args.ca_bundle), "--ca-bundle", "no such file"))
    if problems:
        raise InputError(problems)
    return images.BuildOptions(index_url=args.index_url, wheelhouse=args.wheelhouse, ca_bundle=args.ca_bundle)


def settings(args: argparse.Namespace, backend: str) -> registry.Settings:
    """How to make ``backend`` from what the command line says."""
    if backend == "docker":
        if args.command == "rerun":  # the image exists: nothing is built, and the GPUs are the container's
            return registry.Settings("docker", args.timeout_s, gpu_access=args.gpu_access, gpus=args.gpus)
        return registry.Settings(
            "docker",
            args.timeout_s,
            memory=args.memory,
            gpu_access=args.gpu_access,
            build=build_options(args),
        )
    return registry.Settings("local", args.timeout_s, python=args.python, build=build_options(args))


def run_request(args: argparse.Namespace, backend: str, out: Path) -> RunRequest:
    """What ``run`` and ``qualify`` ask: where, which cells, what to redo, on which GPUs or through Slurm."""
    from harness.executors import slurm
    from harness.executors.launch import RunRequest, SlurmAsk
    from harness.results.resume import Mode

    mode = Mode.RERUN_FAILED if args.rerun_failed else (Mode.FRESH if args.fresh else Mode.RESUME)
    ask = None
    if args.backend == "slurm":
        found = slurm.results_dir_problems(out)  # before the folder is made
        if found:
            raise InputError(found)
        ask = SlurmAsk(args.slurm_partition, args.slurm_account, args.slurm_time, args.slurm_gpus)
    return RunRequest(out, settings(args, backend), tuple(args.only or ()), mode, args.gpus, ask)
