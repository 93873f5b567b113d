"""What re-running a docker result may run. A result file is untrusted: its command and image id are not
run as they are. The cell must be one of the plan's, the image one this harness built for that cell (its
label says so), and the command the one re-derived from the plan; anything else is refused (InputError).
"""

from __future__ import annotations

import contextlib
import re

from harness.backends.base import suite_arguments
from harness.backends.docker import dockerfile
from harness.backends.docker import engine as docker_engine
from harness.backends.docker.images import CellImages, expected_cudnn
from harness.errors import BackendUnavailable, InputError, Problem, bounded
from harness.plan.model import Cell, Plan
from harness.suite.document import ResultDocument

with contextlib.suppress(ImportError):  # no docker SDK: docker_engine.connect refuses first
    import docker.errors

_IMAGE_ID = re.compile(r"sha256:[0-9a-f]{64}")  # what an engine names a built image by


def checked_command(
    cell_images: CellImages, previous: ResultDocument, plan: Plan, source: str
) -> tuple[Cell, str, list[str]]:
    """The cell, image id and command a re-run of ``previous`` would run, each checked as above;
    InputError for a result that is not one of this plan's and this harness's images."""
    cell = Cell.from_json(previous["cell"])
    image_id = previous["run"].get("image", {}).get("id", "")
    if cell not in plan.cells:
        raise InputError([Problem(source, "cell", f"{cell.id} is not a cell of the plan beside the result")])
    if not _IMAGE_ID.fullmatch(image_id):
        raise InputError(
            [
                Problem(
                    source,
                    "run.image.id",
                    f"{bounded(image_id, 80)!r} is not an image id (sha256:<64 hex>)",
                )
            ]
        )
    try:
        with docker_engine.errors("the image was looked up"):
            image = cell_images.client.images.get(image_id)
    except docker.errors.ImageNotFound:
        raise BackendUnavailable(
            f"image {image_id} is gone from this engine; rebuild it with "
            "'python -m harness images' (same matrix, same inputs)"
        ) from None
    if (image.labels or {}).get(f"{dockerfile.LABEL_NS}.cell") != cell.id:
        raise InputError(
            [
                Problem(
                    source,
                    "run.image.id",
                    f"{image_id} is not an image this harness built for cell {cell.id}; refusing to run it",
                )
            ]
        )
    expect = expected_cudnn(cell, cell_images.render(cell, plan), cell_images.held(image_id))
    command = suite_arguments(cell, plan, "/results/result.json", expect, previous["run"].get("round", 1))
    if previous["run"]["command"] != command:
        raise InputError(
            [
                Problem(
                    source,
                    "run.command",
                    "is not the command the harness runs for this cell "
                    "under the plan beside it; refusing to run it",
                )
            ]
        )
    return cell, image_id, command
