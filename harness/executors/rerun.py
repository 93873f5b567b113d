"""``rerun``: run the exact image a docker result came from again, into a results folder of the same plan."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness import jsonio
from harness.backends import registry
from harness.errors import InputError, Problem
from harness.report import ownership
from harness.results import documents, folder
from harness.suite.document import ResultDocument


def rerun(
    result: Path, settings: registry.Settings, out: Path, say: Callable[[str], None]
) -> tuple[ResultDocument, Path]:
    """The new result document and where it was written. Only the command the harness derives for a cell of
    the result's plan runs, in the image it built for that cell; an earlier result there moves aside."""
    document, problems = documents.check(result)
    if document is None:
        raise InputError(problems)
    if document["run"].get("backend") != "docker" or not document["run"].get("image"):
        raise InputError(
            [
                Problem(
                    str(result),
                    "run.image",
                    "only results of the docker backend name an image "
                    "to re-run; re-run local cells with 'python -m harness run'",
                )
            ]
        )
    plan = folder.stored_plan(result.parent)
    from harness.backends.docker.backend import DockerBackend

    backend = registry.create(settings, say)
    assert isinstance(backend, DockerBackend)
    backend.rerun_command(document, plan, str(result))  # refused before anything is written into out
    ownership.refuse_inside_report(out, "out")
    jsonio.output_folder(out, "out")
    cell_id = document["cell"]["id"]
    # the re-run keeps the round of the result it repeats, so its files sit beside the originals' names
    round_index = documents.round_of(document)
    result_path = folder.result_path(out, cell_id, round_index)
    # the lock: nothing else writes there meanwhile; an earlier result is moved aside, never lost
    with folder.locked(out):
        folder.write_plan(out, plan, same_plan=True)
        if result_path.exists() or result_path.is_symlink():
            folder.supersede(result_path)
        say(f"re-running {cell_id} in image {document['run']['image']['id']}")
        finished = backend.rerun(document, result_path.name, folder.log_path(out, cell_id, round_index), plan)
        doc = folder.write_result(out, plan.cell(cell_id), finished.document, finished.run)
    return doc, result_path
