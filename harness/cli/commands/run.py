"""``harness run``: the suite in every cell of a matrix (here, on Slurm), or Kubernetes' Jobs of them
(``--backend k8s``: printed with ``--dry-run``, else submitted)."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.backends import registry
from harness.cli import option_groups, requests
from harness.cli.command import Command
from harness.cli.commands.plan import decided
from harness.cli.output import EXIT_FAILED, EXIT_OK, Output, exit_code
from harness.errors import InputError


def arguments(parser: argparse.ArgumentParser) -> None:
    option_groups.matrix_arg(parser)
    option_groups.run_args(parser)
    option_groups.verbosity_args(parser)


def handle(args: argparse.Namespace, out: Output) -> int:
    if args.backend == "k8s" or args.dry_run:
        return _k8s(args, out)
    from harness.executors import launch

    plan = requests.plan(args.matrix, registry.realizing(args.backend), args)
    for line in decided(plan):
        out.say(line)
    missing = requests.torch_check(plan, args)
    if missing:
        out.warn(f"warning: {missing}")
    request = requests.run_request(args, plan.backend, args.out or Path("results") / plan.name)
    args.kept_in = request.out  # what a Ctrl-C says was kept
    return exit_code(launch.run(plan, request, out.say, out.detail, out.console.runs), out)


def _k8s(args: argparse.Namespace, out: Output) -> int:
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


COMMAND = Command(
    "run",
    "run the suite in every cell of a matrix",
    "--matrix matrix.yaml --out results/smoke",
    arguments,
    handle,
)
