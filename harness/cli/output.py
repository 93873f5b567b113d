"""What every command of the command line shares: its exit codes, where its lines go, and how a run's
outcomes and a report's gate become an exit code."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from harness.cli.console import Console

if TYPE_CHECKING:
    import argparse

    from harness.executors.runs import CellOutcome
    from harness.report import pipeline
    from harness.report.analysis.release_gate import Outcome, Policy

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INFRASTRUCTURE, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_PIPE = 141  # the shell's code for a writer whose reader left (128 + SIGPIPE)
# the release gate's outcomes (report, compare, qualify); the report and verdict.json record the code
GATE_EXIT: dict[Outcome, int] = {
    "pass": EXIT_OK,
    "pass-with-inconclusive": EXIT_OK,
    "regression": EXIT_FAILED,
    "infrastructure-failure": EXIT_INFRASTRUCTURE,
}


@dataclass(frozen=True)
class Output:
    """Where a command's lines go: progress through its console (-q, -v, a live bar), warnings to stderr."""

    console: Console

    def say(self, line: str) -> None:
        self.console.say(line)

    def detail(self, line: str) -> None:  # what a backend says while one run goes on (builds, the suite)
        self.console.detail(line)

    def warn(self, line: str) -> None:
        self.console.close()  # a warning is never drawn over by the bar
        print(line, file=sys.stderr, flush=True)


def counted(out: Output, every: int, started: str, step: str) -> Callable[[int, int], None]:
    """What long work reports through, as ``progress(done, total)``: ``started`` when it starts (done 0),
    ``step`` every ``every`` and at the last; nothing for work of fewer than ``every`` items. Both are
    formatted with ``done`` and ``total``."""

    def said(done: int, total: int) -> None:
        if total < every:
            return
        if done == 0:
            out.say(started.format(done=done, total=total))
        elif done % every == 0 or done == total:
            out.say(step.format(done=done, total=total))

    return said


# the noxfile's sessions that run the harness command of their name: inside one (HARNESS_NOX, which the
# noxfile sets to how nox was called), a command suggested is that session's, its options after '--'
NOX_SESSIONS = ("plan", "images", "run", "report", "qualify")
AGAIN = ("--fresh", "--rerun-failed")  # what a command that goes on from where a run stopped leaves out


def suggested(args: argparse.Namespace, command: str, words: list[str]) -> str:
    """``command`` with ``words``, called as this command was: the nox session of that name where the
    noxfile ran this one, else this interpreter's harness there, else as typed (``args.prog``)."""
    nox = os.environ.get("HARNESS_NOX")
    if nox and command in NOX_SESSIONS:
        return f"{nox} -s {command} -- {shlex.join(words)}".rstrip()
    prog = shlex.join([sys.executable, "-m", "harness"]) if nox else args.prog
    return f"{prog} {command} {shlex.join(words)}".rstrip()


def given(args: argparse.Namespace, leave_out: tuple[str, ...] = AGAIN) -> list[str]:
    """The options the user gave this command, as typed (without those the noxfile added, nor
    ``leave_out``): what a command suggested to go on keeps."""
    words: list[str] = list(getattr(args, "argv", [])[1:])
    added = shlex.split(os.environ.get("HARNESS_NOX_ADDED", "")) if os.environ.get("HARNESS_NOX") else []
    if added and words[: len(added)] == added:
        words = words[len(added) :]
    return [word for word in words if word not in leave_out]


def interrupted(args: argparse.Namespace, out: Output) -> None:
    """What a Ctrl-C leaves: the results kept in the folder the command was running into, and the
    command that goes on from there (the same options, without --fresh: it would move them aside)."""
    folder = getattr(args, "kept_in", None)
    if folder is None:
        out.warn("interrupted")
        return
    from harness.results.folder import is_result_file

    kept = sum(1 for path in folder.glob("*.json*") if is_result_file(path))
    again = suggested(args, args.command, given(args))
    out.warn(
        f"interrupted: {kept} result{'s' * (kept != 1)} kept in {folder}/ (each run that finished; the one "
        f"in flight is not); '{again}' goes on from there: it keeps them and runs what is missing"
    )


def exit_code(outcomes: list[CellOutcome], out: Output) -> int:
    """0 all ran; 3 nothing could run because the host cannot give the containers their GPUs; else 1."""
    from harness.executors import runs

    why = runs.nothing_ran(outcomes)
    if why is not None:
        out.warn(f"nothing could run: {why}")
        return EXIT_INFRASTRUCTURE
    return EXIT_FAILED if any(o.status != "ok" for o in outcomes) else EXIT_OK


def policy(args: argparse.Namespace) -> Policy:
    from harness.report.analysis.release_gate import Policy

    return Policy(GATE_EXIT, strict=args.strict)


def said(report: pipeline.Report, stream: TextIO | None = None) -> int:
    """Print where the report went and its gate's summary; the gate's outcome is the exit code."""
    rendered, loaded, gate = report.rendered, report.loaded, report.analysis.gate
    out = stream or sys.stdout
    if rendered is not None:
        summary = rendered.markdown.with_name("summary.md")  # the answer first: what the README says to read
        files = ", ".join(
            map(str, (summary, rendered.markdown, rendered.html, rendered.csv, rendered.verdict_json))
        )
        print(
            f"report: {files} ({len(loaded.documents)} results, {len(loaded.quarantined)} quarantined)",
            file=out,
        )
    for line in gate.lines:
        print(line, file=out)
    return gate.exit_code
