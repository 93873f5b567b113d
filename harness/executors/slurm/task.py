"""``slurm-task``: what each task of a Slurm array runs on its node: one (cell, round) of the tasks file,
with the matrix's own backend, its result written into the shared results folder."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TypedDict

from harness import jsonio, schemas
from harness.backends import registry
from harness.errors import InputError, Problem
from harness.plan.model import Plan
from harness.results import folder
from harness.suite.document import ResultDocument, SlurmRecord


class Task(TypedDict):
    cell: str
    round: int


class TasksFile(registry.SettingsDocument):
    """``<results>/slurm/tasks-*.json`` (``schemas/slurm-tasks.schema.json``): the backend's settings, and
    the (cell, round) of each task of the array."""

    tasks: list[Task]


def _tasks(tasks_file: Path, index: int, plan: Plan) -> TasksFile:
    """The tasks file, checked before a task runs anything it names: its schema, the index, the plan's
    cells."""
    source = str(tasks_file)
    try:
        settings = jsonio.read(tasks_file, folder.MAX_BYTES)
    except (OSError, ValueError, RecursionError) as exc:
        raise InputError(
            [Problem(source, "", f"not a tasks file written by a Slurm submission ({exc})")]
        ) from None
    found = schemas.problems("slurm-tasks", settings, source)
    if not found and not 0 <= index < len(settings["tasks"]):
        found.append(
            Problem(source, "tasks", f"has {len(settings['tasks'])} tasks; index {index} is none of them")
        )
    if not found and not any(c.id == settings["tasks"][index]["cell"] for c in plan.cells):
        found.append(
            Problem(source, f"tasks[{index}].cell", "is none of the cells of the folder's plan.json")
        )
    if found:
        raise InputError(found)
    checked: TasksFile = settings
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
