"""Run a plan's cells into one results folder: on this host's GPUs (``pool``) or as a Slurm array
(``slurm``)."""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness import jsonio, suite_listing
from harness.backends import registry
from harness.errors import InputError, Problem
from harness.executors import pool, runs
from harness.executors.runs import CellOutcome
from harness.plan.model import Cell, Plan
from harness.report import ownership
from harness.results import folder, resume


@dataclass(frozen=True)
class SlurmAsk:
    """What the command line asks of Slurm (the matrix's ``slurm:`` section fills the rest)."""

    partition: str | None = None
    account: str | None = None
    time: str | None = None
    gpus: int | None = None


@dataclass(frozen=True)
class RunRequest:
    out: Path
    settings: registry.Settings
    only: tuple[str, ...] = ()  # run only the cells whose id contains one of these
    mode: resume.Mode = resume.Mode.RESUME
    gpus: str | None = None  # the GPU ids as given: ids, 'all', or None (the backend's default)
    slurm: SlurmAsk | None = None  # submit to Slurm instead of running here


def run(
    plan: Plan,
    request: RunRequest,
    say: Callable[[str], None],
    detail: Callable[[str], None] | None = None,
    tick: Callable[[int, int], None] | None = None,
    rounds: range | None = None,
) -> list[CellOutcome]:
    """Run the chosen cells' ``rounds`` (default: every round of the plan), kept results kept; a failed run
    is recorded and the next one runs.

    ``say``: run-level lines; ``detail``: what a backend says during a run (default: ``say``); ``tick``:
    (finished, to run) as runs finish."""
    if request.slurm is not None:
        return _submit(plan, request, say, rounds)
    backend = registry.create(request.settings, detail or say)
    cells = select(plan, request.only)
    gpus = gpu_ids(request.gpus)
    if gpus and plan.suite.device != "cpu":
        _on_this_host(gpus, request.gpus or "")
    ownership.refuse_inside_report(request.out, "out")
    jsonio.output_folder(request.out, "out")
    say(_header(plan, cells, request, rounds))
    exclusive = needs_every_gpu(plan, request.settings.python)
    if gpus:
        how = "each run gets all of them (a multi-GPU workload)" if exclusive else "one run per GPU at a time"
        say(f"GPUs {', '.join(gpus)}: {how}")
    chosen = pool.Chosen(cells, rounds, request.mode)
    outcomes = pool.run(plan, backend, request.out, say, chosen, pool.Gpus(gpus, exclusive), tick)
    _say_kept(outcomes, request.out, say)
    return outcomes


class Steps:
    """``run`` for a command that runs in several steps into one folder (qualify's rounds): a fresh start
    is the first step's alone, which moves aside what earlier runs left; the later steps add to what it
    made (they resume), rather than moving that aside in turn."""

    def __init__(
        self,
        request: RunRequest,
        say: Callable[[str], None],
        detail: Callable[[str], None] | None = None,
        tick: Callable[[int, int], None] | None = None,
    ) -> None:
        self.request, self.say, self.detail, self.tick = request, say, detail, tick

    def __call__(self, plan: Plan, rounds: range | None = None, out: Path | None = None) -> list[CellOutcome]:
        """``run`` of ``plan``'s ``rounds`` (default: all), into ``out`` (default: the request's)."""
        request = self.request if out is None else dataclasses.replace(self.request, out=out)
        if self.request.mode is resume.Mode.FRESH:
            self.request = dataclasses.replace(self.request, mode=resume.Mode.RESUME)
        return run(plan, request, self.say, self.detail, self.tick, rounds)


def _submit(
    plan: Plan, request: RunRequest, say: Callable[[str], None], rounds: range | None
) -> list[CellOutcome]:
    """Submit the runs to Slurm as one array job; each task runs the matrix's backend on its node."""
    from harness.executors.slurm import array
    from harness.executors.slurm import request as slurm_request

    assert request.slurm is not None
    if request.gpus is not None:
        why = "Slurm picks each task's GPUs; ask it for a count of them per task instead"
        raise InputError([Problem("gpus", request.gpus, why, setting="gpus")])
    ask = request.slurm
    exclusive = needs_every_gpu(plan, request.settings.python)
    req = slurm_request.request(plan, ask.partition, ask.account, ask.time, ask.gpus, exclusive)
    ownership.refuse_inside_report(request.out, "out")
    jsonio.output_folder(request.out, "out")
    array.available()
    cells = select(plan, request.only)
    say(
        f"submitting {len(cells)} of {len(plan.cells)} cells of {plan.name!r} to Slurm, results into "
        f"{request.out}/ (a folder every node must see; each task runs the {plan.backend} backend there)"
        + _mode_words(request.mode)
    )
    outcomes = array.Submission(plan, request.out, request.settings, req, say).run(
        cells, request.mode, rounds
    )
    _say_kept(outcomes, request.out, say)
    return outcomes


def select(plan: Plan, only: tuple[str, ...]) -> tuple[Cell, ...]:
    """The plan's cells whose id contains one of ``only`` (all of them where ``only`` is empty)."""
    if not only:
        return plan.cells
    cells = tuple(c for c in plan.cells if any(text in c.id for text in only))
    if not cells:
        why = f"no cell id contains {' or '.join(only)}; see 'plan'"
        raise InputError([Problem("only", "", why, setting="only")])
    return cells


def needs_every_gpu(plan: Plan, python: str | None) -> bool:
    """Whether the suite names a workload that runs its own process per GPU (its runs get them all)."""
    workloads = set(plan.suite.workloads)
    return bool(workloads) and bool(workloads & suite_listing.multi_gpu_workloads(python))


def host_gpus(given: str) -> list[tuple[str, str]]:
    """(index, UUID) of every GPU nvidia-smi lists here; ``given`` (the GPU ids asked) names the error."""
    try:
        listed = subprocess.run(
            ["nvidia-smi", "--query-gpu=index,uuid", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise InputError(
            [
                Problem(
                    "gpus",
                    given,
                    f"cannot list this host's GPUs with nvidia-smi ({exc}); a suite on the CPU needs no GPU "
                    "ids (with suite.device: cpu the ids only number concurrent runs)",
                    setting="gpus",
                )
            ]
        ) from None
    gpus = [
        tuple(part.strip() for part in line.split(",", 1)) for line in listed.splitlines() if line.strip()
    ]
    if not gpus:
        raise InputError([Problem("gpus", given, "nvidia-smi lists no GPU on this host", setting="gpus")])
    return [(g[0], g[-1]) for g in gpus]


def _on_this_host(ids: tuple[str, ...], given: str) -> None:
    """Explicit ids must be this host's GPUs (an index or a UUID), or a GPU suite would run elsewhere."""
    host = host_gpus(given)
    known = {name for gpu in host for name in gpu}
    unknown = [i for i in ids if i not in known]
    if unknown:
        listed = ", ".join(f"{index} ({uuid})" for index, uuid in host)
        raise InputError(
            [
                Problem(
                    "gpus", given, f"{', '.join(unknown)}: not a GPU of this host ({listed})", setting="gpus"
                )
            ]
        )


def gpu_ids(text: str | None) -> tuple[str, ...]:
    """The GPU ids asked: as given, or 'all' through nvidia-smi; each must name a GPU only once."""
    if text is None:
        return ()
    if text.strip() == "all":
        return tuple(index for index, _ in host_gpus("all"))
    ids = tuple(part.strip() for part in text.split(","))
    if any(not part or not all(c.isalnum() or c in "-:" for c in part) for part in ids):
        why = "give GPU indexes or UUIDs separated by commas, e.g. 0,1, or 'all'"
        raise InputError([Problem("gpus", text, why, setting="gpus")])
    if len(set(ids)) != len(ids):
        why = "names a GPU twice; two runs on one GPU would time each other"
        raise InputError([Problem("gpus", text, why, setting="gpus")])
    return ids


def _header(plan: Plan, cells: tuple[Cell, ...], request: RunRequest, rounds: range | None) -> str:
    """A run's first line: what it runs, into where; or, resuming where every run asked is already in the
    folder (a finished folder), that those are checked and kept rather than anything run."""
    what = f"{len(cells)} of {len(plan.cells)} cells of {plan.name!r}"
    asked = runs.schedule(cells, rounds or runs.all_rounds(plan))
    if request.mode is resume.Mode.RESUME and all(
        folder.result_path(request.out, cell.id, round_index).exists() for round_index, cell in asked
    ):
        return (
            f"{what}: every run asked ({len(asked)}) is already in {request.out}/ from earlier runs; each "
            "is kept where it is valid and made the same way"
        )
    return f"running {what} into {request.out}/ (logs in {request.out}/logs/)" + _mode_words(request.mode)


def _mode_words(mode: resume.Mode) -> str:
    return "" if mode is resume.Mode.RESUME else f", {mode.value}"


def _say_kept(outcomes: list[CellOutcome], out: Path, say: Callable[[str], None]) -> None:
    kept = sum(o.kept for o in outcomes)
    if kept:
        say(f"{kept} of {len(outcomes)} results kept from earlier runs into {out}/")
