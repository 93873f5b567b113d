"""``harness plan``: a matrix checked, its cells listed with what this host decided of it; nothing runs."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from harness.cli import option_groups, requests
from harness.cli.checked_types import index_url, interpreter, nonempty_path
from harness.cli.command import Command
from harness.cli.output import EXIT_OK, Output

if TYPE_CHECKING:
    from harness.plan.model import Plan


def arguments(parser: argparse.ArgumentParser) -> None:
    option_groups.matrix_arg(parser)
    parser.add_argument("--json", action="store_true", help="print the plan as JSON")
    parser.add_argument(
        "--python",
        type=interpreter,
        help="interpreter with torch for torch: installed cells, as run takes it (default: this one)",
    )
    parser.add_argument(
        "--wheelhouse",
        type=nonempty_path,
        help="where cuDNN wheels come from, as run takes it: {wheel: newest} is the newest release in it",
    )
    parser.add_argument(
        "--index-url",
        type=index_url,
        help="package index, as run takes it (default: the installers' own, PyPI): {wheel: newest} is the "
        "newest release on it",
    )


def handle(args: argparse.Namespace, out: Output) -> int:
    from tabulate import tabulate

    from harness.backends.host import has_nvidia_gpu, without_a_gpu
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
        + (f" ({plan.cpu_regression_pct:g}% on a CPU)" if plan.cpu_regression_pct is not None else "")
    )
    lines = decided(plan)
    if lines:
        print("\n" + "\n".join(lines))
    if plan.backend == "local":
        missing = requests.host(args).missing_torch(plan.cells)
        if missing:
            every = all(c.torch == "installed" for c in plan.cells)
            then = "run and qualify refuse to start (exit 3)" if every else "those cells would fail"
            out.warn(f"warning: {missing}; {then}")
    if plan.backend == "local" and not has_nvidia_gpu():
        for note in (_cuda_builds_without_a_gpu(plan), without_a_gpu(plan.cells)):
            if note:
                print(f"\nnote: {note}")
    return EXIT_OK


def decided(plan: Plan) -> list[str]:
    """What this host made of the matrix's conditional cuDNN sources: the release each ``{wheel: newest}``
    is, and each cell left out with why (named, never run and failed). run and qualify say it too."""
    lines = [f"chosen here: {c.written.label} is cell {c.cell_id}: {c.how}" for c in plan.chosen]
    if plan.left_out:
        count = f"{len(plan.left_out)} cell" + ("s" if len(plan.left_out) > 1 else "")
        lines.append(f"left out here ({count} of the matrix; not run, not failed):")
        lines += [f"  {left.cell.label}: {left.why}" for left in plan.left_out]
    return lines


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


COMMAND = Command(
    "plan",
    "validate a matrix and list its cells (no side effects)",
    "--matrix matrix.yaml",
    arguments,
    handle,
    more="A cuDNN source with a device or optional term is decided on this host as a run would decide "
    "it\n(with the interpreter and the package source these options give): the cells it leaves out are "
    "listed,\nwith why.",
)
