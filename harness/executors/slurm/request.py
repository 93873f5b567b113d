"""What each task of a Slurm array asks for: the matrix's ``slurm:`` section with the caller's values over
it, every value checked whole before it reaches an '#SBATCH' line."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from harness.backends.base import needs_gpu
from harness.errors import InputError, Problem, shown
from harness.plan.model import Plan

# An '#SBATCH' line cannot be quoted: sbatch splits it at whitespace, and a line break ends the comment and
# starts a shell command. So every value written on one is checked whole (fullmatch: Python's '$' lets a
# trailing newline through) against plain characters, and the paths (the results folder) go on sbatch's
# command line instead.
TIME_FORMAT = re.compile(r"([0-9]+-)?[0-9]{1,2}(:[0-9]{2}){0,2}")
SETTINGS = {  # the matrix's slurm.NAME and the caller's slurm_NAME: the pattern, and what it is in an error
    "partition": (
        re.compile(r"[A-Za-z0-9_.,-]{1,128}"),
        "a partition name: letters, digits, '_', '.', '-' (several separated by ',')",
    ),
    "account": (re.compile(r"[A-Za-z0-9_.-]{1,128}"), "an account name: letters, digits, '_', '.', '-'"),
    "time": (TIME_FORMAT, "a time limit in Slurm's format: minutes, HH:MM:SS or D-HH:MM:SS"),
}
DIRECTIVE = re.compile(r"[A-Za-z0-9_.,:+-]{1,256}")  # any '#SBATCH' value, checked again as it is written
DEFAULT_TIME = "01:00:00"


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
    """The matrix's ``slurm:`` section with the caller's values over it; every value checked here too, as
    plan.json's or a library caller's may not have been."""
    given = plan.slurm
    asked = {  # each setting: the caller's value, the matrix's
        "partition": (partition, given.get("partition")),
        "account": (account, given.get("account")),
        "time": (time_limit, given.get("time")),
    }
    chosen: dict[str, str | None] = {}
    problems = []
    for name, (option, in_matrix) in asked.items():
        value = option or in_matrix or (DEFAULT_TIME if name == "time" else None)
        why = None if value is None else setting_problem(name, value)
        if why:
            where = (
                Problem(f"slurm_{name}", "", why, setting=f"slurm_{name}")
                if option
                else Problem(_source(plan), f"slurm.{name}", why)
            )
            problems.append(where)
        chosen[name] = value
    on_gpu = any(needs_gpu(cell, plan) for cell in plan.cells)
    count = gpus if gpus is not None else given.get("gpus", 1 if on_gpu else 0)
    if not _whole(count, 0):
        why = f"{count!r} is not a whole number of GPUs, 0 or more"
        problems.append(Problem("slurm_gpus", "", why, setting="slurm_gpus"))
        count = 0
    cpus = given.get("cpus_per_task")
    if cpus is not None and not _whole(cpus, 1):
        problems.append(Problem(_source(plan), "slurm.cpus_per_task", f"{cpus!r} is not a whole number >= 1"))
    if exclusive and count < 2:
        why = "the suite names a multi-GPU workload; ask for the GPUs it should span, e.g. 8"
        problems.append(
            Problem("slurm_gpus", str(count), why, setting="slurm_gpus")
            if gpus is not None
            else Problem("slurm.gpus", str(count), why)
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
    return f"{shown(value)} is not {what}; an '#SBATCH' line takes no spaces, quotes or line breaks"


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
            "out",
            "",
            f"{path!r} holds {', '.join(map(ascii, bad))}, which Slurm cannot carry in a job's output path "
            "and comment; name a results folder whose path has none",
            setting="out",
        )
    ]


def directive(option: str, value: str) -> str:
    """One '#SBATCH --option=value' line, ``value`` checked again here, the last place before the file."""
    if not DIRECTIVE.fullmatch(value):
        raise InputError(
            [Problem("slurm", option, f"{shown(value)} cannot go on an '#SBATCH' line: use plain characters")]
        )
    return f"#SBATCH --{option}={value}"


def _whole(value: object, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _source(plan: Plan) -> str:
    return plan.source or "matrix"
