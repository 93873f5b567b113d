"""Run every round of a plan's cells through a backend on this host, one result document per run.

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

from harness.backends.base import Backend
from harness.errors import RunStopped
from harness.executors.runs import CellOutcome, Pending, decide, outcome_of, prepared, tag
from harness.plan.model import Cell, Plan
from harness.results import folder, resume


@dataclass(frozen=True)
class Gpus:
    """The GPUs a pool runs on: ``ids``, one per concurrent run (none: whatever the backend sees, one run
    at a time); ``exclusive``: every run needs all of them at once (a multi-GPU workload)."""

    ids: tuple[str, ...] = ()
    exclusive: bool = False


NO_GPUS = Gpus()


@dataclass(frozen=True)
class Chosen:
    """Which runs a pool makes: ``cells`` of the plan (None: every cell), ``rounds`` (None: every round),
    and whether valid earlier results are kept (``mode``)."""

    cells: tuple[Cell, ...] | None = None
    rounds: range | None = None
    mode: resume.Mode = resume.Mode.RESUME


EVERY_RUN = Chosen()


def run(
    plan: Plan,
    backend: Backend,
    results_dir: Path,
    say: Callable[[str], None],
    chosen: Chosen = EVERY_RUN,
    gpus: Gpus = NO_GPUS,
    tick: Callable[[int, int], None] | None = None,
) -> list[CellOutcome]:
    """Run the ``chosen`` runs (``Chosen``: default, every round of every cell); a failed run is recorded
    and the next one runs.

    ``gpus``: the GPUs to run on (``Gpus``). ``tick``: told (finished, to run)
    when the runs are decided and after each one.

    Runs with a valid result of the same identity are kept, not repeated (see ``resume``), so an
    interrupted run continues where it stopped. ``plan.json`` always describes the whole matrix, so a
    report can place any subset run into it.
    """
    rounds, fresh = chosen.rounds, chosen.mode is resume.Mode.FRESH
    with prepared(plan, results_dir, say, rounds, fresh=fresh):
        for line in backend.sweep(results_dir):
            say(line)
        cells = plan.cells if chosen.cells is None else chosen.cells
        return _Rounds(plan, backend, results_dir, say, gpus, tick).run(cells, chosen.mode, rounds)


class _Rounds:
    """The runs of one ``run`` call: which to keep, then each through the backend on its GPU(s)."""

    def __init__(
        self,
        plan: Plan,
        backend: Backend,
        results_dir: Path,
        say: Callable[[str], None],
        gpus: Gpus,
        tick: Callable[[int, int], None] | None = None,
    ) -> None:
        self.plan, self.backend, self.results_dir, self.say = plan, backend, results_dir, say
        self.tick = tick or (lambda done, total: None)
        # one slot per concurrent run: a GPU id, all of them (exclusive), or none (the backend's default)
        slots: list[tuple[str, ...]] = (
            [tuple(gpus.ids)] if gpus.exclusive or len(gpus.ids) < 2 else [(gpu,) for gpu in gpus.ids]
        )
        self.free: queue.Queue[tuple[str, ...]] = queue.Queue()
        for slot in slots or [()]:
            self.free.put(slot)
        self.workers = len(slots) or 1
        self.lock = threading.Lock()
        self.started, self.ran, self.total, self.to_run = time.monotonic(), 0, 0, 0

    def run(self, cells: tuple[Cell, ...], mode: resume.Mode, rounds: range | None) -> list[CellOutcome]:
        todo, outcomes, self.total = decide(
            self.plan,
            cells,
            self.results_dir,
            lambda cell: self.backend.identity(cell, self.plan),
            mode,
            self.say,
            rounds,
        )
        if todo:  # installs and image builds before the first timed round (they say so as they go)
            self.backend.prepare(tuple(dict.fromkeys(p.cell for p in todo)), self.plan, self.results_dir)
        self.to_run, self.started = len(todo), time.monotonic()
        self.tick(0, self.to_run)
        if self.workers == 1:
            for pending in todo:
                outcomes[pending.position] = self._one(pending)
        else:
            outcomes.update(self._concurrently(todo))
        return [outcomes[position] for position in sorted(outcomes)]

    def _concurrently(self, todo: list[Pending]) -> dict[int, CellOutcome]:
        """Each run on the first free GPU, in schedule order; Ctrl-C stops them all, keeping nothing
        partial."""
        pool = concurrent.futures.ThreadPoolExecutor(self.workers, thread_name_prefix="cell")
        futures = {pool.submit(self._one, pending): pending.position for pending in todo}
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

    def _one(self, pending: Pending) -> CellOutcome:
        gpus = self.free.get()
        try:
            return self._on(gpus, pending)
        finally:
            self.free.put(gpus)

    def _on(self, gpus: tuple[str, ...], pending: Pending) -> CellOutcome:
        cell, round_index, note = pending.cell, pending.round_index, pending.note
        label = tag(pending.position, self.total, cell, round_index, self.plan.rounds)
        where = f" on GPU {','.join(gpus)}" if gpus else ""
        self.say(
            f"{label}: running on the {self.backend.name} backend{where} (torch {cell.torch}, cuDNN "
            f"{cell.cudnn.label})" + (f"; {note}" if note else "")
        )
        start = time.monotonic()
        try:
            finished = self.backend.run_cell(cell, self.plan, self.results_dir, round_index, gpus=gpus)
            doc = folder.write_result(self.results_dir, cell, finished.document, finished.run)
        except OSError as exc:  # the results folder itself failed (disk full, gone): nothing can be kept
            raise RunStopped(
                f"cannot write into {self.results_dir} ({exc.strerror or exc}) during {cell.id} round "
                f"{round_index}; "
                "nothing partial was kept; fix that and run again to resume"
            ) from None
        outcome = outcome_of(doc, round_index, time.monotonic() - start)
        with self.lock:  # the runs still to go, at the rate finished runs came in (concurrency included)
            self.ran += 1
            left = self.to_run - self.ran
            eta = (time.monotonic() - self.started) / self.ran * left if left else None
            self.tick(self.ran, self.to_run)
        if outcome.status == "ok":
            self.say(
                f"{label}: ok{where}, {outcome.measured} in {outcome.wall_s:.1f} s"
                + (f" (about {eta:.0f} s left)" if eta else "")
            )
        else:
            self.say(f"{label}: FAILED: {outcome.reason}")
        return outcome
