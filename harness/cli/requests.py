"""What the parsed command line asks, as the library takes it (the matrix's plan, build options, a
backend's settings, a run request, a Kubernetes target), and the other way: the flag of a setting the
library names in an error."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from harness import suite_listing
from harness.backends import packages, registry
from harness.backends.docker import dockerfile
from harness.errors import BackendUnavailable, HarnessError, InputError, Problem

if TYPE_CHECKING:
    from harness.backends.host import ThisHost
    from harness.executors.k8s import jobs as k8s_jobs
    from harness.executors.launch import RunRequest
    from harness.plan.model import Plan


def plan(path: Path, backend: str | None = None, args: argparse.Namespace | None = None) -> Plan:
    """The matrix, checked for the backend that will realize its cells (the command line's, else its own),
    its conditional cuDNN sources decided on this host as ``args`` would run them (``host``)."""
    from harness.plan import matrix

    return matrix.load(path, suite_listing.workload_ids(), registry.cell_problems, backend, host(args))


def host(args: argparse.Namespace | None) -> ThisHost:
    """This machine as a run of ``args`` sees it: the interpreter of ``torch: installed`` cells and where
    cuDNN wheels come from (the defaults where ``args`` gives none)."""
    from harness.backends.host import ThisHost

    source = packages.PackageSource(getattr(args, "index_url", None), getattr(args, "wheelhouse", None))
    return ThisHost(source, getattr(args, "python", None) or sys.executable)


def torch_check(plan: Plan, args: argparse.Namespace) -> str | None:
    """Before anything runs or is written: BackendUnavailable where every cell to run asks for
    ``torch: installed`` and the interpreter has no torch (no run could start); a warning where only
    some do (those fail, the others run). Slurm's tasks run on nodes with interpreters of their own."""
    if plan.backend != "local" or args.backend == "slurm":
        return None
    only = tuple(args.only or ())
    cells = [c for c in plan.cells if not only or any(text in c.id for text in only)]
    why = host(args).missing_torch(cells)
    if why is not None and all(c.torch == "installed" for c in cells):
        raise BackendUnavailable(f"no run could start: {why}", setting="python")
    return why


def k8s_target(args: argparse.Namespace) -> k8s_jobs.Target:
    """Where --backend k8s sends its Jobs."""
    from harness.executors.k8s import jobs as k8s_jobs

    return k8s_jobs.Target(args.k8s_registry, args.k8s_namespace, args.k8s_results_claim, args.timeout_s)


def build_options(args: argparse.Namespace) -> dockerfile.BuildOptions:
    problems = []
    if args.wheelhouse is not None:
        try:  # every *.whl a regular file: none a FIFO an installer would block on, a folder or a dead link
            wheels = packages.wheels(args.wheelhouse)
        except InputError as exc:
            problems += [flagged(p) for p in exc.problems]
        else:
            if not wheels:
                problems.append(Problem(str(args.wheelhouse), "--wheelhouse", "holds no .whl files"))
    if args.ca_bundle is not None and not args.ca_bundle.is_file():
        problems.append(Problem(str(args.ca_bundle), "--ca-bundle", "no such file"))
    if problems:
        raise InputError(problems)
    return dockerfile.BuildOptions(
        packages.PackageSource(args.index_url, args.wheelhouse), ca_bundle=args.ca_bundle
    )


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
    from harness.executors.launch import RunRequest, SlurmAsk
    from harness.executors.slurm import request as slurm_request
    from harness.results.resume import Mode

    mode = Mode.RERUN_FAILED if args.rerun_failed else (Mode.FRESH if args.fresh else Mode.RESUME)
    ask = None
    if args.backend == "slurm":
        found = slurm_request.results_dir_problems(out)  # before the folder is made
        if args.gpus is not None:
            why = "Slurm picks each task's GPUs; ask for a count with --slurm-gpus"
            found.append(Problem("--gpus", args.gpus, why))
        if found:
            raise InputError(found)
        ask = SlurmAsk(args.slurm_partition, args.slurm_account, args.slurm_time, args.slurm_gpus)
    return RunRequest(out, settings(args, backend), tuple(args.only or ()), mode, args.gpus, ask)


def flag(setting: str) -> str:
    """The option that gives ``setting``: each option's destination is the setting it gives."""
    return "--" + setting.replace("_", "-")


def flagged(problem: Problem) -> Problem:
    """``problem`` as the command line says it: the setting it names, by its flag."""
    return problem if problem.setting is None else problem.named(flag(problem.setting))


def flagged_error(error: HarnessError) -> str:
    """``error``'s message, with the flag of the setting it is about where it is about one."""
    return f"{error} ({flag(error.setting)})" if error.setting else str(error)
