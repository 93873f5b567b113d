"""The history and the site trust nothing of their own files (issue 61): a forged index, an output folder
that is the history's or a user's, a tampered site, valid extreme times, thousands of runs or rows,
thousands of bad files, times spelled three ways, and options out of range.

Each test here failed before its fix.
"""

from __future__ import annotations

import copy
import datetime as dt
import gzip
import json
import sqlite3
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from harness.history import add, facts, index, store
from harness.history.layout import open_history
from harness.report.analysis import stats
from harness.site import build, parts
from tests.conftest import cli_in_process
from tests.history_docs import make, write

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


def _history(root: Path, documents: list[dict[str, Any]]) -> Path:
    """A history of ``documents`` (valid ones) made with the history's own store and index, without
    validating each again: what ``add`` writes, at the speed a test of thousands needs."""
    history = open_history(root, create=True)
    kept = []
    for document in documents:
        text = json.dumps(document).encode()
        sha = store.digest(text)
        kept.append(facts.of(document, sha, store.put(history, text, sha)))
    with index.writing(history, fresh=True) as db:
        index.insert(db, kept)
        index.set_documents(db, len(kept))
    return root


@pytest.fixture
def small(tmp_path: Path) -> Path:
    """A history of three runs of one cell (3 rounds), added as a user adds them."""
    for minute in range(3):
        write(tmp_path / "results", make(minute, round_=minute + 1))
    add.add(tmp_path / "history", [tmp_path / "results"])
    return tmp_path / "history"


def _forge(history: Path, sql: str) -> None:
    with sqlite3.connect(history / "index.sqlite") as db:
        db.execute(sql)
    db.close()


def _files(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*")}


# --- 1. the index is derived: checked against its documents ------------------------------------------


def test_a_row_renamed_out_of_the_site_in_a_forged_index_writes_nothing_and_says_to_reindex(small, tmp_path):
    _forge(small, "UPDATE rows SET workload = '../../x' WHERE id = 1")
    out = tmp_path / "deep" / "site"
    before = _files(tmp_path)
    done = cli_in_process("site", "--history", str(small), "--out", str(out))
    assert done.returncode == 2 and "harness history reindex" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert _files(tmp_path) == before  # no page, no shard, not even the site folder
    assert cli_in_process("history", "reindex", "--history", str(small)).returncode == 0
    assert cli_in_process("site", "--history", str(small), "--out", str(out)).returncode == 0
    assert not list(tmp_path.rglob("x.*"))


def test_a_run_that_exists_only_in_the_index_is_neither_listed_nor_published(small, tmp_path):
    sha = "a" * 64
    _forge(
        small,
        f"INSERT INTO runs SELECT 50, '{sha}', 'documents/aa/{sha}.json.gz', cell_id, cell_label, 9, "
        "started_at, '2027-01-01T00:00:00.000000Z', status, failure, backend, torch, cudnn, context_id "
        "FROM runs WHERE id = 1",
    )
    for args in (("history", "list"), ("site", "--out", str(tmp_path / "site"))):
        done = cli_in_process(*args, "--history", str(small))
        assert done.returncode == 2 and "has no document" in done.stderr and "reindex" in done.stderr
    assert not (tmp_path / "site").exists()


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE measurements SET median_s = 0",  # was ZeroDivisionError
        "UPDATE runs SET context_id = 99",  # was KeyError
        "UPDATE rows SET knobs = 'benchmark'",  # was IndexError in Row.slug
        "UPDATE measurements SET median_s = 'fast'",
        "UPDATE runs SET round = 10000000000000000000",
        "UPDATE runs SET cell_label = CAST(x'ff00' AS TEXT)",  # SQLite cannot decode it
        "UPDATE runs SET finished_at = '2026-01-01t00:00:00z'",
    ],
)
def test_a_forged_value_in_the_index_is_refused_naming_reindex_not_a_traceback(small, tmp_path, sql):
    _forge(small, sql)
    for args in (("history", "list"), ("site", "--out", str(tmp_path / "site"))):
        done = cli_in_process(*args, "--history", str(small))
        assert done.returncode == 2 and "history reindex" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr


# --- 2. site --out: never the history, never a user's files ------------------------------------------


def test_a_site_inside_the_history_is_refused_and_the_history_still_works(small):
    for out in (small / "documents", small, small / "new"):
        done = cli_in_process("site", "--history", str(small), "--out", str(out))
        assert done.returncode == 2 and "inside the history" in done.stderr
    assert not (small / "new").exists() and not (small / "documents" / "index.html").exists()
    assert cli_in_process("history", "list", "--history", str(small)).returncode == 0
    assert cli_in_process("history", "reindex", "--history", str(small)).returncode == 0


@pytest.mark.parametrize("name", ["index.html", "index.json", "assets/site.css"])
def test_a_folder_of_a_users_files_is_refused_and_left_as_it_was(small, tmp_path, name):
    out = tmp_path / "mine"
    (out / "assets").mkdir(parents=True)
    (out / name).write_text("my own\n")
    done = cli_in_process("site", "--history", str(small), "--out", str(out))
    assert done.returncode == 2 and "not a site this harness wrote" in done.stderr
    assert (out / name).read_text() == "my own\n"
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == sorted({"assets", name})


def test_a_site_is_built_again_into_its_own_folder(small, tmp_path):
    out = tmp_path / "site"
    assert cli_in_process("site", "--history", str(small), "--out", str(out)).returncode == 0
    done = cli_in_process("site", "--history", str(small), "--out", str(out))
    assert done.returncode == 0 and "0 file(s) written" in done.stdout


# --- 3. an incremental build verifies what it keeps --------------------------------------------------


def test_a_tampered_shard_and_a_truncated_page_are_written_again_not_kept(small, tmp_path):
    out = tmp_path / "site"
    build.build(small, out)
    shard = next((out / "rows").glob("*.json"))
    page = next((out / "runs").glob("*.html"))
    good_shard, good_page = shard.read_bytes(), page.read_bytes()
    forged = json.loads(good_shard)
    forged["steps"] = [{**s, "ratio": "fast"} for s in forged["steps"]] or [{"ratio": "fast"}]
    shard.write_text(json.dumps(forged))
    page.write_bytes(good_page[:100])
    done = cli_in_process("site", "--history", str(small), "--out", str(out))
    assert done.returncode == 0 and "Traceback" not in done.stderr
    assert shard.read_bytes() == good_shard and page.read_bytes() == good_page


def test_the_page_of_a_run_no_longer_in_the_history_is_removed(tmp_path):
    documents = [make(minute, round_=minute + 1) for minute in range(3)]
    history = _history(tmp_path / "history", documents)
    out = tmp_path / "site"
    build.build(history, out)
    pages = sorted((out / "runs").glob("*.html"))
    assert len(pages) == 3
    gone = next((history / "documents").rglob("*.json*"))
    gone.unlink()
    assert cli_in_process("history", "reindex", "--history", str(history)).returncode == 0
    build.build(history, out)
    assert len(sorted((out / "runs").glob("*.html"))) == 2
    assert gone.name.split(".")[0][:12] not in " ".join(p.name for p in (out / "runs").iterdir())


# --- 4. the statistics are total over every valid input ---------------------------------------------


@pytest.mark.parametrize("rounds", [1, 2, 3, 6, 7, 20])
@pytest.mark.parametrize("order", ["slower", "faster"])
def test_times_as_far_apart_as_5e_324_s_and_a_day_are_judged_with_a_finite_ratio(rounds, order):
    tiny, day = [5e-324 * (i + 1) for i in range(rounds)], [86400.0 - i for i in range(rounds)]
    before, after = (tiny, day) if order == "slower" else (day, tiny)
    judged = stats.judge(before, after, 5.0, 0.01)
    assert judged.ratio is not None and 0 < judged.ratio < float("inf")
    assert (judged.ratio > 1) == (order == "slower")
    if rounds >= 3:
        assert judged.verdict == order


def test_a_row_whose_times_are_5e_324_s_and_a_day_apart_is_published(tmp_path):
    documents = []
    for r, cudnn in enumerate(["9.19.0"] * 3 + ["9.20.1"] * 3):
        document = make(r, cudnn=cudnn, round_=r % 3 + 1)
        for m in document["measurements"]:
            m["stats"] = {**m["stats"], "median": 5e-324 if r < 3 else 86400.0}
        documents.append(document)
    history = _history(tmp_path / "history", documents)
    assert build.build(history, tmp_path / "site").rows_rebuilt > 0
    assert "slower" in (tmp_path / "site" / "regressions.xml").read_text()


# --- 5. each file under 1 MB --------------------------------------------------------------------------


def _sizes(out: Path) -> dict[str, int]:
    return {p.relative_to(out).as_posix(): p.stat().st_size for p in out.rglob("*") if p.is_file()}


@pytest.mark.slow  # 4,000 runs: about 30 s on a shared 2-core machine
def test_four_thousand_runs_of_one_row_make_row_pages_and_shards_in_parts_under_1_mb(tmp_path):
    documents = [make(minute, round_=minute % 50 + 1) for minute in range(4000)]
    out = tmp_path / "site"
    build.build(_history(tmp_path / "history", documents), out)
    sizes = _sizes(out)
    assert max(sizes.values()) < parts.LIMIT, max(sizes.items(), key=lambda s: s[1])
    assert any(".p2.html" in name for name in sizes if name.startswith("rows/"))
    first = json.loads(next(p for p in (out / "rows").glob("*.json") if ".p" not in p.name).read_text())
    together = [first] + [json.loads((out / name).read_text()) for name in first["parts"]]
    assert sum(len(s["points"]["run"]) for s in together) == 4000


@pytest.mark.slow  # 4,500 rows a run, three runs
def test_four_thousand_five_hundred_rows_a_run_make_pages_index_and_manifest_in_parts_under_1_mb(tmp_path):
    documents = []
    for minute in range(3):
        document = make(minute, round_=minute + 1)
        model = document["measurements"][0]
        document["measurements"] = [
            {**copy.deepcopy(model), "workload": f"conv2d_generated_layer_{i:05d}"} for i in range(4500)
        ]
        documents.append(document)
    out = tmp_path / "site"
    build.build(_history(tmp_path / "history", documents), out)
    sizes = _sizes(out)
    assert max(sizes.values()) < parts.LIMIT, max(sizes.items(), key=lambda s: s[1])
    assert {"index.p2.json", "index.p2.html", ".site-manifest.p2.json"} <= set(sizes)
    assert any(name.startswith("runs/") and ".p2.html" in name for name in sizes)
    first = json.loads((out / "index.json").read_text())
    more = [json.loads((out / name).read_text()) for name in first["parts"]]
    assert len(first["rows"]) + sum(len(part["rows"]) for part in more) == 4500
    again = build.build(tmp_path / "history", out)  # the manifest in parts is read back whole
    assert again.written == 0 and again.rows_rebuilt == 0


# --- 6. one refusal format, bounded -------------------------------------------------------------------


def test_an_add_over_hundreds_of_junk_files_lists_twenty_problems_and_counts_the_rest(tmp_path):
    junk = tmp_path / "junk"
    junk.mkdir()
    for i in range(300):
        (junk / f"r{i}.json.gz").write_bytes(gzip.compress(b'{"schema_version": 1}'))
    done = cli_in_process("history", "add", str(junk), "--history", str(tmp_path / "history"))
    lines = done.stderr.splitlines()
    assert done.returncode == 2 and len(lines) == 21, done.stderr[-2000:]
    assert lines[0].startswith("error: history: nothing was added") and "300 file(s)" in lines[0]
    assert lines[-1].endswith("more problems, not listed")
    assert not (tmp_path / "history" / "documents").exists()


# --- 7. times are instants ----------------------------------------------------------------------------


def _spelled(document: dict[str, Any], offset_hours: int | None) -> dict[str, Any]:
    """The document with its times spelled at another offset (None: with Z)."""
    document = copy.deepcopy(document)
    for key in ("started_at", "finished_at"):
        when = dt.datetime.fromisoformat(document[key])
        if offset_hours is None:
            document[key] = when.astimezone(dt.timezone.utc).isoformat().replace("+00:00", "Z")
        else:
            document[key] = when.astimezone(dt.timezone(dt.timedelta(hours=offset_hours))).isoformat()
    return document


def test_one_run_spelled_with_plus_zero_z_and_plus_two_is_imported_once(tmp_path):
    document = make(0)
    for i, offset in enumerate((0, None, 2)):
        write(tmp_path / "results", _spelled(document, offset), f"r{i}.json.gz")
    done = add.add(tmp_path / "history", [tmp_path / "results"])
    assert (len(done.added), len(done.already), done.runs) == (1, 2, 1)


def test_the_newest_run_is_the_latest_instant_not_the_largest_text(tmp_path):
    later = make(60, round_=2)  # an hour later, in UTC
    earlier = _spelled(make(0, round_=1), 9)  # its text, at +09:00, sorts after the later run's
    for document in (earlier, later):
        write(tmp_path / "results", document)
    add.add(tmp_path / "history", [tmp_path / "results"])
    done = cli_in_process("history", "list", "--history", str(tmp_path / "history"), "--json")
    newest = json.loads(done.stdout)["newest"]
    assert [r["round"] for r in newest] == [2, 1]


def test_the_feed_writes_times_with_upper_case_t_and_z(tmp_path):
    documents = []
    for r, cudnn in enumerate(["9.19.0"] * 3 + ["9.20.1"] * 3):
        document = make(r, cudnn=cudnn, round_=r % 3 + 1, scale=1.0 if r < 3 else 1.5)
        for key in ("started_at", "finished_at"):
            document[key] = document[key].replace("+00:00", "z").replace("T", "t")
        documents.append(document)
    for document in documents:
        write(tmp_path / "results", document)
    add.add(tmp_path / "history", [tmp_path / "results"])
    build.build(tmp_path / "history", tmp_path / "site")
    feed = ET.parse(tmp_path / "site" / "regressions.xml").getroot()
    times = [e.text or "" for e in feed.iter("{http://www.w3.org/2005/Atom}updated")]
    assert len(times) >= 2
    assert all("T" in t and t.endswith("Z") and "t" not in t and "z" not in t for t in times)


# --- 8. options are checked before work starts --------------------------------------------------------


def test_history_list_newest_ten_to_the_twentieth_is_a_clear_refusal(small):
    done = cli_in_process("history", "list", "--history", str(small), "--newest", str(10**20))
    assert done.returncode == 2 and "--newest" in done.stderr and "Traceback" not in done.stderr


def test_qualify_refuses_a_history_that_is_a_file_before_running_anything(tmp_path):
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(
        "schema_version: 1\nname: early\nbackend: local\naxes: {torch: [installed], cudnn: [bundled]}\n"
        "suite: {workloads: [relu], dtypes: [fp32], time_budget_s: 0.02}\nbaseline: {cudnn: bundled}\n"
        "rounds: 1\n"
    )
    history = tmp_path / "history"
    history.write_text("not a folder\n")
    out = tmp_path / "results"
    done = cli_in_process(
        "qualify", "--matrix", str(matrix), "--history", str(history), "--out", str(out),
        "--report-out", str(tmp_path / "report"),
    )  # fmt: skip
    assert done.returncode == 2 and "is a file" in done.stderr
    assert "outcome" not in done.stdout + done.stderr
    assert not out.exists() and not (tmp_path / "report").exists()
