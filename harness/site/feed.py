"""regressions.xml: an Atom feed (RFC 4287) of the open regressions, newest first; links relative to the
feed, ids stable across builds."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from harness.history.facts import Row
from harness.results import validity
from harness.site import names
from harness.site.markup import text
from harness.site.steps import Step

ENTRIES = 200


def render(regressions: Sequence[tuple[Row, Step]], updated: str) -> str:
    entries = []
    for row, step in list(regressions)[:ENTRIES]:
        key = f"{row.workload}|{row.dtype}|{row.knobs}|{step.context}|{step.torch_after}|{step.cudnn_after}"
        ident = hashlib.sha256(key.encode(errors="surrogateescape")).hexdigest()
        ratio = f", ratio {step.ratio:.3f}" if step.ratio is not None else ""
        title = (
            f"{names.row_title(row)} slower at cuDNN {step.cudnn_before} → "
            f"{step.cudnn_after} "
            f"(torch {step.torch_after}, {step.context}){ratio}"
        )
        entries.append(
            f"<entry><id>urn:sha256:{ident}</id><title>{text(title)}</title>"
            f"<updated>{text(_time(step.finished))}</updated>"
            f"<link href='{text(names.row_page(row))}'/><summary>{text(step.reason)}</summary></entry>"
        )
    return (
        "<?xml version='1.0' encoding='utf-8'?>\n<feed xmlns='http://www.w3.org/2005/Atom'>"
        "<id>urn:harness:history:regressions</id><title>Open regressions</title>"
        f"<updated>{text(_time(updated))}</updated><author><name>harness</name></author>"
        f"<link rel='self' href='regressions.xml'/>{''.join(entries)}</feed>\n"
    )


def _time(value: str) -> str:
    """An RFC 3339 time as Atom takes it: upper-case ``T`` and ``Z`` (RFC 4287 3.3), in UTC."""
    found = validity.instant(value)
    return "1970-01-01T00:00:00Z" if found is None else found.strftime("%Y-%m-%dT%H:%M:%SZ")
