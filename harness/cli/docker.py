"""``harness images|rerun|gather`` and ``run --backend k8s``: the docker backend's images, a re-run of one,
and Kubernetes' Jobs of them; each prints what it did and picks its exit code."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from harness import jsonio
from harness.cli import requests
from harness.cli.output import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, Output
from harness.errors import InputError


def images(args: argparse.Namespace, out: Output) -> int:
    from tabulate import tabulate

    from harness.backends.docker.dockerfile import render

    plan = requests.plan(args.matrix, "docker")
    options = requests.build_options(args)
    if args.dry_run:
        for cell in plan.cells:
            rendered = render(cell, options, plan.image_python)
            print(f"# ===== {rendered.reference}\n{rendered.dockerfile}")
        return EXIT_OK
    from harness.backends.docker.backend import build_all

    # the build logs' folder: a --log-dir as the user names it (a link there is followed once, here), else
    # logs/ of the results folder, where a planted link or file is refused before the engine is asked;
    # nothing is created before the engine answers
    if args.log_dir:
        log_dir = Path(os.path.realpath(args.log_dir))
    else:
        log_dir = Path("results") / plan.name / "logs"
        if os.path.lexists(log_dir):
            jsonio.real_folder(log_dir)
    rows = [
        [b.cell_id, b.image.reference, b.state, f"{b.seconds:.1f}", b.error or ""]
        for b in build_all(options, plan, log_dir, out.say, out.detail)
    ]
    print(tabulate(rows, headers=["cell", "image", "state", "seconds", "error"]))
    states = [row[2] for row in rows]
    print(f"{states.count('built')} built, {states.count('cached')} cached, {states.count('FAILED')} failed")
    return EXIT_FAILED if "FAILED" in states else EXIT_OK


def rerun(args: argparse.Namespace, out: Output) -> int:
    from harness.executors import rerun as again

    where = args.out or Path("results") / "rerun"
    doc, path = again.rerun(args.result, requests.settings(args, "docker"), where, out.say)
    failure = f": {doc['failure']['reason']}" if doc["failure"] else ""
    print(f"{doc['cell']['id']}: {doc['status']}{failure} -> {path}")
    return EXIT_OK if doc["status"] == "ok" else EXIT_FAILED


def gather(args: argparse.Namespace, out: Output) -> int:
    from harness.executors.k8s import gather as k8s_gather
    from harness.executors.k8s import jobs as k8s_jobs

    plan = requests.plan(args.matrix, "docker")
    if not args.source.is_dir():
        raise InputError.one(
            "--from", str(args.source), "is not a folder: give the copy of the results volume"
        )
    where = jsonio.output_folder(args.out or Path("results") / plan.name, "out")
    target = k8s_jobs.Target(args.k8s_registry)
    done = k8s_gather.gather(plan, args.source, where, requests.build_options(args), target, out.say)
    for name, why in done.refused:
        out.warn(f"error: {args.source / name}: {why}")
    print(
        f"gathered {len(done.kept)} results into {where}/, refused {len(done.refused)}; report with "
        f"'{args.prog} report --results {where}'"
    )
    return EXIT_BAD_INPUT if done.refused or not done.kept else EXIT_OK


def k8s(args: argparse.Namespace, out: Output) -> int:
    """Print one Indexed Job per cell (--dry-run), or submit them where a cluster is configured."""
    if args.backend != "k8s":
        raise InputError.one("--dry-run", "", "only --backend k8s has a dry run")
    import yaml

    from harness.executors import launch
    from harness.executors.k8s import jobs as k8s_jobs

    plan = requests.plan(args.matrix, "docker")
    cells = launch.select(plan, tuple(args.only or ()))
    options, target = requests.build_options(args), requests.k8s_target(args)
    jobs = k8s_jobs.render(plan, cells, options, target)
    if args.dry_run:
        print(yaml.safe_dump_all(jobs, sort_keys=False), end="")
        out.warn(f"# {len(jobs)} Indexed Jobs, {plan.rounds} completions each")
        return EXIT_OK
    from harness.executors.k8s import submit as k8s_submit

    out.say(
        f"submitting {len(jobs)} Indexed Jobs ({plan.rounds} completions each) to namespace "
        f"{args.k8s_namespace}"
    )
    return EXIT_OK if k8s_submit.submit(jobs, args.k8s_namespace, out.say) else EXIT_FAILED
