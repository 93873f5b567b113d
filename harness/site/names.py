"""Every file's name in the site, relative to its top. Names are made of characters safe in a URL and a
file system whatever a result holds: a label is cut and its unsafe characters replaced, and a digest of it
keeps two labels apart."""

from __future__ import annotations

import hashlib
import re

from harness.history.facts import Context, Row
from harness.report.analysis.frames import mode as mode_of
from harness.site.data import StoredRun

_UNSAFE = re.compile(r"[^A-Za-z0-9.+_-]")


def _safe(text: str, limit: int = 40) -> str:
    return _UNSAFE.sub("_", text)[:limit].lstrip(".") or "_"


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode(errors="surrogateescape")).hexdigest()[:8]


def mode(row: Row) -> str:
    """The row's precision mode as a reader names it (``precision.label``): never a bare "fp32"."""
    return mode_of(row.dtype, row.knobs)


def row_title(row: Row) -> str:
    """``train_resnet50 fp32 (TF32 off) [benchmark=0 deterministic=0 tf32=0]``: how every page names a row."""
    return f"{row.workload} {mode(row)} [{row.knobs}]"


def row_page(row: Row) -> str:
    return f"rows/{row.slug}.html"


def row_shard(row: Row) -> str:
    return f"rows/{row.slug}.json"


def release_page(torch: str, cudnn: str) -> str:
    return f"releases/cudnn-{_safe(cudnn)}_torch-{_safe(torch)}-{_digest(torch, cudnn)}.html"


def run_page(run: StoredRun) -> str:
    return f"runs/{_safe(run.cell_id, 128)}.r{run.round}.{run.sha256[:12]}.html"


def context_anchor(context: Context) -> str:
    return "ctx-" + _digest(context.gpu, context.driver, context.suite, context.profile)
