"""The numerics digest before and after issue 62 (a GPU output copied into pinned memory and hashed where it
lies, against a copy to pageable memory and then into a bytes object), on every default-profile output this
GPU makes: whether the two digests are equal, and the seconds each took, taking turns row by row.

    PYTHONPATH=. python -m lab.studies.digest_cost       # on a GPU host; about a minute on an H200

Its one line of output is in lab/evidence/noise-floor/README.md.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import time

import torch

from harness.suite.catalog import CATALOG, FAMILY, rows_of
from harness.suite.contract import BuildsCalls
from harness.suite.numerics import check
from harness.suite.precision import tf32_asked
from harness.suite.workloads.tensors import apply_knobs

KNOBS = {"cudnn_benchmark": False, "deterministic": False, "tf32": False}


def before(outputs: list[torch.Tensor]) -> str:
    """The digest as suite 0.20 computed it until issue 62."""
    h = hashlib.sha256()
    for t in outputs:
        h.update(str(t.dtype).encode() + str(tuple(t.shape)).encode())
        flat = t.detach().cpu().contiguous().reshape(-1).view(torch.uint8)
        h.update(ctypes.string_at(flat.data_ptr(), flat.numel()) if t.numel() else b"")
    return h.hexdigest()


def main() -> None:
    spent, equal, rows, size = {"before": 0.0, "after": 0.0}, 0, 0, 0
    profile = [(w, d) for w, d in rows_of((), "default", ("fp32_default", "bf16")) if d in CATALOG[w].dtypes]
    for workload, dtype in profile:
        spec, family = CATALOG[workload], FAMILY[CATALOG[workload].family]
        if not spec.numerics or not isinstance(family, BuildsCalls):
            continue
        apply_knobs(KNOBS, tf32=tf32_asked(dtype, False))
        built = family.build(spec, "default", "cuda", dtype)
        with contextlib.nullcontext() if built.grad else torch.inference_mode():
            out = [t.detach().clone() for t in check.tensors(built.fn())]
            torch.cuda.synchronize()
            got = {}
            for name in ("before", "after") if rows % 2 else ("after", "before"):  # each first in turn
                start = time.perf_counter()
                got[name] = before(out) if name == "before" else check.digest(out)
                spent[name] += time.perf_counter() - start
            equal += got["before"] == got["after"]
            rows += 1
            size += sum(t.numel() * t.element_size() for t in out)
        del built, out
        torch.cuda.empty_cache()
    check.release()
    print(
        f"digest over {rows} rows ({size / 1e9:.2f} GB of outputs): equal in {equal}; before "
        f"{spent['before']:.2f} s, after {spent['after']:.2f} s ({spent['after'] / spent['before']:.3f}x)"
    )


if __name__ == "__main__":
    main()
