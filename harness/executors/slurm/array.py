"""``run --backend slurm``: one Slurm array job per run, one task per (cell, round), gathered from a
shared folder.

The submitting side decides what to run exactly as a local run does (``resume``: valid results of the
same identity are kept), writes the tasks and a batch script under ``<out>/slurm/``, submits them with
``sbatch --array``, then follows the array through ``squeue`` and the result files the tasks write.
Each task (``python -m harness slurm-task``) runs its cell on its node with the matrix's own backend
(``local``: a subprocess of the given Python; ``docker``: ``docker run`` with the GPUs Slurm gave the
task) and writes the result into the results folder, which must be on a filesystem every node sees.

A task that ends without a result (pre-empted, timed out, its node lost, cancelled) is reported with the
state Slurm gives it, and the run exits 3; the same command again submits exactly the runs still
missing (``--rerun-failed``: the failed ones too). Ctrl-C cancels the array.

What each task asks Slurm for is ``request``'s; what it runs on its node, ``task``'s (modules beside this
one).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness import jsonio, resources
from harness.backends import registry
from harness.backends.records import read_result
from harness.errors import BackendUnavailable, InputError, RunStopped
from harness.executors.runs import CellOutcome, decide, outcome_of, prepared, tag
from harness.executors.slurm.request import Request, directive, results_dir_problems
from harness.plan.model import Cell, Plan
from harness.results import folder, resume

SLURM_DIR = "slurm"
POLL_S = 2.0
COMMANDS = ("sbatch", "squeue", "scontrol", "scancel")
COMMAND_TIMEOUT_S = 120.0  # a Slurm controller that does not answer must not hang the run


def available() -> None:
    missing = [c for c in COMMANDS if shutil.which(c) is None]
    if missing:
        raise BackendUnavailable(
            f"submitting to Slurm needs Slurm's {', '.join(missing)} on PATH (run it on a login node of the "
            "cluster)"
        )


@dataclass(frozen=True)
class Task:
    index: int  # the array task id
    order: int  # its place in the run's schedule, as local runs number them
    cell: Cell
    round_index: int


class Submission:
    """One array job: its tasks, submitted, then followed until every task has left the queue."""

    def __init__(
        self,
        plan: Plan,
        results_dir: Path,
        settings: registry.Settings,
        req: Request,
        say: Callable[[str], None],
    ) -> None:
        """``settings``: how each task makes the matrix's backend on its node (see ``run_task``)."""
        self.plan, self.results_dir, self.settings, self.request, self.say = (
            plan,
            results_dir,
            settings,
            req,
            say,
        )
        found = results_dir_problems(results_dir)
        if found:
            raise InputError(found)
        self.identity = registry.identity(settings, plan)

    def run(
        self, cells: tuple[Cell, ...], mode: resume.Mode, rounds: range | None = None
    ) -> list[CellOutcome]:
        self._refuse_if_an_array_still_writes_here()
        with prepared(self.plan, self.results_dir, self.say, rounds, fresh=mode is resume.Mode.FRESH):
            pending, outcomes, total = decide(
                self.plan, cells, self.results_dir, self.identity, mode, self.say, rounds
            )
            tasks = [Task(index, p.position, p.cell, p.round_index) for index, p in enumerate(pending)]
            if tasks:
                outcomes.update(self._submit_and_follow(tasks, total))
            return [outcomes[p] for p in sorted(outcomes)]

    def _comment(self) -> str:
        return f"harness:{self.results_dir.resolve()}"

    def _refuse_if_an_array_still_writes_here(self) -> None:
        """An array left by a killed run still writes here: sweeping would pull its scratch from under it."""
        listed = _slurm("squeue", "-h", "-o", "%F|%k").stdout
        jobs = sorted(
            {line.split("|", 1)[0] for line in listed.splitlines() if line.endswith("|" + self._comment())}
        )
        if jobs:
            raise BackendUnavailable(
                f"array job {', '.join(jobs)} still runs into {self.results_dir}; wait for it to end or "
                f"cancel it (scancel {' '.join(jobs)}), then run again"
            )

    def _submit_and_follow(self, tasks: list[Task], total: int) -> dict[int, CellOutcome]:
        stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        # lstat-checked here, where they are written into: a planted slurm/ or logs/ link is refused
        slurm_dir = jsonio.real_folder(self.results_dir / SLURM_DIR)
        logs_dir = jsonio.real_folder(slurm_dir / "logs")
        tasks_file = slurm_dir / f"tasks-{stamp}.json"
        jsonio.write_atomic(
            tasks_file,
            {
                **self.settings.to_json(),
                "tasks": [{"cell": t.cell.id, "round": t.round_index} for t in tasks],
            },
        )
        script = slurm_dir / f"array-{stamp}.sh"
        jsonio.write_text_atomic(script, self._script(tasks_file, len(tasks)))
        # the results folder on sbatch's argv, whatever it holds ('%' doubled: --output expands %A, %a)
        logs = str(logs_dir.resolve()).replace("%", "%%")
        done = _slurm(
            "sbatch", "--parsable", f"--output={logs}/%A_%a.out", f"--comment={self._comment()}", str(script)
        )
        if done.returncode != 0:
            raise BackendUnavailable(f"sbatch refused the array ({script}): {done.stderr.strip()[-1000:]}")
        job = done.stdout.strip().split(";")[0]
        self.say(
            f"submitted array job {job}: {len(tasks)} task{'s' * (len(tasks) != 1)} "
            f"({self.request.describe()}); "
            f"script {script}, task output {logs_dir}/"
        )
        try:
            outcomes, lost = self._follow(job, tasks, total)
        except BaseException:  # Ctrl-C, or squeue failing: the array must not run on unattended
            with contextlib.suppress(BackendUnavailable):
                _slurm("scancel", job)
            self.say(f"cancelled array job {job}")
            raise
        if lost:
            which = "; ".join(
                f"{t.cell.id} round {t.round_index} (task {job}_{t.index}: {lost[t.index]})"
                for t in tasks
                if t.index in lost
            )
            raise RunStopped(
                f"{len(lost)} of {len(tasks)} runs ended without a result: {which}; "
                "run the same command again to submit exactly the runs still missing"
            )
        return outcomes

    def _script(self, tasks_file: Path, count: int) -> str:
        out = self.results_dir.resolve()
        command = [
            sys.executable,
            "-m",
            "harness",
            "slurm-task",
            "--results",
            str(out),
            "--tasks",
            str(tasks_file.resolve()),
        ]
        return "\n".join(
            [
                "#!/bin/bash",
                directive("job-name", f"harness-{self.plan.name}"),
                directive("array", f"0-{count - 1}"),
                "#SBATCH --requeue",  # a pre-empted task goes back in the queue instead of being lost
                *self.request.sbatch_lines(),
                "# written by 'python -m harness run --backend slurm'; one task per (cell, round) in the "
                "tasks file; sbatch's command line adds --output=RESULTS/slurm/logs/%A_%a.out and "
                "--comment=harness:RESULTS (how a later run finds an array still writing into RESULTS)",
                f"export PYTHONPATH={shlex.quote(str(resources.suite_root()))}${{PYTHONPATH:+:$PYTHONPATH}}",
                f"cd {shlex.quote(os.getcwd())}",
                "exec " + " ".join(map(shlex.quote, command)) + ' --index "$SLURM_ARRAY_TASK_ID"',
                "",
            ]
        )

    def _follow(
        self, job: str, tasks: list[Task], total: int
    ) -> tuple[dict[int, CellOutcome], dict[int, str]]:
        """Every task's outcome by schedule position, and the tasks that ended without a result."""
        outcomes: dict[int, CellOutcome] = {}
        seen: dict[int, str] = {}
        started = time.monotonic()
        lost: dict[int, str] = {}  # task index -> what Slurm says happened to it
        while len(outcomes) + len(lost) < len(tasks):
            queued = _queue(job)
            for task in tasks:
                if task.order in outcomes or task.index in lost:
                    continue
                label = tag(task.order, total, task.cell, task.round_index, self.plan.rounds)
                state = queued.get(task.index)
                if state is not None:
                    if seen.get(task.index) != state[0]:
                        seen[task.index] = state[0]
                        where = f" on {state[1]}" if state[0] == "RUNNING" and state[1] else ""
                        self.say(f"{label}: {state[0].lower()}{where} (task {job}_{task.index})")
                    continue
                document = read_result(folder.result_path(self.results_dir, task.cell.id, task.round_index))
                if document is None:  # gone from the queue with no result: what did Slurm do to it?
                    lost[task.index] = ended = _final_state(job, task.index)
                    self.say(
                        f"{label}: ENDED WITHOUT A RESULT ({ended}; output "
                        f"{self.results_dir / SLURM_DIR / 'logs'}/{job}_{task.index}.out)"
                    )
                    continue
                outcome = outcome_of(document, task.round_index, float(document["run"]["wall_s"]))
                outcomes[task.order] = outcome
                finished = len(outcomes) + len(lost)
                eta = (time.monotonic() - started) / finished * (len(tasks) - finished)
                if outcome.status == "ok":
                    self.say(
                        f"{label}: ok, {outcome.measured} in {outcome.wall_s:.1f} s"
                        + (f" (about {eta:.0f} s left)" if finished < len(tasks) else "")
                    )
                else:
                    self.say(f"{label}: FAILED: {outcome.reason}")
            if len(outcomes) + len(lost) < len(tasks):
                time.sleep(POLL_S)
        return outcomes, lost


def _queue(job: str) -> dict[int, tuple[str, str]]:
    """Array task id -> (state, node) for the tasks of ``job`` still in the queue."""
    done = _slurm("squeue", "-h", "-r", "-j", job, "-o", "%K|%T|%N")
    if done.returncode != 0:
        if "Invalid job id" in done.stderr:  # every task has left and Slurm forgot the job
            return {}
        raise BackendUnavailable(f"squeue failed while following job {job}: {done.stderr.strip()[-500:]}")
    found = {}
    for line in done.stdout.splitlines():
        task, state, node = [*line.split("|"), "", ""][:3]
        if task.isdigit():
            found[int(task)] = (state, node)
    return found


def _final_state(job: str, index: int) -> str:
    """The state Slurm gives a finished task (TIMEOUT, PREEMPTED, CANCELLED, FAILED, NODE_FAIL ...)."""
    done = _slurm("scontrol", "-o", "show", "job", f"{job}_{index}")
    fields = dict(part.split("=", 1) for part in done.stdout.split() if "=" in part)
    if "JobState" not in fields:
        return "in an unknown state (Slurm no longer remembers it)"
    reason = fields.get("Reason", "None")
    return (
        fields["JobState"]
        + (f", {reason}" if reason not in ("None", "") else "")
        + (f", exit {fields['ExitCode']}" if fields.get("ExitCode", "0:0") != "0:0" else "")
    )


def _slurm(*command: str) -> subprocess.CompletedProcess[str]:
    """One Slurm command, with a time limit: a controller that does not answer stops the run, said."""
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise BackendUnavailable(
            f"{command[0]} did not answer in {COMMAND_TIMEOUT_S:g} s; is the Slurm "
            "controller up (scontrol ping)?"
        ) from None
