"""``python -m harness plan|run|validate|report|qualify``: the one place that prints and picks exit codes.

Exit codes: 0 fine (qualify/report/compare: no regression), 1 a regression (or, for run, a failed
cell), 2 bad input, 3 an infrastructure failure (runs that could not complete, or this machine
cannot run what was asked), 130 interrupted. A regression outranks an infrastructure failure.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import yaml
from tabulate import tabulate

from harness import (
    __version__,
    arguments,
    compare,
    images,
    jsonio,
    matrix,
    report,
    results,
    resume,
    runner,
    suite_listing,
)
from harness.backends import Backend, gpu_access
from harness.backends.local import LocalBackend
from harness.errors import HarnessError, InputError, Problem
from harness.matrix import Cell, Plan

DEFAULT_MATRIX = Path("matrix.yaml")
TIMEOUT = arguments.number("a time limit in seconds", 0, 7 * 86400)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except InputError as exc:
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
        return exc.exit_code
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m harness", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"harness {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    plan = sub.add_parser("plan", help="validate a matrix and list its cells (no side effects)")
    _matrix_arg(plan)
    plan.add_argument("--json", action="store_true", help="print the plan as JSON")
    plan.set_defaults(handler=_plan)

    validate = sub.add_parser("validate", help="check result documents against schemas/result.schema.json")
    validate.add_argument("files", nargs="+", type=Path)
    validate.set_defaults(handler=_validate)

    run = sub.add_parser("run", help="run the suite in every cell of a matrix")
    _matrix_arg(run)
    _run_args(run)
    run.set_defaults(handler=_run)

    imgs = sub.add_parser("images", help="render and build one image per cell (docker backend)")
    _matrix_arg(imgs)
    _build_args(imgs)
    imgs.add_argument("--dry-run", action="store_true", help="print each rendered Dockerfile; build nothing")
    imgs.add_argument("--log-dir", type=Path, help="build logs (default: results/<matrix name>/logs)")
    imgs.set_defaults(handler=_images)

    task = sub.add_parser("slurm-task", help=argparse.SUPPRESS)  # what each task of a Slurm array runs
    task.add_argument("--results", type=Path, required=True)
    task.add_argument("--tasks", type=Path, required=True)
    task.add_argument("--index", type=int, required=True)
    task.set_defaults(handler=_slurm_task)

    rerun = sub.add_parser("rerun", help="run the exact image a docker result came from again")
    rerun.add_argument("result", type=Path)
    rerun.add_argument("--out", type=Path, help="results folder for the new result (default: results/rerun)")
    rerun.add_argument("--timeout-s", type=TIMEOUT, default=3600.0)
    rerun.add_argument("--gpus", default="all")
    _gpu_access_arg(rerun)
    rerun.set_defaults(handler=_rerun)

    rep = sub.add_parser("report", help="validate and merge results into reports/, with verdicts")
    rep.add_argument(
        "--results",
        type=Path,
        action="append",
        help="results folder (repeatable: shards or machines of one matrix merge; default: results/<matrix name>)",
    )
    _matrix_arg(rep)
    rep.add_argument("--out", type=Path, help="report folder (default: reports/<plan name>)")
    _strict_arg(rep)
    rep.set_defaults(handler=_report)

    cmp = sub.add_parser(
        "compare", help="ad-hoc comparison of two runs (result files or folders): A is the baseline"
    )
    cmp.add_argument("a", type=Path, metavar="A", help="baseline: a result file or a results folder")
    cmp.add_argument("b", type=Path, metavar="B", help="candidate: a result file or a results folder")
    cmp.add_argument(
        "--only",
        metavar="TEXT",
        help="in folders, take only result files whose name contains TEXT (e.g. a cell id)",
    )
    cmp.add_argument("--threshold-pct", type=arguments.number("a regression threshold in %", 0, 1000),
                     default=matrix.DEFAULT_REGRESSION_PCT)  # fmt: skip
    cmp.add_argument(
        "--alpha", type=arguments.number("a significance level", 0, 0.5), default=matrix.DEFAULT_ALPHA
    )
    cmp.add_argument(
        "--out", type=Path, help="also write the full report (Markdown, HTML, CSV, verdict.json) here"
    )
    _strict_arg(cmp)
    cmp.set_defaults(handler=_compare)

    qualify = sub.add_parser("qualify", help="plan + run + report; exit 0 only if every cell ran")
    _matrix_arg(qualify)
    _run_args(qualify)
    qualify.add_argument("--report-out", type=Path, help="report folder (default: reports/<plan name>)")
    _strict_arg(qualify)
    qualify.set_defaults(handler=_qualify)
    return parser


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
    parser.add_argument("--python", help="interpreter with torch for the local backend (default: this one)")
    parser.add_argument(
        "--timeout-s", type=TIMEOUT, default=3600.0, help="time limit per cell (default 3600)"
    )
    parser.add_argument(
        "--backend",
        choices=("local", "docker", "slurm", "k8s"),
        help="override the matrix's backend; slurm: submit one array job, each task running the matrix's "
        "own backend (local or docker) on its node",
    )
    parser.add_argument("--slurm-partition", help="slurm: partition (default: the matrix's slurm.partition)")
    parser.add_argument("--slurm-account", help="slurm: account to charge")
    parser.add_argument(
        "--slurm-time", help="slurm: time limit per task, e.g. 30, 01:00:00 (default 01:00:00)"
    )
    parser.add_argument(
        "--slurm-gpus",
        type=arguments.count,
        help="slurm: GPUs per task (default 1 for a GPU suite, 0 for device: cpu)",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="k8s: print one Indexed Job per cell, submit nothing "
        "(without it, --backend k8s submits them through the configured cluster's API)",
    )
    parser.add_argument(
        "--k8s-registry", help="k8s: registry the cell images were pushed to (prefixes the tag)"
    )
    parser.add_argument(
        "--k8s-namespace", default="default", help="k8s: namespace of the Jobs (default: default)"
    )
    parser.add_argument("--k8s-results-claim", default="cudnn-harness-results",
                        help="k8s: PersistentVolumeClaim mounted at /results")  # fmt: skip
    parser.add_argument(
        "--gpus",
        help="GPU ids to run on, one run per GPU at a time (e.g. 0,1, or 'all'); a suite with a multi-GPU "
        "workload gets them all, one run at a time (default: one run at a time on every GPU the backend sees)",
    )
    parser.add_argument(
        "--memory",
        type=arguments.memory,
        help="docker backend: memory limit per container, e.g. 16g (default: none); a cell past it fails as OOM",
    )
    _gpu_access_arg(parser)
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
    _build_args(parser)


def _gpu_access_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--gpu-access",
        choices=gpu_access.MODES,
        help="docker backend: how containers get their GPUs (default: the matrix's docker.gpu_access, else "
        "toolkit): toolkit = a device request (--gpus, needs the NVIDIA Container Toolkit); cdi = CDI names "
        "nvidia.com/gpu=N (Docker 25+, Podman); devices = /dev/nvidia* and the driver's libraries, read-only",
    )


def _build_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--wheelhouse", type=Path, help="build offline: pip --no-index --find-links DIR")
    parser.add_argument(
        "--ca-bundle", type=Path, help="extra CA bundle for builds behind a TLS-intercepting proxy"
    )
    parser.add_argument(
        "--index-url", help="torch wheel index (default: PyTorch's index for the CUDA variant)"
    )


def _build_options(args: argparse.Namespace) -> images.BuildOptions:
    problems = []
    if args.wheelhouse is not None and not any(args.wheelhouse.glob("*.whl")):
        problems.append(Problem(str(args.wheelhouse), "--wheelhouse", "holds no .whl files"))
    if args.ca_bundle is not None and not args.ca_bundle.is_file():
        problems.append(Problem(str(args.ca_bundle), "--ca-bundle", "no such file"))
    if problems:
        raise InputError(problems)
    return images.BuildOptions(index_url=args.index_url, wheelhouse=args.wheelhouse, ca_bundle=args.ca_bundle)


def _progress(line: str) -> None:
    print(f"    {line}", flush=True)


def _backend(plan: Plan, args: argparse.Namespace) -> Backend:
    if plan.backend == "docker":
        from harness.backends.docker import DockerBackend

        return DockerBackend(
            _build_options(args),
            timeout_s=args.timeout_s,
            memory=args.memory,
            progress=_progress,
            gpu_access=args.gpu_access,
        )
    return LocalBackend(args.python, timeout_s=args.timeout_s, progress=_progress)


def _load_plan(path: Path) -> Plan:
    return matrix.load(path, known_workloads=suite_listing.workload_ids())


def _plan(args: argparse.Namespace) -> int:
    plan = _load_plan(args.matrix)
    if args.json:
        print(json.dumps(plan.to_json(), indent=2))
        return 0
    rows = [
        [c.id + (" *" if c.id == plan.baseline_id else ""), c.torch, c.cudnn.label, c.base_image, c.python]
        for c in plan.cells
    ]
    print(tabulate(rows, headers=["cell (* baseline)", "torch", "cuDNN", "base image", "python"]))
    print(
        f"\n{len(plan.cells)} cells x {len(plan.knob_sets)} knob sets, backend {plan.backend}, "
        f"suite profile {plan.suite['profile']}, regression threshold {plan.regression_pct:g}%"
    )
    return 0


def _validate(args: argparse.Namespace) -> int:
    bad = 0
    for path in args.files:
        _, problems = results.check(path)
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
        if problems:
            bad += 1
        else:
            print(f"ok: {path}")
    return 2 if bad else 0


def _run(args: argparse.Namespace) -> int:
    plan = _load_plan(args.matrix)
    if args.backend == "k8s" or args.dry_run:
        return _k8s(plan, args)
    outcomes = _run_plan(plan, args)
    return _exit_code(outcomes)


def _exit_code(outcomes: list[runner.CellOutcome]) -> int:
    """0 all ran; 3 nothing could run because the host cannot give the containers their GPUs; else 1."""
    if outcomes and all(o.stage == gpu_access.STAGE for o in outcomes):
        print(f"nothing could run: {outcomes[0].reason}", file=sys.stderr)
        return 3
    return 1 if any(o.status != "ok" for o in outcomes) else 0


def _only(plan: Plan, args: argparse.Namespace) -> tuple[Cell, ...]:
    if not args.only:
        return plan.cells
    cells = tuple(c for c in plan.cells if any(text in c.id for text in args.only))
    if not cells:
        raise InputError([Problem("--only", "", f"no cell id contains {' or '.join(args.only)}; see 'plan'")])
    return cells


def _k8s(plan: Plan, args: argparse.Namespace) -> int:
    """Print one Indexed Job per cell (--dry-run), or submit them where a cluster is configured."""
    if args.backend != "k8s":
        raise InputError([Problem("--dry-run", "", "only --backend k8s has a dry run")])
    from harness import k8s_jobs

    cells = _only(plan, args)
    jobs = k8s_jobs.render(plan, cells, _build_options(args), registry=args.k8s_registry,
                           namespace=args.k8s_namespace, results_claim=args.k8s_results_claim,
                           timeout_s=args.timeout_s)  # fmt: skip
    if not args.dry_run:
        from harness import k8s_submit

        print(
            f"submitting {len(jobs)} Indexed Jobs ({plan.rounds} completions each) to namespace {args.k8s_namespace}"
        )
        return k8s_submit.submit(jobs, args.k8s_namespace)
    print(yaml.safe_dump_all(jobs, sort_keys=False), end="")
    print(f"# {len(jobs)} Indexed Jobs, {plan.rounds} completions each", file=sys.stderr)
    return 0


def _run_plan(plan: Plan, args: argparse.Namespace) -> list[runner.CellOutcome]:
    out = args.out or Path("results") / plan.name
    if args.backend == "k8s" or args.dry_run:
        raise InputError([Problem("--backend", "", "qualify runs and judges; 'run --backend k8s --dry-run' "
                                  "prints the Jobs")])  # fmt: skip
    if args.backend == "slurm":
        return _run_slurm(plan, args, out)
    if args.backend:
        plan = dataclasses.replace(plan, backend=args.backend)
    backend = _backend(plan, args)
    cells = _only(plan, args)
    mode = _mode(args)
    gpus = _gpu_ids(args.gpus)
    arguments.output_folder(out, "--out")
    print(
        f"running {len(cells)} of {len(plan.cells)} cells of {plan.name!r} into {out}/ (logs in {out}/logs/)"
        + ("" if mode is resume.Mode.RESUME else f", {mode.value}")
    )
    exclusive = _needs_every_gpu(plan, args)
    if gpus:
        print(
            f"GPUs {', '.join(gpus)}: "
            + (
                "each run gets all of them (a multi-GPU workload)"
                if exclusive
                else "one run per GPU at a time"
            )
        )
    outcomes = runner.run(plan, backend, out, cells=cells, mode=mode, gpus=gpus, exclusive=exclusive)
    _say_kept(outcomes, out)
    return outcomes


def _say_kept(outcomes: list[runner.CellOutcome], out: Path) -> None:
    kept = sum(o.kept for o in outcomes)
    if kept:
        print(f"{kept} of {len(outcomes)} results kept from earlier runs into {out}/")


def _needs_every_gpu(plan: Plan, args: argparse.Namespace) -> bool:
    """Whether the suite names a workload that runs its own process per GPU (its runs get them all)."""
    workloads = set(plan.suite.get("workloads") or ())
    return bool(workloads) and bool(workloads & suite_listing.multi_gpu_workloads(args.python))


def _gpu_ids(text: str | None) -> tuple[str, ...]:
    """``--gpus``: ids as given, or 'all' through nvidia-smi; each must name a GPU only once."""
    if text is None:
        return ()
    if text.strip() == "all":
        try:
            listed = subprocess.run(
                ["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"],
                capture_output=True, text=True, timeout=60, check=True,
            ).stdout.split()  # fmt: skip
        except (OSError, subprocess.SubprocessError) as exc:
            raise InputError([Problem("--gpus", "all", f"cannot list this host's GPUs with nvidia-smi ({exc}); "
                                      "name them instead, e.g. --gpus 0,1")]) from None  # fmt: skip
        if not listed:
            raise InputError([Problem("--gpus", "all", "nvidia-smi lists no GPU on this host")])
        return tuple(listed)
    ids = tuple(part.strip() for part in text.split(","))
    if any(not part or not all(c.isalnum() or c in "-:" for c in part) for part in ids):
        raise InputError(
            [Problem("--gpus", text, "give GPU indexes or UUIDs separated by commas, e.g. 0,1, or 'all'")]
        )
    if len(set(ids)) != len(ids):
        raise InputError(
            [Problem("--gpus", text, "names a GPU twice; two runs on one GPU would time each other")]
        )
    return ids


def _mode(args: argparse.Namespace) -> resume.Mode:
    if args.rerun_failed:
        return resume.Mode.RERUN_FAILED
    return resume.Mode.FRESH if args.fresh else resume.Mode.RESUME


def _run_slurm(plan: Plan, args: argparse.Namespace, out: Path) -> list[runner.CellOutcome]:
    """Submit the runs to Slurm as one array job; each task runs the matrix's backend on its node."""
    from harness import slurm

    if args.gpus is not None:
        raise InputError(
            [Problem("--gpus", args.gpus, "Slurm picks each task's GPUs; ask for a count with --slurm-gpus")]
        )
    exclusive = _needs_every_gpu(plan, args)
    req = slurm.request(
        plan, args.slurm_partition, args.slurm_account, args.slurm_time, args.slurm_gpus, exclusive
    )
    arguments.output_folder(out, "--out")
    slurm.available()
    if plan.backend == "docker":
        from harness.backends.docker import image_identity

        options = _build_options(args)
        version = suite_listing.listing()["suite_version"]

        def identity(cell: Cell) -> dict[str, str]:
            return image_identity(version, plan, images.render(cell, options, plan.image_python).reference)

        settings = {"backend": "docker", "timeout_s": args.timeout_s, "memory": args.memory,
                    "gpu_access": args.gpu_access,
                    "build": {"index_url": options.index_url,
                              "wheelhouse": str(options.wheelhouse.resolve()) if options.wheelhouse else None,
                              "ca_bundle": str(options.ca_bundle.resolve()) if options.ca_bundle else None}}  # fmt: skip
    else:
        local = LocalBackend(args.python, timeout_s=args.timeout_s)

        def identity(cell: Cell) -> dict[str, str]:
            return local.identity(cell, plan)

        settings = {"backend": "local", "python": local.python, "timeout_s": args.timeout_s}
    cells = _only(plan, args)
    mode = _mode(args)
    print(
        f"submitting {len(cells)} of {len(plan.cells)} cells of {plan.name!r} to Slurm, results into {out}/ "
        f"(a folder every node must see; each task runs the {plan.backend} backend there)"
        + ("" if mode is resume.Mode.RESUME else f", {mode.value}")
    )
    submission = slurm.Submission(plan, out, identity, settings, req)
    outcomes = submission.run(cells, mode)
    _say_kept(outcomes, out)
    return outcomes


def _slurm_task(args: argparse.Namespace) -> int:
    from harness import slurm

    def make_backend(plan: Plan, settings: dict[str, object]) -> Backend:
        if settings["backend"] == "docker":
            from harness.backends.docker import DockerBackend

            build = settings["build"]
            assert isinstance(build, dict)
            options = images.BuildOptions(
                index_url=build.get("index_url"),
                wheelhouse=Path(build["wheelhouse"]) if build.get("wheelhouse") else None,
                ca_bundle=Path(build["ca_bundle"]) if build.get("ca_bundle") else None,
            )
            return DockerBackend(options, timeout_s=float(settings["timeout_s"]),  # type: ignore[arg-type]
                                 memory=settings.get("memory"), progress=_progress,  # type: ignore[arg-type]
                                 gpu_access=settings.get("gpu_access"))  # type: ignore[arg-type]  # fmt: skip
        return LocalBackend(
            str(settings["python"]), timeout_s=float(settings["timeout_s"]), progress=_progress
        )  # type: ignore[arg-type]

    return slurm.run_task(args.results, args.tasks, args.index, make_backend)


def _images(args: argparse.Namespace) -> int:
    plan = _load_plan(args.matrix)
    options = _build_options(args)
    if args.dry_run:
        for cell in plan.cells:
            rendered = images.render(cell, options, plan.image_python)
            print(f"# ===== {rendered.reference}\n{rendered.dockerfile}")
        return 0
    from harness.backends.docker import DockerBackend

    backend = DockerBackend(options, progress=_progress)
    log_dir = arguments.output_folder(args.log_dir or Path("results") / plan.name / "logs", "--log-dir")
    rows, failed = [], 0
    for index, cell in enumerate(plan.cells, 1):
        print(f"[{index}/{len(plan.cells)}] {cell.id}: building", flush=True)
        build = backend.build(cell, plan, log_dir / f"{cell.id}.build.log")
        state = "FAILED" if build.error else ("cached" if build.cached else "built")
        failed += build.error is not None
        rows.append([cell.id, build.image.reference, state, f"{build.seconds:.1f}", build.error or ""])
        print(
            f"[{index}/{len(plan.cells)}] {cell.id}: {state} in {build.seconds:.1f} s"
            + (f": {build.error}" if build.error else ""),
            flush=True,
        )
    print(tabulate(rows, headers=["cell", "image", "state", "seconds", "error"]))
    built = sum(1 for r in rows if r[2] == "built")
    print(f"{built} built, {sum(1 for r in rows if r[2] == 'cached')} cached, {failed} failed")
    return 1 if failed else 0


def _rerun(args: argparse.Namespace) -> int:
    document, problems = results.check(args.result)
    if problems:
        raise InputError(problems)
    assert document is not None
    if document["run"].get("backend") != "docker" or not document["run"].get("image"):
        raise InputError(
            [
                Problem(
                    str(args.result),
                    "run.image",
                    "only results of the docker backend name an image "
                    "to re-run; re-run local cells with 'python -m harness run'",
                )
            ]
        )
    plan = results.stored_plan(args.result.parent)
    from harness.backends.docker import DockerBackend

    backend = DockerBackend(
        images.BuildOptions(),
        timeout_s=args.timeout_s,
        gpus=args.gpus,
        progress=_progress,
        gpu_access=args.gpu_access,
    )
    out = arguments.output_folder(args.out or Path("results") / "rerun", "--out")
    cell_id = document["cell"]["id"]
    # the re-run keeps the round of the result it repeats, so its files sit beside the originals' names
    round_index = results.round_of(document)
    result_path = out / runner.result_name(cell_id, round_index)
    if (out / results.PLAN_FILE).exists() and results.stored_plan(out) != plan:
        raise InputError([Problem(str(out), "--out", f"holds the results of another plan ({results.PLAN_FILE}); "
                                  "re-run into an empty folder or one of the same plan")])  # fmt: skip
    # the lock: nothing else writes there meanwhile; an earlier result is moved aside, never lost
    with resume.locked(out):
        jsonio.write_atomic(out / results.PLAN_FILE, plan.to_json())
        if result_path.exists() or result_path.is_symlink():
            resume.supersede(result_path)
        print(f"re-running {cell_id} in image {document['run']['image']['id']}", flush=True)
        doc = backend.rerun(document, result_path, out / "logs" / runner.log_name(cell_id, round_index), plan)
    print(
        f"{cell_id}: {doc['status']}"
        + (f": {doc['failure']['reason']}" if doc["failure"] else "")
        + f" -> {result_path}"
    )
    return 0 if doc["status"] == "ok" else 1


def _report(args: argparse.Namespace) -> int:
    dirs = args.results or [Path("results") / _load_plan(args.matrix).name]
    plans = [results.stored_plan(d) for d in dirs]
    plan = plans[0]
    for other, folder in zip(plans[1:], dirs[1:], strict=True):
        if other.name != plan.name or other.baseline_id != plan.baseline_id:
            raise InputError([Problem(str(folder), "plan.json", f"is matrix {other.name!r} with baseline "
                              f"{other.baseline_id}, but {dirs[0]} is {plan.name!r} with baseline {plan.baseline_id}; "
                              "only shards of one matrix merge into one report")])  # fmt: skip
    cells = {c.id: c for p in plans for c in p.cells}
    if len(cells) != len(plan.cells):  # shards may cover different cells of one matrix: report them all
        plan = dataclasses.replace(plan, cells=tuple(cells.values()))
    return _render(plan, dirs, args.out or Path("reports") / plan.name, args.strict)


def _loaded_or_refuse(
    dirs_or_files: list[Path], loaded: results.LoadedResults, group_of_file: dict[str, str] | None = None
) -> None:
    for q in loaded.quarantined:
        print(f"quarantined {q.name}: {q.problems[0]}", file=sys.stderr)
    if len(set(dirs_or_files)) < len(dirs_or_files):
        print("a folder given more than once is read once", file=sys.stderr)
    for d in loaded.duplicates:
        print(f"counted once: {d.name} holds the same run as {d.same_as}", file=sys.stderr)
    if not loaded.documents:
        where = ", ".join(map(str, dirs_or_files))
        raise InputError([Problem(where, "", f"holds no valid result ({len(loaded.quarantined)} quarantined, "
                                  "their problems beside them in quarantine/); run the matrix first")])  # fmt: skip
    problems = compare.comparability_problems(loaded, group_of_file)
    if problems:
        raise InputError([Problem(", ".join(map(str, dirs_or_files)), "", p) for p in problems])


def _render(plan: Plan, dirs: list[Path], out_dir: Path, strict: bool) -> int:
    loaded = results.load_many(dirs)
    _loaded_or_refuse(dirs, loaded)
    view = report.View.from_plan(plan)
    analysis = report.analyze(view, loaded, strict=strict)
    for file, cell_id in analysis.outside:
        print(f"not in the plan: {file} holds cell {cell_id}, which plan.json does not list; not compared",
              file=sys.stderr)  # fmt: skip
    arguments.output_folder(out_dir, "--out")
    rendered = report.render(view, analysis, loaded, out_dir, dirs)
    print(
        f"report: {rendered.markdown}, {rendered.html}, {rendered.csv}, {rendered.verdict_json} "
        f"({len(loaded.documents)} results, {len(loaded.quarantined)} quarantined)"
    )
    for line in analysis.gate.lines:
        print(line)
    return analysis.gate.exit_code


def _compare(args: argparse.Namespace) -> int:
    sides = {"A": args.a, "B": args.b}
    if args.out:
        arguments.output_folder(args.out, "--out")
    found: dict[str, list[Path]] = {}
    for side, path in sides.items():
        if path.is_dir():  # shards in subfolders count; plans, verdicts and quarantined files do not
            found[side] = sorted(
                p for p in path.rglob("*.json*")
                if jsonio.is_document(p.name) and p.name not in (results.PLAN_FILE, "verdict.json")
                and results.QUARANTINE not in p.parts and resume.SUPERSEDED not in p.parts
                and (args.only is None or args.only in p.name)
            )  # fmt: skip
        elif path.is_file():
            found[side] = [path]
        else:
            raise InputError([Problem(str(path), side, "no such file or folder")])
        if not found[side]:
            raise InputError([Problem(str(path), side, "holds no result files")])
    both = {p.resolve() for p in found["A"]} & {p.resolve() for p in found["B"]}
    if both:
        raise InputError([Problem(str(min(both)), "B", f"is also in A ({len(both)} files are on both sides); a run "
                                  "compared with itself shows no change by construction: compare two runs")])  # fmt: skip
    documents, files, group_of = [], [], {}
    for side, paths in found.items():
        for path in paths:
            document, problems = results.check(path)
            if problems:  # an ad-hoc compare moves nothing: it refuses instead of quarantining
                raise InputError(problems)
            documents.append(document)
            files.append(str(path))
            group_of[str(path)] = side
    loaded = results.unique(documents, files)
    for copy in loaded.duplicates:
        if group_of[copy.name] != group_of[copy.same_as]:
            raise InputError([Problem(copy.name, group_of[copy.name], f"is the same run as {copy.same_as}; a run "
                                      "compared with itself shows no change by construction: compare two runs")])  # fmt: skip
    group_of = {file: group_of[file] for file in loaded.files}
    _loaded_or_refuse(list(sides.values()), loaded, group_of)
    labels = {side: f"{side}: {sides[side]}" for side in sides}
    view = report.View("compare", "A", ("A", "B"), labels, args.threshold_pct, args.alpha, 0,
                       f"ad-hoc comparison, threshold {args.threshold_pct:g}%")  # fmt: skip
    analysis = report.analyze(view, loaded, group_of_file=group_of, strict=args.strict)
    shown = analysis.timing[analysis.timing["verdict"].notna()]
    rows = [[r.workload, r.dtype, r.knobs, f"{r.ratio:.3f}" if r.ratio == r.ratio and r.ratio is not None else "",
             f"[{r.ci_low:.3f}, {r.ci_high:.3f}]" if r.ci_low == r.ci_low and r.ci_low is not None else "",
             f"{r.p_value:.2g}" if r.p_value == r.p_value and r.p_value is not None else "", r.verdict]
            for r in shown.itertuples()]  # fmt: skip
    print(
        tabulate(
            rows,
            headers=["workload", "dtype", "knobs", "B/A time", "99% interval", "p", "verdict"],
            disable_numparse=True,
        )
    )
    if args.out:
        rendered = report.render(view, analysis, loaded, args.out, list(sides.values()))
        print(f"report: {rendered.markdown}, {rendered.html}, {rendered.verdict_json}")
    for line in analysis.gate.lines:
        print(line)
    return analysis.gate.exit_code


def _qualify(args: argparse.Namespace) -> int:
    plan = _load_plan(args.matrix)
    out = args.out or Path("results") / plan.name
    args.out = out
    report_out = arguments.output_folder(args.report_out or Path("reports") / plan.name, "--report-out")
    outcomes = _run_plan(plan, args)
    if _exit_code(outcomes) == 3:
        return 3
    return _render(plan, [out], report_out, args.strict)
