"""The commands of the command line, in the order its help lists them: the parser (``parser``) and the
dispatch (``main``) are both built from ``COMMANDS``."""

from __future__ import annotations

from harness.cli.command import Command
from harness.cli.commands import (
    bisect,
    compare,
    gather,
    history,
    images,
    init,
    plan,
    qualify,
    report,
    repro,
    rerun,
    run,
    site,
    slurm_task,
    validate,
)

COMMANDS: tuple[Command, ...] = (
    init.COMMAND,
    plan.COMMAND,
    validate.COMMAND,
    run.COMMAND,
    images.COMMAND,
    slurm_task.COMMAND,
    rerun.COMMAND,
    gather.COMMAND,
    report.COMMAND,
    compare.COMMAND,
    repro.COMMAND,
    qualify.COMMAND,
    bisect.COMMAND,
    history.COMMAND,
    site.COMMAND,
)
BY_NAME = {command.name: command for command in COMMANDS}
