"""Issue 34: what differs between two processes of the same cell? Measured, one GPU, several processes.

    python -m lab.studies.aa_sources run --processes 5 --out DIR on the GPU machine (about 50 s a process)
    python -m lab.studies.aa_sources report DIR [DIR ...]             anywhere: the figures below

Every process measures the same rows in the same order, each several ways, through the suite's own
``harness.suite.timing.measure`` (so what is compared is what a suite would do):

- ``C1``: one call a sample, the L2 flushed before each (suite 0.10's cold samples);
- ``H1``: one call a sample, no flush (hot);
- ``HN``: ``HOT_BATCH`` calls back to back in one graph replay, hot;

each twice on the row's first build (``rep``), once more on a second build made while the first is held
(its inputs, weights and outputs at other addresses: ``build``), and ``C1`` once more with a new L2-flush
buffer (``flushbuf``). A measurement samples until 0.1 s of timed work and a relative noise under 0.5 %,
or 0.3 s of sampling. Each line of ``<DIR>/p<N>.jsonl`` is one measurement: its median per call, the
medians of its first 0.02 s and 0.05 s of timed work, the SM clock, memory clock, temperature and power.

``report`` prints, per way: how far one process's median is from another's (every pair of processes,
every row: |ratio - 1| p50 and p95, the A/A figure on these rows), and inside one process how far a
second measurement, a second build and a new flush buffer move the median. Where a second build moves it
as much as another process does, the difference between processes is where their memory lies.

``--study rotation``: ``C1`` against samples taken in turn from 4 graphs (``R4``; ``R4i``: their inputs
moved too), odd processes holding an fp64 reference after each row. ``--study flush``: the suite's way
(``R4``) with its L2 flush written (``R4w``, nvbench's and the suite's) or read (``R4r``: a read of twice
the L2's size, which leaves clean lines; ``timer.Timer(clean_flush=True)``) or written to 4 buffers taken in
turn (``R4f``; ``timer.Timer(flush_buffers=4)``), in alternating order; the report gives each way's
|ratio - 1| between processes.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from harness import jsonio

# the A/A's noisiest rows (suite 0.5 and 0.10 on an H100) and a spread of lengths, 13 us to 2.2 ms
ROWS = [
    ("relu", "fp16"),
    ("sigmoid", "bf16"),
    ("relu", "fp32"),
    ("adaptive_avgpool2d", "fp32"),
    ("sdpa_cudnn_s512", "bf16"),
    ("sdpa_flash_s512", "fp16"),
    ("sdpa_efficient_s512", "bf16"),
    ("conv2d_r50_3x3.cl", "fp16"),
    ("batchnorm2d", "fp32"),
    ("layernorm_bwd", "fp32"),
    ("conv2d_r50_3x3", "tf32"),
    ("conv2d_depthwise_mbv2", "bf16"),
    ("conv2d_r50_7x7s2", "fp32"),
    ("sdpa_efficient_s2048", "bf16"),
    ("lstm", "fp32"),
]
HOT_BATCH = 8  # the placement study's hot batch: calls back to back in one graph replay
KNOBS = {"cudnn_benchmark": False, "deterministic": False, "tf32": False}
PREFIXES_S = (0.02, 0.05)


def _prefix_median(samples: list[float], calls: int, prefix_s: float) -> float:
    timed, kept = 0.0, []
    for s in samples:
        kept.append(s)
        timed += s * calls
        if timed >= prefix_s and len(kept) >= 10:
            break
    return statistics.median(kept)


def _one_process(out: Path, rows: list[tuple[str, str]], study: str = "placement", index: int = 0) -> None:
    import contextlib

    import pynvml
    import torch

    from harness.suite.catalog import CATALOG, FAMILY
    from harness.suite.contract import BuildsCalls, Built
    from harness.suite.numerics import check
    from harness.suite.precision import tf32_asked
    from harness.suite.probes.environment import device_uuid
    from harness.suite.probes.gpu_state import GpuState
    from harness.suite.timing.measure import Sampling, measure
    from harness.suite.timing.timer import Timer
    from harness.suite.workloads.tensors import apply_knobs

    timer = Timer("cuda")
    flush_timers = (
        {"r": Timer("cuda", clean_flush=True), "f": Timer("cuda", flush_buffers=4)}
        if study == "flush"
        else {}
    )
    device = torch.cuda.current_device()
    gpu = GpuState(device, device_uuid(device))
    handle = gpu.handle
    lines = []

    def state() -> dict[str, float]:
        try:
            return {
                "mem_mhz": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM),
                "temp_c": pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU),
                "power_w": pynvml.nvmlDeviceGetPowerUsage(handle) / 1000,
            }
        except Exception:  # a probe: what NVML does not say is left out
            return {}

    def one(
        way: str, built: Built, calls: int, flush: bool, graphs: int = 1, moved: bool = False, **where: int
    ) -> None:
        mode = contextlib.nullcontext() if built.grad else torch.inference_mode()
        budget, least = (0.4, 0.15) if study in ("rotation", "flush") else (0.3, 0.1)
        with mode:
            m = measure(
                built.fn,
                flush_timers.get(way[-1], timer),
                budget,
                least,
                Sampling(
                    gpu=gpu, batch=calls, flush=flush, graphs=graphs, relocate=built.keep if moved else ()
                ),
            ).to_json()
        samples = m["samples_s"]
        clocks = [c for c in m["sm_clock_mhz"] or [] if c is not None]
        lines.append(
            {
                "row": f"{workload}:{dtype}",
                "way": way,
                "batch": m["batch"],
                "l2_flushed": m["l2_flushed"],
                "median_s": m["stats"]["median"],
                "n": len(samples),
                "timed_s": sum(samples) * m["batch"],
                "loop_s": m["sampling_wall_s"],
                "stop": m["stop_reason"],
                "prefix": {f"{p:g}": _prefix_median(samples, m["batch"], p) for p in PREFIXES_S},
                "sm_mhz": statistics.median(clocks) if clocks else None,
                "rest_s": m["power_rest_s"],
                **state(),
                **where,
            }
        )

    reference: list[torch.Tensor] = []
    for workload, dtype in rows:
        spec = CATALOG[workload]
        family = FAMILY[spec.family]
        if not isinstance(family, BuildsCalls):
            raise TypeError(f"workload family {spec.family} has no build")
        apply_knobs(KNOBS, tf32=tf32_asked(dtype, False))
        if study == "flush":  # the suite's way (4 graphs taken in turn), its L2 flush written or read
            built = family.build(spec, "default", "cuda", dtype)
            for rep in (1, 2):
                for way in ("R4w", "R4r", "R4f") if rep == 1 else ("R4f", "R4r", "R4w"):
                    one(way, built, 1, True, 4, False, build=1, rep=rep, flushbuf=1)
            del built
            torch.cuda.empty_cache()
            continue
        if study == "rotation":
            built = family.build(spec, "default", "cuda", dtype)
            for rep in (1, 2):
                for way, graphs, moved in (("C1", 1, False), ("R4", 4, False), ("R4i", 4, True)):
                    one(way, built, 1, True, graphs, moved, build=1, rep=rep, flushbuf=1)
            del built
            torch.cuda.empty_cache()
            if index % 2 and spec.numerics:  # the suite's numerics until 0.11: an fp64 reference held
                reference.clear()
                fp64 = family.build(spec, "default", "cuda", "fp64")
                with contextlib.nullcontext() if fp64.grad else torch.inference_mode():
                    reference.extend(check.outputs(fp64.fn))
                del fp64
            continue
        first = family.build(spec, "default", "cuda", dtype)
        batch = HOT_BATCH
        ways = [("C1", 1, True), ("H1", 1, False)] + ([("HN", batch, False)] if batch > 1 else [])
        for rep in (1, 2):
            for way, calls, flush in ways:
                one(way, first, calls, flush, build=1, rep=rep, flushbuf=1)
        second = family.build(spec, "default", "cuda", dtype)
        for way, calls, flush in ways:
            one(way, second, calls, flush, build=2, rep=1, flushbuf=1)
        held = timer._flushes[0]
        timer._flushes[0] = torch.empty_like(held)  # a new flush buffer, the old one held: other addresses
        one("C1", first, 1, True, build=1, rep=1, flushbuf=2)
        timer._flushes[0] = held
        del first, second
        torch.cuda.empty_cache()
    out.write_text("".join(json.dumps(line) + "\n" for line in lines))


def run(processes: int, out: Path, study: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for index in range(1, processes + 1):
        began = time.perf_counter()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "lab.studies.aa_sources",
                "one",
                str(out / f"p{index}.jsonl"),
                "--study",
                study,
                "--index",
                str(index),
            ],
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            check=False,
        )
        print(f"process {index}: exit {done.returncode}, {time.perf_counter() - began:.1f} s", flush=True)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _lines(path: Path) -> list[dict[str, Any]]:
    text = jsonio.read_bytes(path, 256 * 1024**2).decode()  # plain or gzip
    return [json.loads(line) for line in text.splitlines()]


def _files(folder: Path) -> list[Path]:
    """``p<N>.jsonl`` as the run wrote them, or ``p<N>.jsonl.gz`` as they are committed, by N."""
    found = [*folder.glob("p*.jsonl"), *folder.glob("p*.jsonl.gz")]
    return sorted(found, key=lambda path: int(path.name.split(".")[0][1:]))


def report_rotation(folder: Path) -> None:
    """Between processes, each way: every pair, pairs of the same history, pairs where one process held
    an fp64 reference after each row (as the suite's numerics did until 0.11) and the other did not."""
    processes = {int(path.name.split(".")[0][1:]): _lines(path) for path in _files(folder)}
    rows = list(dict.fromkeys(m["row"] for m in next(iter(processes.values()))))
    print(
        f"{len(processes)} processes (odd: an fp64 reference computed and held after each row), "
        f"{len(rows)} rows"
    )
    print(
        "way  | all pairs |r-1| p50 / p95 | same history p95 | other history p95 | mean of 2 measurements p95"
    )

    def value(p: list[dict[str, Any]], row: str, way: str, rep: int) -> float:
        return next(
            float(m["median_s"]) for m in p if m["row"] == row and m["way"] == way and m["rep"] == rep
        )

    ways = list(dict.fromkeys(m["way"] for m in next(iter(processes.values()))))
    for way in ways:
        every: list[float] = []
        same: list[float] = []
        other: list[float] = []
        mean2: list[float] = []
        for row in rows:
            for (i, a), (j, b) in itertools.combinations(processes.items(), 2):
                r = abs(value(b, row, way, 1) / value(a, row, way, 1) - 1)
                every.append(r)
                (same if i % 2 == j % 2 else other).append(r)
                ma = (value(a, row, way, 1) + value(a, row, way, 2)) / 2
                mb = (value(b, row, way, 1) + value(b, row, way, 2)) / 2
                mean2.append(abs(mb / ma - 1))
        print(
            f"{way:4} | {_pct(every, 0.5):.3%} / {_pct(every, 0.95):.3%} | {_pct(same, 0.95):.3%} | "
            f"{_pct(other, 0.95):.3%} | {_pct(mean2, 0.95):.3%}"
        )
    print("\nper row, rep 1: process medians (us) " + " | ".join(ways))
    for row in rows:
        cells = []
        for way in ways:
            vals = [value(p, row, way, 1) * 1e6 for p in processes.values()]
            cells.append(" ".join(f"{v:8.2f}" for v in vals) + f" ({max(vals) / min(vals) - 1:5.2%})")
        print(f"  {row:26} " + " | ".join(cells))


def report(folders: list[Path]) -> None:
    if any(m.get("way") in ("R4", "R4w") for m in _lines(_files(folders[0])[0])):
        report_rotation(folders[0])
        return
    processes = [_lines(path) for folder in folders for path in _files(folder)]
    print(f"{len(processes)} processes, {len({m['row'] for p in processes for m in p})} rows")
    ways = ("C1", "H1", "HN")

    def value(
        p: list[dict[str, Any]], row: str, way: str, key: str = "median_s", /, **where: int
    ) -> float | None:
        for m in p:
            if m["row"] == row and m["way"] == way and all(m[k] == v for k, v in where.items()):
                return float(m[key] if key == "median_s" else m["prefix"][key])
        return None

    rows = list(dict.fromkeys(m["row"] for m in processes[0]))
    print(
        "way  rows | between processes |r-1| p50 / p95 / max | inside one: 2nd measurement p95, "
        "2nd build p95, new flush buffer p95 | first 0.02 s between processes p95"
    )
    for way in ways:
        between: list[float] = []
        reps: list[float] = []
        builds: list[float] = []
        flushes: list[float] = []
        short: list[float] = []
        used = 0
        for row in rows:
            first = [value(p, row, way, build=1, rep=1, flushbuf=1) for p in processes]
            if any(v is None for v in first):
                continue
            used += 1
            vals = [float(v) for v in first if v is not None]
            between += [abs(b / a - 1) for a, b in itertools.combinations(vals, 2)]
            pre = [value(p, row, way, "0.02", build=1, rep=1, flushbuf=1) for p in processes]
            prev = [float(v) for v in pre if v is not None]
            short += [abs(b / a - 1) for a, b in itertools.combinations(prev, 2)]
            for p in processes:
                a = value(p, row, way, build=1, rep=1, flushbuf=1)
                for target, where in (
                    (reps, {"build": 1, "rep": 2, "flushbuf": 1}),
                    (builds, {"build": 2, "rep": 1, "flushbuf": 1}),
                    (flushes, {"build": 1, "rep": 1, "flushbuf": 2}),
                ):
                    b = value(p, row, way, **where)
                    if a is not None and b is not None:
                        target.append(abs(b / a - 1))
        if not between:
            continue
        print(
            f"{way}  {used:4} | {_pct(between, 0.5):.3%} / {_pct(between, 0.95):.3%} / {max(between):.3%} | "
            f"{_pct(reps, 0.95):.3%}, {_pct(builds, 0.95):.3%}, "
            + (f"{_pct(flushes, 0.95):.3%}" if flushes else "-")
            + f" | {_pct(short, 0.95):.3%}"
        )
    print("\nper row: median per call (us) in process 1, and the spread of process medians (max/min - 1)")
    for row in rows:
        cells = []
        for way in ways:
            firsts = [value(p, row, way, build=1, rep=1, flushbuf=1) for p in processes]
            got = [float(v) for v in firsts if v is not None]
            if len(got) == len(processes):
                seconds = [value(p, row, way, build=2, rep=1, flushbuf=1) for p in processes]
                second = [float(v) for v in seconds if v is not None]
                inside = (
                    max(abs(y / x - 1) for x, y in zip(got, second, strict=False)) if second else float("nan")
                )
                cells.append(
                    f"{way} {got[0] * 1e6:8.2f} procs {max(got) / min(got) - 1:6.2%} 2nd-build {inside:6.2%}"
                )
        batch = next((m["batch"] for m in processes[0] if m["row"] == row and m["way"] == "HN"), 1)
        print(f"  {row:28} N={batch:<3} " + " | ".join(cells))
    states = [m for p in processes for m in p]
    for key in ("sm_mhz", "mem_mhz", "temp_c", "power_w"):
        got = [m[key] for m in states if m.get(key) is not None]
        if got:
            print(f"{key}: min {min(got):g}, median {statistics.median(got):g}, max {max(got):g}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run")
    p_run.add_argument("--processes", type=int, default=5)
    p_run.add_argument("--out", type=Path, required=True)
    p_run.add_argument("--study", choices=("placement", "rotation", "flush"), default="placement")
    p_one = sub.add_parser("one")
    p_one.add_argument("out", type=Path)
    p_one.add_argument("--study", choices=("placement", "rotation", "flush"), default="placement")
    p_one.add_argument("--index", type=int, default=1)
    p_report = sub.add_parser("report")
    p_report.add_argument("folders", type=Path, nargs="+")
    args = parser.parse_args()
    if args.command == "run":
        run(args.processes, args.out, args.study)
    elif args.command == "one":
        _one_process(args.out, ROWS, args.study, args.index)
    else:
        report(args.folders)


if __name__ == "__main__":
    main()
