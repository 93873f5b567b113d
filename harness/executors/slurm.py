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
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import jsonio, resources, schemas
from harness.backends import registry
from harness.backends.base import needs_gpu
from harness.backends.records import read_result
from harness.errors import BackendUnavailable, InputError, Problem, RunStopped
from harness.executors.runs import CellOutcome, decide, outcome_of, prepared, tag
from harness.plan.model import Cell, Plan
from harness.results import folder, resume
from harness.suite.document import ResultDocument, SlurmRecord

SLURM_DIR = "slurm"
POLL_S = 2.0
# An '#SBATCH' line cannot be quoted: sbatch splits it at whitespace, and a line break ends the comment and
# starts a shell command. So every value written on one is checked whole (fullmatch: Python's '$' lets a
# trailing newline through) against plain characters, and the paths (the results folder) go on sbatch's
# command line instead.
TIME_FORMAT = re.compile(r"([0-9]+-)?[0-9]{1,2}(:[0-9]{2}){0,2}")
SETTINGS = {  # the matrix's slurm.NAME and --slurm-NAME: the pattern, and what it is in an error
    "partition": (
        re.compile(r"[A-Za-z0-9_.,-]{1,128}"),
        "a partition name: letters, digits, '_', '.', '-' (several separated by ',')",
    ),
    "account": (re.compile(r"[A-Za-z0-9_.-]{1,128}"), "an account name: letters, digits, '_', '.', '-'"),
    "time": (TIME_FORMAT, "a time limit in Slurm's format: minutes, HH:MM:SS or D-HH:MM:SS"),
}
DIRECTIVE = re.compile(r"[A-Za-z0-9_.,:+-]{1,256}")  # any '#SBATCH' value, checked again as it is written
DEFAULT_TIME = "01:00:00"
COMMANDS = ("sbatch", "squeue", "scontrol", "scancel")
COMMAND_TIMEOUT_S = 120.0  # a Slurm controller that does not answer must not hang the run


@dataclass(frozen=True)
class Request:
    """What each task of the array asks Slurm for."""

    partition: str | None
    account: str | None
    time: str
    gpus: int
    cpus_per_task: int | None

    def sbatch_lines(self) -> list[str]:
        lines = [directive("time", self.time)]
        if self.partition:
            lines.append(directive("partition", self.partition))
        if self.account:
            lines.append(directive("account", self.account))
        if self.gpus:
            lines.append(directive("gres", f"gpu:{self.gpus}"))
        if self.cpus_per_task:
            lines.append(directive("cpus-per-task", str(self.cpus_per_task)))
        return lines

    def describe(self) -> str:
        parts = [f"time limit {self.time}", f"{self.gpus} GPU{'s' if self.gpus != 1 else ''} per task"]
        if self.partition:
            parts.insert(0, f"partition {self.partition}")
        if self.account:
            parts.insert(1, f"account {self.account}")
        return ", ".join(parts)


def request(
    plan: Plan,
    partition: str | None,
    account: str | None,
    time_limit: str | None,
    gpus: int | None,
    exclusive: bool,
) -> Request:
    """The matrix's ``slurm:`` section with the command line's ``--slurm-*`` over it; every value checked
    here too, as plan.json's or a library caller's may not have been."""
    given = plan.slurm
    asked = {"partition": partition, "account": account, "time": time_limit}
    chosen: dict[str, str | None] = {}
    problems = []
    for name, option in asked.items():
        value = option or given.get(name) or (DEFAULT_TIME if name == "time" else None)
        why = None if value is None else setting_problem(name, value)
        if why:
            where = (
                Problem(f"--slurm-{name}", "", why)
                if option
                else Problem(_source(plan), f"slurm.{name}", why)
            )
            problems.append(where)
        chosen[name] = value
    on_gpu = any(needs_gpu(cell, plan) for cell in plan.cells)
    count = gpus if gpus is not None else given.get("gpus", 1 if on_gpu else 0)
    if not _whole(count, 0):
        problems.append(Problem("--slurm-gpus", "", f"{count!r} is not a whole number of GPUs, 0 or more"))
        count = 0
    cpus = given.get("cpus_per_task")
    if cpus is not None and not _whole(cpus, 1):
        problems.append(Problem(_source(plan), "slurm.cpus_per_task", f"{cpus!r} is not a whole number >= 1"))
    if exclusive and count < 2:
        problems.append(
            Problem(
                "slurm.gpus",
                str(count),
                "the suite names a multi-GPU workload; ask for the GPUs it should span, e.g. --slurm-gpus 8",
            )
        )
    if problems:
        raise InputError(problems)
    return Request(chosen["partition"], chosen["account"], str(chosen["time"]), count, cpus)


def setting_problem(name: str, value: object) -> str | None:
    """Why ``value`` cannot be the Slurm setting ``name`` (partition, account, time), with the fix; None if
    it can."""
    pattern, what = SETTINGS[name]
    if isinstance(value, str) and pattern.fullmatch(value):
        return None
    return f"{value!r} is not {what}; an '#SBATCH' line takes no spaces, quotes or line breaks"


def results_dir_problems(results_dir: Path) -> list[Problem]:
    """What Slurm cannot carry of the results folder's path: a backslash in ``--output`` turns off its %A
    and %a (every task would write one file), and a line break or another unprintable character splits
    squeue's one line per job, where a later run finds an array still writing here."""
    path = str(results_dir.resolve())
    bad = sorted({c for c in path if c == "\\" or not c.isprintable()})
    if not bad:
        return []
    return [
        Problem(
            "--out",
            "",
            f"{path!r} holds {', '.join(map(ascii, bad))}, which Slurm cannot carry in a job's output path "
            "and comment; name a results folder whose path has none",
        )
    ]


def directive(option: str, value: str) -> str:
    """One '#SBATCH --option=value' line, ``value`` checked again here, the last place before the file."""
    if not DIRECTIVE.fullmatch(value):
        raise InputError(
            [Problem("slurm", option, f"{value!r} cannot go on an '#SBATCH' line: use plain characters")]
        )
    return f"#SBATCH --{option}={value}"


def _whole(value: object, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _source(plan: Plan) -> str:
    return plan.source or "matrix"


def available() -> None:
    missing = [c for c in COMMANDS if shutil.which(c) is None]
    if missing:
        raise BackendUnavailable(
            f"--backend slurm needs Slurm's {', '.join(missing)} on PATH (run it on a login node of the "
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
        with prepared(self.plan, self.results_dir, self.say, rounds):
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
        slurm_dir = self.results_dir / SLURM_DIR
        (slurm_dir / "logs").mkdir(parents=True, exist_ok=True)
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
        logs = str((self.results_dir / SLURM_DIR / "logs").resolve()).replace("%", "%%")
        done = _slurm(
            "sbatch", "--parsable", f"--output={logs}/%A_%a.out", f"--comment={self._comment()}", str(script)
        )
        if done.returncode != 0:
            raise BackendUnavailable(f"sbatch refused the array ({script}): {done.stderr.strip()[-1000:]}")
        job = done.stdout.strip().split(";")[0]
        self.say(
            f"submitted array job {job}: {len(tasks)} task{'s' * (len(tasks) != 1)} "
            f"({self.request.describe()}); "
            f"script {script}, task output {slurm_dir / 'logs'}/"
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
                        f"{label}: ok, {outcome.measurements} measurements in {outcome.wall_s:.1f} s"
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


def _tasks(tasks_file: Path, index: int, plan: Plan) -> dict[str, Any]:
    """The tasks file, checked before a task runs anything it names: its schema, the index, the plan's
    cells."""
    source = str(tasks_file)
    try:
        settings = jsonio.read(tasks_file, folder.MAX_BYTES)
    except (OSError, ValueError, RecursionError) as exc:
        raise InputError(
            [Problem(source, "", f"not a tasks file written by 'run --backend slurm' ({exc})")]
        ) from None
    found = schemas.problems("slurm-tasks", settings, source)
    if not found and not 0 <= index < len(settings["tasks"]):
        found.append(
            Problem(source, "tasks", f"has {len(settings['tasks'])} tasks; --index {index} is none of them")
        )
    if not found and not any(c.id == settings["tasks"][index]["cell"] for c in plan.cells):
        found.append(
            Problem(source, f"tasks[{index}].cell", "is none of the cells of the folder's plan.json")
        )
    if found:
        raise InputError(found)
    checked: dict[str, Any] = settings
    return checked


def run_task(results_dir: Path, tasks_file: Path, index: int, say: Callable[[str], None]) -> ResultDocument:
    """On a node: run one task's cell with the matrix's backend; its result lands in ``results_dir``."""
    plan = folder.stored_plan(results_dir)
    raw = _tasks(tasks_file, index, plan)
    task = raw["tasks"][index]
    cell, round_index = plan.cell(task["cell"]), int(task["round"])
    backend = registry.create(registry.Settings.from_json(raw), say)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    # docker: the container gets the GPUs Slurm gave this task; local: the environment already says so
    gpus = tuple(g for g in visible.split(",") if g) if backend.name == "docker" else ()
    say(
        f"slurm task {index}: {cell.id} round {round_index} on {os.uname().nodename} with the {backend.name} "
        f"backend" + (f", GPUs {visible}" if visible else "")
    )
    finished = backend.run_cell(cell, plan, results_dir, round_index, gpus=gpus)
    slurm: SlurmRecord = {
        "job": f"{os.environ.get('SLURM_ARRAY_JOB_ID', '?')}_{os.environ.get('SLURM_ARRAY_TASK_ID', index)}",
        "node": os.environ.get("SLURMD_NODENAME", os.uname().nodename),
    }
    if os.environ.get("SLURM_JOB_PARTITION"):
        slurm["partition"] = os.environ["SLURM_JOB_PARTITION"]
    document = folder.write_result(results_dir, cell, finished.document, {**finished.run, "slurm": slurm})
    say(
        f"slurm task {index}: {document['status']} -> {folder.result_path(results_dir, cell.id, round_index)}"
    )
    return document


def _slurm(*command: str) -> subprocess.CompletedProcess[str]:
    """One Slurm command, with a time limit: a controller that does not answer stops the run, said."""
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise BackendUnavailable(
            f"{command[0]} did not answer in {COMMAND_TIMEOUT_S:g} s; is the Slurm "
            "controller up (scontrol ping)?"
        ) from None
