"""How long does ``harness site`` take on a large history, and how much less after one added run? And
which embedded database suits the history's index? (issue 44)

    python -m benchmarks.history_site [--runs 2000] [--rows 300] [--keep DIR] [--no-duckdb]

A synthetic history of ``--runs`` runs x ``--rows`` rows: 4 GPUs (contexts) x 5 torch builds x 20 cuDNN
releases, 5 rounds a cell (qualify's 3, and 2 more for undecided rows), every run measuring every row;
one row in ten slows by 10% at one release. The runs are written into the index through the history's own
``index.insert`` (the site reads only the index; importing 2,000 documents would time validation, not the
site). It times a full build of the site, then one more run added (a sixth round of one cell) and the
incremental build, and prints their ratio, the site's size and its largest file.

The index: the same 2,000 x 300 measurements inserted into SQLite (the standard library) and DuckDB
(where it is installed: ``pip install duckdb``), then one row's points read back 300 times, as a build does.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import random
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pandas

from harness.history import index, layout
from harness.history.facts import Context, MeasurementFacts, Row, RunFacts
from harness.site import build

GPUS, TORCH, CUDNN, ROUNDS = 4, 5, 20, 5


def runs(count: int, rows: int, seed: int = 44) -> Iterator[RunFacts]:
    rng = random.Random(seed)
    names = [
        Row(f"workload_{i:03d}", ("fp32", "bf16", "fp16")[i % 3], "benchmark=0 deterministic=0 tf32=0")
        for i in range(rows)
    ]
    base = [rng.uniform(1e-5, 1e-2) for _ in names]
    cells = list(itertools.product(range(GPUS), range(TORCH), range(CUDNN)))
    for n in range(count):
        gpu, torch, cudnn = cells[n % len(cells)]
        round_ = n // len(cells) + 1
        yield _run(n, gpu, torch, cudnn, round_, names, base, rng)


def _run(
    n: int,
    gpu: int,
    torch: int,
    cudnn: int,
    round_: int,
    names: list[Row],
    base: list[float],
    rng: random.Random,
) -> RunFacts:
    minute = f"{n // 60 % 24:02d}:{n % 60:02d}"
    day = f"2026-{1 + n // 1440 % 12:02d}-{1 + n // 60 // 24 % 28:02d}"
    measurements = []
    for i, row in enumerate(names):
        slower = 1.1 if i % 10 == 0 and cudnn >= CUDNN // 2 else 1.0
        median = base[i] * slower * rng.gauss(1.0, 0.004)
        kernel = f"kernel_{i}_{'b' if slower > 1 else 'a'}"
        measurements.append(MeasurementFacts(row, "ok", median, median * 0.99, median * 1.01, 100, kernel))
    return RunFacts(
        sha256=f"{n:064x}",
        file=f"documents/{n:064x}.json.gz",
        cell_id=f"torch2.{torch}.0_cudnn-wheel-9.{cudnn}.0_{gpu:010d}",
        cell_label=f"torch 2.{torch}.0 / cuDNN 9.{cudnn}.0",
        round=round_,
        started_at=f"{day}T{minute}:00+00:00",
        finished_at=f"{day}T{minute}:30+00:00",
        status="ok",
        failure=None,
        backend="local",
        torch=f"2.{torch}.0+cu130",
        cudnn=f"9.{cudnn}.0",
        context=Context(f"GPU model {gpu}", "580.0", "0.16", "default"),
        measurements=tuple(measurements),
    )


def make_history(root: Path, count: int, rows: int) -> layout.History:
    history = layout.open_history(root, create=True)
    with layout.locked(history), index.writing(history, fresh=True) as db:
        index.insert(db, runs(count, rows))
        index.set_documents(db, 0)  # no documents: the index stands for them
    return history


def add_one(history: layout.History, count: int, rows: int) -> None:
    extra = _run(count, 0, 0, 0, count // (GPUS * TORCH * CUDNN) + 1, *_names_base(rows), random.Random(1))
    with layout.locked(history), index.writing(history, fresh=False) as db:
        index.insert(db, [extra])


def _names_base(rows: int) -> tuple[list[Row], list[float]]:
    first = next(runs(1, rows))
    return [m.row for m in first.measurements], [m.median_s or 0.0 for m in first.measurements]


def databases(count: int, rows: int, duckdb: bool) -> list[str]:
    values = [(r, m) for r, run in enumerate(runs(count, rows)) for m, _ in enumerate(run.measurements)]
    lines = [f"index: {len(values):,} measurements ({count} runs x {rows} rows)"]
    engines = [("sqlite3", sqlite3.connect)]
    if duckdb:
        with contextlib.suppress(ImportError):
            import duckdb as duck

            engines.append((f"duckdb {duck.__version__}", duck.connect))
    for name, connect in engines:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "index.db"
            db = connect(str(path))
            db.execute(
                "CREATE TABLE m (run_id INTEGER, row_id INTEGER, median_s DOUBLE, "
                "PRIMARY KEY (run_id, row_id))"
            )
            db.execute("CREATE INDEX m_by_row ON m (row_id, run_id)")  # as the history's index has
            start = time.perf_counter()
            if name == "sqlite3":
                db.executemany("INSERT INTO m VALUES (?, ?, ?)", [(r, m, 1e-3) for r, m in values])
            else:  # DuckDB's fast path is a bulk insert from a frame (executemany is row by row: minutes)
                frame = pandas.DataFrame(values, columns=["run_id", "row_id"]).assign(median_s=1e-3)
                db.register("frame", frame)
                db.execute("INSERT INTO m SELECT * FROM frame")
            db.commit()
            inserted = time.perf_counter() - start
            start = time.perf_counter()
            for row in range(rows):
                db.execute("SELECT run_id, median_s FROM m WHERE row_id = ?", (row,)).fetchall()
            queried = time.perf_counter() - start
            db.close()
            lines.append(
                f"  {name}: insert {inserted:.2f} s, {rows} per-row reads {queried:.2f} s, "
                f"file {path.stat().st_size / 1e6:.1f} MB"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--rows", type=int, default=300)
    parser.add_argument("--keep", type=Path, help="keep the history and the site here")
    parser.add_argument("--no-duckdb", action="store_true")
    parser.add_argument("--index-only", action="store_true", help="only the SQLite/DuckDB comparison")
    args = parser.parse_args()
    if args.index_only:
        print("\n".join(databases(args.runs, args.rows, not args.no_duckdb)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        where = args.keep or Path(tmp)
        start = time.perf_counter()
        history = make_history(where / "history", args.runs, args.rows)
        made = time.perf_counter() - start
        print(
            f"history: {args.runs} runs x {args.rows} rows, {GPUS} GPUs x {TORCH} torch x {CUDNN} cuDNN x "
            f"{ROUNDS} rounds; index {history.index.stat().st_size / 1e6:.1f} MB, made in {made:.1f} s"
        )
        start = time.perf_counter()
        full = build.build(history.root, where / "site", full=True)
        full_s = time.perf_counter() - start
        add_one(history, args.runs, args.rows)
        start = time.perf_counter()
        again = build.build(history.root, where / "site")
        again_s = time.perf_counter() - start
        files = [p for p in (where / "site").rglob("*") if p.is_file()]
        size = sum(p.stat().st_size for p in files)
        largest = max(files, key=lambda p: p.stat().st_size)
        print(f"full build: {full_s:.1f} s ({full.written} files, {full.rows_rebuilt} row pages)")
        print(
            f"after one added run: {again_s:.1f} s ({again.written} files written, {again.kept} unchanged, "
            f"{again.rows_rebuilt} row pages rebuilt)"
        )
        print(f"ratio full / incremental: {full_s / again_s:.1f}")
        print(
            f"site: {len(files)} files, {size / 1e6:.1f} MB; largest {largest.relative_to(where / 'site')} "
            f"{largest.stat().st_size / 1024:.0f} KiB"
        )
        for line in databases(args.runs, args.rows, not args.no_duckdb):
            print(line)


if __name__ == "__main__":
    main()
