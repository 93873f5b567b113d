"""harness history add|list|reindex (issue 44, item 1): real files, a real SQLite index, the real CLI."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from pathlib import Path

import pytest

from harness.errors import InputError
from harness.history import add, layout
from tests.conftest import run_cli
from tests.history_docs import make, write

pytestmark = pytest.mark.slow  # the real CLI, on real documents: each test takes 2 s or more


@pytest.fixture
def results(tmp_path: Path) -> Path:
    folder = tmp_path / "results"
    for i, cudnn in enumerate(("9.19.0", "9.19.0", "9.28.0")):
        write(folder, make(i, cudnn=cudnn, round_=i + 1))
    return folder


def listed(history: Path) -> dict:
    done = run_cli("history", "list", "--history", str(history), "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_add_imports_each_run_once_however_often_it_is_added(tmp_path, results):
    history = tmp_path / "history"
    first = run_cli("history", "add", str(results), "--history", str(history))
    assert first.returncode == 0, first.stderr
    assert "3 added, 0 held already, 3 in" in first.stdout
    again = run_cli("history", "add", str(results), str(results), "--history", str(history))
    assert again.returncode == 0, again.stderr
    assert "0 added, 3 held already, 3 in" in again.stdout
    stored = sorted(p.name for p in (history / "documents").rglob("*.json.gz"))
    assert len(stored) == 3 and all(len(name.split(".")[0]) == 64 for name in stored)  # content-addressed
    found = listed(history)
    assert found["runs"] == 3 and len(found["contexts"]) == 1
    assert found["contexts"][0]["cudnn"] == ["9.19.0", "9.28.0"]
    assert found["contexts"][0]["modes"] == ["fp32 (TF32 off)", "bf16"]  # suite 0.19's fp32, named


def test_documents_are_kept_as_they_came_and_the_index_is_derived_from_them(tmp_path, results):
    history = tmp_path / "history"
    add.add(history, [results])
    originals = {p.read_bytes() for p in results.glob("*.json.gz")}
    assert {p.read_bytes() for p in (history / "documents").rglob("*.json.gz")} == originals
    before = listed(history)
    (history / "index.sqlite").unlink()
    assert listed(history) == before  # made again from the documents alone
    done = run_cli("history", "reindex", "--history", str(history))
    assert done.returncode == 0 and "3 run(s)" in done.stdout, done.stderr
    assert listed(history) == before


def test_contexts_are_kept_apart(tmp_path):
    folder = tmp_path / "results"
    write(folder, make(0, gpu="NVIDIA H100 80GB HBM3"))
    write(folder, make(1, gpu="NVIDIA H200"))
    add.add(tmp_path / "history", [folder])
    contexts = listed(tmp_path / "history")["contexts"]
    assert sorted(c["context"]["gpu"] for c in contexts) == ["NVIDIA H100 80GB HBM3", "NVIDIA H200"]
    assert [c["runs"] for c in contexts] == [1, 1]


def test_a_result_validate_refuses_is_never_imported_and_nothing_else_is(tmp_path, results):
    bad = make(9)
    bad["measurements"][0]["stats"]["median"] *= 2  # statistics that are not those of the samples
    write(results, bad, "forged.json.gz")
    history = tmp_path / "history"
    done = run_cli("history", "add", str(results), "--history", str(history))
    assert done.returncode == 2
    assert (
        "forged.json.gz" in done.stderr
        and "stats.median" in done.stderr
        and "nothing was added" in done.stderr
    )
    assert not list((history / "documents").rglob("*.json*"))


def test_a_run_is_never_altered(tmp_path, results):
    history = tmp_path / "history"
    add.add(history, [results])
    other = make(0, round_=1, scale=1.5)  # the first run's cell and times, other numbers
    changed = write(tmp_path / "later", other)
    done = run_cli("history", "add", str(changed), "--history", str(history))
    assert done.returncode == 2
    assert str(changed) in done.stderr and "never altered" in done.stderr
    assert listed(history)["runs"] == 3


def test_a_link_in_a_results_folder_is_not_followed(tmp_path, results, outside):
    target = write(outside, make(20))
    (results / "planted.json.gz").symlink_to(target)
    done = run_cli("history", "add", str(results), "--history", str(tmp_path / "history"))
    assert done.returncode == 2
    assert "planted.json.gz" in done.stderr and "link" in done.stderr


@pytest.mark.parametrize("where", ["document", "folder", "index", "fifo", "marker"])
def test_what_is_planted_in_a_history_is_refused_never_followed(tmp_path, results, outside, where):
    history = tmp_path / "history"
    add.add(history, [results])
    victim = write(outside, make(30))
    if where == "document":
        name = history / "documents" / "ab" / ("ab" + "0" * 62 + ".json.gz")
        name.parent.mkdir(exist_ok=True)
        name.symlink_to(victim)
    elif where == "folder":
        (history / "documents" / "cd").symlink_to(outside, target_is_directory=True)
    elif where == "index":
        (history / "index.sqlite").unlink()
        (history / "index.sqlite").symlink_to(victim)
    elif where == "fifo":
        os.mkfifo(history / "documents" / "ef")
    else:
        (history / "HISTORY.json").unlink()
        (history / "HISTORY.json").symlink_to(victim)
    before = victim.read_bytes()
    refused = [["list"], ["add", str(results)]] + ([] if where == "index" else [["reindex"]])
    for command in refused:
        done = run_cli("history", *command, "--history", str(history), timeout=60)
        assert done.returncode == 2, (command, done.stderr)
        assert "link" in done.stderr or "remove it" in done.stderr, done.stderr
    if where == "index":  # the index is derived: reindex writes a new one in the link's place
        assert run_cli("history", "reindex", "--history", str(history)).returncode == 0
        assert not (history / "index.sqlite").is_symlink()
    assert victim.read_bytes() == before


def test_a_history_of_a_newer_layout_is_refused_with_the_version_it_needs(tmp_path, results):
    history = tmp_path / "history"
    add.add(history, [results])
    (history / "HISTORY.json").write_text(json.dumps({"format": "harness-history", "version": 7}))
    done = run_cli("history", "list", "--history", str(history))
    assert done.returncode == 2
    assert "history version 7" in done.stderr and f"reads version {layout.HISTORY_VERSION}" in done.stderr


def test_a_folder_that_is_not_a_history_is_named(tmp_path):
    (tmp_path / "stuff").mkdir()
    (tmp_path / "stuff" / "notes.txt").write_text("mine")
    done = run_cli("history", "list", "--history", str(tmp_path / "stuff"))
    assert done.returncode == 2 and "no HISTORY.json" in done.stderr
    done = run_cli("history", "add", str(tmp_path / "nothing"), "--history", str(tmp_path / "stuff"))
    assert done.returncode == 2 and "does not exist" in done.stderr


def test_a_damaged_index_is_made_again(tmp_path, results):
    history = tmp_path / "history"
    add.add(history, [results])
    (history / "index.sqlite").write_bytes(b"not a database")
    assert listed(history)["runs"] == 3
    with sqlite3.connect(history / "index.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 3


def test_a_new_history_another_add_is_making_is_not_taken_for_a_strangers_folder(tmp_path, results):
    # two adds on a new folder: the second found the first's lock and its marker's temporary file there,
    # and refused the folder as one that "holds files but no HISTORY.json" (seen once in CI). Those are
    # what a history's writer makes before its marker: the second waits on the lock, then makes the marker
    # or finds the first's; a stranger's file still refuses the folder, and nothing is written into it.
    history = tmp_path / "history"
    history.mkdir()
    (history / layout.LOCK).write_text("")
    (history / ".tmp-abc.json").write_text("{")  # a marker mid-write, as a writer killed there leaves it
    made = layout.open_history(history, create=True)
    assert json.loads(made.marker.read_text()) == {"format": layout.FORMAT, "version": layout.HISTORY_VERSION}
    assert not list(history.glob(".tmp-*"))  # swept under the lock
    assert add.add(history, [results]).runs == 3
    stranger = tmp_path / "stranger"
    stranger.mkdir()
    (stranger / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match=r"holds files but no HISTORY\.json"):
        layout.open_history(stranger, create=True)
    assert [p.name for p in stranger.iterdir()] == ["notes.txt"]


def test_two_adds_at_once_neither_mix_nor_lose_a_run(tmp_path):
    history = tmp_path / "history"
    folders = [tmp_path / f"results{k}" for k in range(3)]
    for k, folder in enumerate(folders):
        for i in range(3):
            write(folder, make(100 * k + i, cudnn=f"9.{k}.0"))
    shared = folders[0]
    outcomes: list = []
    threads = [
        threading.Thread(
            target=lambda f=f: outcomes.append(
                run_cli("history", "add", str(f), str(shared), "--history", str(history))
            )
        )
        for f in folders
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [o.returncode for o in outcomes] == [0, 0, 0], [o.stderr for o in outcomes]
    found = listed(history)
    assert found["runs"] == 9
    with sqlite3.connect(history / "index.sqlite") as db:
        keys = db.execute("SELECT cell_id, started_at, finished_at FROM runs").fetchall()
    assert len(set(keys)) == 9
    assert len(list((history / "documents").rglob("*.json.gz"))) == 9


def test_files_the_history_holds_are_not_validated_again(tmp_path, results):
    history = tmp_path / "history"
    heard: list[tuple[int, int]] = []
    first = add.add(history, [results], lambda done, total: heard.append((done, total)))
    assert len(first.added) == 3 and heard == [(0, 3), (1, 3), (2, 3), (3, 3)]
    write(results, make(40, cudnn="9.28.0", round_=4))
    heard.clear()
    again = add.add(history, [results], lambda done, total: heard.append((done, total)))
    assert len(again.added) == 1 and len(again.already) == 3 and again.runs == 4
    assert heard == [(0, 1), (1, 1)]  # the new file alone was validated: the three held were only digested


def test_a_long_add_says_how_far_it_is_and_an_add_of_nothing_new_validates_nothing(tmp_path):
    folder, history = tmp_path / "many", tmp_path / "history"
    for i in range(50):
        write(folder, make(i, round_=i + 1))
    done = run_cli("history", "add", str(folder), "--history", str(history))
    assert done.returncode == 0, done.stderr
    assert "validating 50 result document(s)" in done.stdout and "validated 50 of 50" in done.stdout
    again = run_cli("history", "add", str(folder), "--history", str(history))
    assert again.returncode == 0, again.stderr
    assert "validat" not in again.stdout and "0 added, 50 held already, 50 in" in again.stdout
