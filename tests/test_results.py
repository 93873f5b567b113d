"""Result documents: the schema, the facts it cannot state, and quarantine of invalid files."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest

from harness import jsonio
from harness.results import documents
from tests.conftest import run_cli
from tests.evidence import GPU_LOCAL_CUDNN_SOURCES

GPU_RESULTS = sorted((GPU_LOCAL_CUDNN_SOURCES / "results").glob("torch*.json.gz"))


@pytest.fixture(scope="module")
def committed() -> dict:
    """One committed GPU result, read once for every case of the module."""
    return jsonio.read(GPU_RESULTS[0])


@pytest.fixture
def good(committed) -> dict:
    return copy.deepcopy(committed)  # each case mutates its own


def write(tmp_path: Path, doc: dict, name: str = "cell.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def test_committed_gpu_results_are_valid():
    assert len(GPU_RESULTS) == 3
    for path in GPU_RESULTS:
        document, problems = documents.check(path)
        assert problems == [] and document is not None


def measurement(doc: dict) -> dict:
    return next(m for m in doc["measurements"] if m["status"] == "ok")


def _forge_id(doc):
    doc["cell"]["cudnn"] = "disabled"


def _shrink_samples(doc):
    measurement(doc)["samples_s"] = measurement(doc)["samples_s"][:3]


def _lie_median(doc):
    m = measurement(doc)
    m["stats"]["median"] = m["stats"]["q1"]


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        pytest.param(lambda d: d.update(schema_version=99), "expected 1", id="unknown-schema-version"),
        pytest.param(lambda d: d.pop("cell"), "'cell' is a required property", id="missing-field"),
        pytest.param(
            lambda d: measurement(d)["samples_s"].__setitem__(0, -1.0), "samples_s[0]", id="negative-time"
        ),
        pytest.param(
            lambda d: measurement(d)["samples_s"].__setitem__(0, 1e12), "samples_s[0]", id="impossible-time"
        ),
        pytest.param(lambda d: d.update(status="great"), "status", id="bad-enum"),
        pytest.param(
            lambda d: d.update(failure={"stage": "x", "reason": "y", "log_tail": ""}),
            "failure",
            id="ok-with-failure",
        ),
        pytest.param(lambda d: d["cudnn"].update(verified=False), "verified", id="ok-but-unverified"),
        pytest.param(_forge_id, "does not match the cell's content", id="forged-cell-id"),
        pytest.param(_shrink_samples, "stats.n", id="stats-disagree-with-samples"),
        pytest.param(_lie_median, "stats.median: is", id="forged-median"),
        pytest.param(lambda d: d.update(extra="x"), "unknown key 'extra'", id="unknown-key"),
    ],
)
def test_invalid_documents_are_refused(tmp_path, good, mutate, expected):
    doc = copy.deepcopy(good)
    mutate(doc)
    document, problems = documents.check(write(tmp_path, doc))
    assert document is None
    assert any(expected in str(p) for p in problems), [str(p) for p in problems]


def test_nan_truncated_and_huge_files_are_refused(tmp_path, good, monkeypatch):
    text = json.dumps(good)
    nan = tmp_path / "nan.json"
    nan.write_text(text.replace(str(measurement(good)["stats"]["median"]), "NaN", 1))
    truncated = tmp_path / "truncated.json"
    truncated.write_text(text[: len(text) // 2])
    assert "not valid JSON" in str(documents.check(nan)[1][0])
    assert "not valid JSON" in str(documents.check(truncated)[1][0])
    monkeypatch.setattr(documents, "MAX_BYTES", 1000)
    assert "the limit is 1000" in str(documents.check(nan)[1][0])


def test_load_quarantines_invalid_files_and_keeps_valid_ones(tmp_path, good):
    shutil.copy(GPU_LOCAL_CUDNN_SOURCES / "results" / "plan.json", tmp_path / "plan.json")
    write(tmp_path, good, GPU_RESULTS[0].name)
    (tmp_path / "broken.json").write_text('{"schema_version": 1, "cell": ')
    loaded = documents.load(tmp_path)
    assert [d["cell"]["id"] for d in loaded.documents] == [good["cell"]["id"]]
    assert [q.name for q in loaded.quarantined] == ["broken.json"]
    assert not (tmp_path / "broken.json").exists()
    assert (tmp_path / "quarantine" / "broken.json").read_text() == '{"schema_version": 1, "cell": '
    assert "not valid JSON" in (tmp_path / "quarantine" / "broken.json.problems.txt").read_text()
    # quarantined files stay listed on the next load
    assert [q.name for q in documents.load(tmp_path).quarantined] == ["broken.json"]


def test_cli_validate_exit_codes(tmp_path, good):
    ok = run_cli("validate", str(GPU_RESULTS[0]))
    assert ok.returncode == 0 and "ok:" in ok.stdout
    doc = copy.deepcopy(good)
    doc["schema_version"] = 2
    bad = run_cli("validate", str(GPU_RESULTS[0]), str(write(tmp_path, doc)))
    assert bad.returncode == 2
    assert "schema_version: 2 is not allowed; expected 1" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_result_files_are_read_compressed_or_plain_and_reads_are_bounded(tmp_path):
    import gzip
    import os

    from harness import jsonio

    doc = {"a": [1, 2, 3]}
    jsonio.write_atomic(tmp_path / "x.json.gz", doc, compact=True)
    jsonio.write_atomic(tmp_path / "x.json", doc, compact=True)
    assert (tmp_path / "x.json.gz").read_bytes()[:2] == b"\x1f\x8b"
    assert jsonio.read(tmp_path / "x.json.gz") == jsonio.read(tmp_path / "x.json") == doc
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b" " * (8 << 20)))  # 8 MiB of blanks in a few KiB
    with pytest.raises(jsonio.TooLarge):
        jsonio.read(bomb, limit=1 << 20)
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    with pytest.raises(OSError, match="not a regular file"):
        jsonio.read(tmp_path / "zero.json")
    os.mkfifo(tmp_path / "fifo.json")
    with pytest.raises(OSError, match="not a regular file"):  # opened without blocking, then refused
        jsonio.read(tmp_path / "fifo.json")
    (tmp_path / "cut.json.gz").write_bytes((tmp_path / "x.json.gz").read_bytes()[:12])
    with pytest.raises(ValueError, match="not a whole gzip file"):
        jsonio.read(tmp_path / "cut.json.gz")


def test_the_suite_the_orchestrator_and_the_schema_agree_on_the_result_format():
    from harness import schemas
    from harness.backends import records
    from harness.suite import RESULT_SCHEMA_VERSION

    schema = json.loads((schemas.SCHEMA_DIR / "result.schema.json").read_text())
    assert schema["properties"]["schema_version"]["const"] == RESULT_SCHEMA_VERSION
    assert records.RESULT_SCHEMA_VERSION is RESULT_SCHEMA_VERSION  # one constant, not two that may drift


@pytest.mark.slow
def test_a_superseded_folder_named_itself_holds_results_and_one_below_a_folder_does_not(tmp_path):
    # issue 41's walk: 'compare results/smoke/superseded ...' said the folder "holds no result files"
    from harness.results import folder

    results = tmp_path / "results"
    earlier = results / folder.SUPERSEDED
    earlier.mkdir(parents=True)
    for source in sorted((GPU_LOCAL_CUDNN_SOURCES / "results").glob("*.json.gz"))[:2]:
        shutil.copy(source, earlier / source.name)
    assert [p.name for p in folder.result_files(earlier)] == sorted(p.name for p in earlier.iterdir())
    assert folder.result_files(results) == []  # a results folder's own superseded runs stay out of it
    done = run_cli("compare", str(earlier), str(earlier))
    assert "holds no result files" not in done.stderr, done.stderr
