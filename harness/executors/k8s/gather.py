"""Gather what the Kubernetes pods wrote into a results folder that ``report`` reads.

Each pod of a cell's Indexed Job writes ``/results/<cell id>.index<N>.json`` on the results volume: the
suite's own document, without the run record a backend adds. Copied here (``kubectl cp`` of the volume,
or the volume mounted), each becomes round N + 1 of its cell, with a run record that says the Job ran
it, and is validated like any result. The copy is untrusted input: a file that is not a pod's result of
a cell of the plan is refused with its reason and left where it is; nothing outside ``out`` is written.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import harness
from harness import jsonio
from harness.backends.base import suite_arguments
from harness.backends.docker import dockerfile
from harness.errors import InputError
from harness.executors.k8s.jobs import Target, job_name
from harness.executors.runs import prepared
from harness.plan.model import Plan
from harness.results import folder
from harness.suite.document import RunRecord

POD_RESULT = re.compile(r"(?P<cell>[A-Za-z0-9][A-Za-z0-9._+-]{0,199})\.index(?P<index>[0-9]{1,4})\.json")
MAX_BYTES = 64 * 1024 * 1024  # far above a suite result; a bigger file is not one


@dataclass(frozen=True)
class Gathered:
    kept: tuple[Path, ...]
    refused: tuple[tuple[str, str], ...]  # (file, why)


def gather(
    plan: Plan,
    source: Path,
    out: Path,
    options: dockerfile.BuildOptions,
    target: Target,
    say: Callable[[str], None],
) -> Gathered:
    """Every pod result in ``source`` into ``out`` as ``<cell id>.r<N>.json.gz``, with ``plan.json``."""
    cells = {cell.id: cell for cell in plan.cells}
    kept: list[Path] = []
    refused: list[tuple[str, str]] = []
    with prepared(plan, out, say):
        for path in sorted(source.iterdir()):
            name = path.name
            match = POD_RESULT.fullmatch(name)
            if not match or not path.is_file() or path.is_symlink():
                refused.append((name, "not a pod's result (<cell id>.index<N>.json, a plain file)"))
                continue
            cell = cells.get(match["cell"])
            round_index = int(match["index"]) + 1
            if cell is None:
                refused.append((name, f"cell {match['cell']} is not in the plan of {plan.name!r}"))
                continue
            if round_index > plan.rounds:
                refused.append((name, f"index {match['index']} is beyond the plan's {plan.rounds} rounds"))
                continue
            destination = folder.result_path(out, cell.id, round_index)
            if destination.exists():
                refused.append((name, f"{destination.name} is already in {out}; gather into a new folder"))
                continue
            try:
                suite_doc = jsonio.read(path, MAX_BYTES)
            except (OSError, ValueError, RecursionError) as exc:
                refused.append((name, f"cannot be read as JSON: {exc}"))
                continue
            if not isinstance(suite_doc, dict) or "run" in suite_doc:
                refused.append((name, "not a document the suite writes"))
                continue
            named = suite_doc.get("cell")
            if not isinstance(named, dict) or named.get("id") != cell.id:
                refused.append((name, f"not a valid result: it names another cell than {cell.id}"))
                continue
            image = dockerfile.render(cell, options, plan.image_python)
            reference = (
                f"{target.registry.rstrip('/')}/{image.reference}" if target.registry else image.reference
            )
            run: RunRecord = {
                "backend": "k8s",
                "command": suite_arguments(cell, plan, f"/results/{name}", image.expect_cudnn),
                "exit_code": 0 if suite_doc.get("status") == "ok" else None,
                "wall_s": float(suite_doc.get("duration_s") or 0.0),
                "log": "",
                "round": round_index,
                "harness_version": harness.__version__,
                "matrix_sha256": plan.matrix_sha256,
                "k8s": {"image": reference, "job": job_name(cell), "completion_index": round_index - 1},
            }
            try:  # an invalid one is refused here, never kept as a failed run
                folder.write_result(out, cell, suite_doc, run, refuse_invalid=True)  # type: ignore[arg-type]
            except InputError as exc:
                refused.append((name, "not a valid result: " + "; ".join(str(p) for p in exc.problems[:3])))
                continue
            kept.append(destination)
            say(f"{name} -> {destination.name}")
    return Gathered(tuple(kept), tuple(refused))
