"""Run every cell of a plan through a backend, one result document per cell.

With several GPUs, runs go concurrently, one GPU each: a pool hands each run a GPU nobody else holds
and takes it back when the run ends, so every GPU stays busy and no two runs share one. A plan whose
suite needs every GPU (the DDP workload) runs one run at a time, with all of them.
"""

from __future__ import annotations

import concurrent.futures
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import jsonio, resume
from harness.backends import Backend
from harness.errors import RunStopped
from harness.matrix import Cell, Plan
from harness.results import PLAN_FILE


@dataclass(frozen=True)
class CellOutcome:
    cell_id: str
    round_index: int
    status: str
    reason: str | None
    wall_s: float
    measurements: int
    kept: bool = False  # from an earlier run into the same folder


def schedule(cells: tuple[Cell, ...], rounds: int) -> list[tuple[int, Cell]]:
    """(round, cell) in run order: cells forward in odd rounds, backward in even ones (A B B A ...).

    Interleaving puts slow drift (clocks, temperature, other tenants) on both sides of a
    comparison instead of on whichever cell ran last, as asv's --interleave-rounds does.
    """
    order = []
    for round_index in range(1, rounds + 1):
        ordered = cells if round_index % 2 else tuple(reversed(cells))
        order += [(round_index, cell) for cell in ordered]
    return order


def result_name(cell_id: str, round_index: int) -> str:
    return f"{cell_id}.r{round_index}.json"


def log_name(cell_id: str, round_index: int) -> str:
    """The run's own output, in the results folder's ``logs/``."""
    return f"{cell_id}.r{round_index}.log"


def run(
    plan: Plan,
    backend: Backend,
    results_dir: Path,
    say: Callable[[str], None] = print,
    cells: tuple[Cell, ...] | None = None,
    mode: resume.Mode = resume.Mode.RESUME,
    gpus: tuple[str, ...] = (),
    exclusive: bool = False,
) -> list[CellOutcome]:
    """Run every round of the plan's cells (or ``cells`` of them); a failed run is recorded and the next one runs.

    ``gpus``: the GPU ids to use, one per concurrent run (empty: whatever the backend sees, one run at
    a time). ``exclusive``: every run needs all of ``gpus`` at once.

    Runs with a valid result of the same identity are kept, not repeated (see ``resume``), so an
    interrupted run continues where it stopped. ``plan.json`` always describes the whole matrix, so a
    report can place any subset run into it.
    """
    with resume.locked(results_dir) as swept:
        if swept:
            say(f"removed what an interrupted run left: {', '.join(swept)}")
        for line in backend.sweep(results_dir):
            say(line)
        jsonio.write_atomic(results_dir / PLAN_FILE, plan.to_json())
        chosen = plan.cells if cells is None else cells
        return _Rounds(plan, backend, results_dir, say, gpus, exclusive).run(chosen, mode)


class _Rounds:
    """The runs of one ``run`` call: which to keep, then each through the backend on its GPU(s)."""

    def __init__(
        self,
        plan: Plan,
        backend: Backend,
        results_dir: Path,
        say: Callable[[str], None],
        gpus: tuple[str, ...],
        exclusive: bool,
    ) -> None:
        self.plan, self.backend, self.results_dir, self.say = plan, backend, results_dir, say
        # one slot per concurrent run: a GPU id, all of them (exclusive), or none (the backend's default)
        slots: list[tuple[str, ...]] = (
            [tuple(gpus)] if exclusive or len(gpus) < 2 else [(gpu,) for gpu in gpus]
        )
        self.free: queue.Queue[tuple[str, ...]] = queue.Queue()
        for slot in slots or [()]:
            self.free.put(slot)
        self.workers = len(slots) or 1
        self.lock = threading.Lock()
        self.started, self.ran, self.total, self.to_run = time.monotonic(), 0, 0, 0

    def run(self, cells: tuple[Cell, ...], mode: resume.Mode) -> list[CellOutcome]:
        order = schedule(cells, self.plan.rounds)
        self.total = len(order)
        outcomes: dict[int, CellOutcome] = {}
        todo = []
        for index, (round_index, cell) in enumerate(order, 1):
            decision = resume.decide(
                self.results_dir / result_name(cell.id, round_index),
                self.backend.identity(cell, self.plan),
                mode,
            )
            if decision.run:
                todo.append((index, round_index, cell, decision.note))
                continue
            self.say(f"{self._tag(index, cell, round_index)}: {decision.note}")
            if decision.kept is not None:
                outcomes[index] = _kept(decision.kept, round_index)
        self.to_run, self.started = len(todo), time.monotonic()
        if self.workers == 1:
            for index, round_index, cell, note in todo:
                outcomes[index] = self._one(index, round_index, cell, note)
        else:
            outcomes.update(self._concurrently(todo))
        return [outcomes[index] for index in sorted(outcomes)]

    def _concurrently(self, todo: list[tuple[int, int, Cell, str | None]]) -> dict[int, CellOutcome]:
        """Each run on the first free GPU, in schedule order; Ctrl-C stops them all, keeping nothing partial."""
        pool = concurrent.futures.ThreadPoolExecutor(self.workers, thread_name_prefix="cell")
        futures = {pool.submit(self._one, *job): job[0] for job in todo}
        try:
            done = {}
            pending = set(futures)
            while pending:  # wait in slices: a bare wait() would not let Ctrl-C in until it returned
                finished, pending = concurrent.futures.wait(pending, timeout=0.5)
                for future in finished:
                    done[futures[future]] = future.result()  # a RunStopped here stops the whole run
            return done
        except BaseException:
            for future in futures:
                future.cancel()
            self.backend.stop()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _tag(self, index: int, cell: Cell, round_index: int) -> str:
        return f"[{index}/{self.total}] {cell.id}" + (f" round {round_index}" if self.plan.rounds > 1 else "")

    def _one(self, index: int, round_index: int, cell: Cell, note: str | None) -> CellOutcome:
        gpus = self.free.get()
        try:
            return self._on(gpus, index, round_index, cell, note)
        finally:
            self.free.put(gpus)

    def _on(
        self, gpus: tuple[str, ...], index: int, round_index: int, cell: Cell, note: str | None
    ) -> CellOutcome:
        tag = self._tag(index, cell, round_index)
        where = f" on GPU {','.join(gpus)}" if gpus else ""
        self.say(
            f"{tag}: running on the {self.backend.name} backend{where} (torch {cell.torch}, cuDNN {cell.cudnn.label})"
            + (f"; {note}" if note else "")
        )
        start = time.monotonic()
        try:
            doc = self.backend.run_cell(
                cell,
                self.plan,
                self.results_dir / result_name(cell.id, round_index),
                self.results_dir / "logs" / log_name(cell.id, round_index),
                round_index,
                gpus=gpus,
            )
        except OSError as exc:  # the results folder itself failed (disk full, gone): nothing can be kept
            raise RunStopped(
                f"cannot write into {self.results_dir} ({exc.strerror or exc}) during {cell.id} round {round_index}; "
                "nothing partial was kept; fix that and run again to resume"
            ) from None
        outcome = CellOutcome(
            cell.id,
            round_index,
            str(doc["status"]),
            (doc.get("failure") or {}).get("reason"),  # type: ignore[union-attr]
            time.monotonic() - start,
            len(doc["measurements"]),
        )  # type: ignore[arg-type]
        with self.lock:  # the runs still to go, at the rate finished runs came in (concurrency included)
            self.ran += 1
            left = self.to_run - self.ran
            eta = (time.monotonic() - self.started) / self.ran * left if left else None
        if outcome.status == "ok":
            self.say(
                f"{tag}: ok{where}, {outcome.measurements} measurements in {outcome.wall_s:.1f} s"
                + (f" (about {eta:.0f} s left)" if eta else "")
            )
        else:
            self.say(f"{tag}: FAILED: {outcome.reason}")
        return outcome


def _kept(document: dict[str, Any], round_index: int) -> CellOutcome:
    return CellOutcome(
        document["cell"]["id"],
        round_index,
        document["status"],
        (document.get("failure") or {}).get("reason"),
        0.0,
        len(document["measurements"]),
        kept=True,
    )
