"""An output folder is untrusted input too (issue 31): links planted where the harness writes, truncates or
deletes never make it touch anything outside the folder; two commands on one folder never mix it; what is
written follows the umask.

Each test here failed before its fix: the lock file, ``logs/`` and ``measurements/`` were followed.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness import jsonio
from harness.errors import InputError
from harness.results import folder
from tests.conftest import REPO, harness_env, run_cli, start_cli
from tests.evidence import GPU_LOCAL_ROUNDS

RELU = """\
schema_version: 1
name: planted
backend: local
axes: {torch: [installed], cudnn: [bundled]}
suite: {workloads: [relu], dtypes: [fp32], time_budget_s: 0.02}
baseline: {cudnn: bundled}
rounds: 1
"""


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder outside every output folder, with a file the harness must never touch."""
    victim = tmp_path / "outside"
    victim.mkdir()
    (victim / "precious.txt").write_text("keep me\n")
    (victim / ".tmp-precious").write_text("keep me too\n")
    (victim / "x.log.part").write_text("and me\n")
    (victim / "old.measurement.json").write_text("{}\n")
    return victim


def _untouched(victim: Path) -> None:
    assert sorted(p.name for p in victim.iterdir()) == [
        ".tmp-precious",
        "old.measurement.json",
        "precious.txt",
        "x.log.part",
    ]
    assert (victim / "precious.txt").read_text() == "keep me\n"
    assert (victim / ".tmp-precious").read_text() == "keep me too\n"


def _run(matrix: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return run_cli("run", "--matrix", str(matrix), "--out", str(out))


@pytest.mark.slow
def test_a_lock_file_planted_as_a_link_is_refused_not_truncated(tmp_path, outside):
    out = tmp_path / "results"
    out.mkdir()
    (out / folder.LOCK_FILE).symlink_to(outside / "precious.txt")
    matrix = tmp_path / "m.yaml"
    matrix.write_text(RELU)
    done = _run(matrix, out)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "is a link where the harness keeps a file of its own; remove it" in done.stderr
    _untouched(outside)


def test_a_logs_folder_planted_as_a_link_is_neither_swept_nor_written(tmp_path, outside):
    out = tmp_path / "results"
    out.mkdir()
    (out / folder.LOGS).symlink_to(outside, target_is_directory=True)
    matrix = tmp_path / "m.yaml"
    matrix.write_text(RELU)
    done = _run(matrix, out)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{out / folder.LOGS}: is a link where the harness keeps a folder of its own" in done.stderr
    _untouched(outside)


@pytest.mark.slow
def test_links_planted_at_scratch_temporary_and_log_names_are_removed_as_links(tmp_path, outside):
    out = tmp_path / "results"
    (out / folder.LOGS).mkdir(parents=True)
    (out / ".tmp-x.json").symlink_to(outside / ".tmp-precious")
    (out / ".cell-x").symlink_to(outside, target_is_directory=True)
    (out / folder.LOGS / "a.log.part").symlink_to(outside / "x.log.part")
    matrix = tmp_path / "m.yaml"
    matrix.write_text(RELU)
    first = _run(matrix, out)
    assert first.returncode == 0, first.stdout + first.stderr
    assert not any(p.is_symlink() for p in out.rglob("*"))
    # the run's own log, planted as a link before a second run writes it: replaced, never written through
    for log in (out / folder.LOGS).glob("*.log"):
        log.unlink()
        log.symlink_to(outside / "precious.txt")
    second = run_cli("run", "--matrix", str(matrix), "--out", str(out), "--fresh")
    assert second.returncode == 0, second.stdout + second.stderr
    _untouched(outside)


def test_the_log_and_the_lock_refuse_a_link_at_the_point_of_use(tmp_path, outside):
    logs = tmp_path / folder.LOGS
    logs.mkdir()
    log = logs / "c.r1.log"
    folder.partial(log).symlink_to(outside / "precious.txt")
    with pytest.raises(InputError, match="is a link"):
        folder.open_log(log)
    fifo = logs / "d.r1.log.part"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="something other than a file"):
        folder.open_log(logs / "d.r1.log")  # would block forever if it opened the FIFO
    log.with_name("e.r1.log").symlink_to(outside / "precious.txt")
    assert folder.log_tail(log.with_name("e.r1.log"), 100) == ""  # a planted link is not read either
    _untouched(outside)


@pytest.mark.slow
def test_a_report_never_sweeps_or_writes_a_measurements_link(tmp_path, outside):
    out = tmp_path / "report"
    out.mkdir()
    (out / "measurements").symlink_to(outside, target_is_directory=True)
    done = run_cli("report", "--results", str(GPU_LOCAL_ROUNDS), "--out", str(out))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "measurements: is a link where the harness keeps a folder of its own" in done.stderr
    _untouched(outside)


@pytest.mark.slow
def test_a_report_into_a_folder_being_written_is_refused_with_a_message(tmp_path):
    out = tmp_path / "report"
    with folder.locked(out):  # what a run or another report holds while it writes
        done = run_cli("report", "--results", str(GPU_LOCAL_ROUNDS), "--out", str(out))
    assert done.returncode == 3, done.stdout + done.stderr
    assert "is being written by pid" in done.stderr and "Traceback" not in done.stderr
    assert not (out / "report.md").exists()
    done = run_cli("report", "--results", str(GPU_LOCAL_ROUNDS), "--out", str(out))
    assert done.returncode in (0, 1) and (out / "report.md").exists(), done.stderr


@pytest.mark.slow
def test_two_reports_into_one_folder_at_once_never_mix_it(tmp_path):
    out = tmp_path / "report"
    command = ("report", "--results", str(GPU_LOCAL_ROUNDS), "--out", str(out))
    procs = [start_cli(*command, stderr=subprocess.PIPE) for _ in range(2)]
    outcomes = [(p.communicate(timeout=600)[1], p.returncode) for p in procs]
    outcomes = [(code, err) for err, code in outcomes]
    for code, err in outcomes:
        assert code in (0, 1, 3) and "Traceback" not in err, err
        if code == 3:
            assert "is being written by" in err
    assert any(code in (0, 1) for code, _ in outcomes)
    assert not [p for p in out.iterdir() if p.name.startswith(".tmp-")]


@pytest.mark.slow
def test_what_a_run_and_a_report_write_follows_the_umask_and_is_never_executable(tmp_path):
    matrix = tmp_path / "m.yaml"
    matrix.write_text(RELU)
    out, report = tmp_path / "results", tmp_path / "report"
    harness = f"{sys.executable} -m harness"
    script = (
        f"umask 027 && {harness} run --matrix {matrix} --out {out} && "
        f"{{ {harness} report --results {out} --out {report}; test $? -le 1; }}"
    )
    done = subprocess.run(["bash", "-c", script], cwd=REPO, env=harness_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    files = [p for p in [*out.rglob("*"), *report.rglob("*")] if p.is_file()]
    assert len(files) > 5
    modes = {str(p.relative_to(tmp_path)): stat.S_IMODE(p.stat().st_mode) for p in files}
    assert not {name: oct(m) for name, m in modes.items() if m & 0o027 or m & 0o111}


def test_an_installed_harness_never_runs_a_suite_copy_as_found(tmp_path, monkeypatch):
    from harness import resources

    monkeypatch.setattr(resources, "_installed", lambda: True)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("HARNESS_CACHE", raising=False)  # the tests' own cache (conftest) would come first
    resources.suite_root.cache_clear()
    root = resources.suite_root()
    main = root / "harness" / "suite" / "__main__.py"
    assert root.parent == tmp_path / "cudnn-harness" and main.is_file()
    original = main.read_bytes()
    for damage in (
        lambda: main.write_text("import os; os.system('touch /tmp/pwned')\n"),  # edited
        lambda: main.unlink(),  # damaged
        lambda: (root / "harness" / "suite" / "sitecustomize.py").write_text("x = 1\n"),  # a file added
        lambda: (root / "harness" / "__init__.py").write_text("import os\n"),
    ):
        damage()
        resources.suite_root.cache_clear()
        assert resources.suite_root() == root
        assert main.read_bytes() == original
        assert not (root / "harness" / "suite" / "sitecustomize.py").exists()
        assert (root / "harness" / "__init__.py").read_bytes() == (
            resources.PACKAGE / "__init__.py"
        ).read_bytes()
    resources.suite_root.cache_clear()


@pytest.mark.slow
def test_the_write_probe_never_follows_a_link_planted_at_its_name(tmp_path, outside):
    out = tmp_path / "report"
    out.mkdir()
    (out / ".harness-write-test").symlink_to(outside / "created")  # dangling: touch() would create it
    done = run_cli("report", "--results", str(GPU_LOCAL_ROUNDS), "--out", str(out))
    assert done.returncode in (0, 1), done.stdout + done.stderr
    _untouched(outside)


def test_the_write_probe_touches_nothing_a_link_names(tmp_path, outside):
    out = tmp_path / "out"
    out.mkdir()
    (out / ".harness-write-test").symlink_to(outside / "precious.txt")
    before = os.stat(outside / "precious.txt").st_mtime_ns
    os.utime(outside / "precious.txt", ns=(before - 10**9, before - 10**9))  # a second in the past
    assert jsonio.output_folder(out, "out") == out
    assert os.stat(outside / "precious.txt").st_mtime_ns == before - 10**9  # touch() would bump it
    assert os.path.islink(out / ".harness-write-test")
    _untouched(outside)


def test_two_commands_probing_one_folder_at_once_never_refuse_it(tmp_path):
    out = tmp_path / "out"
    probe = textwrap.dedent(
        """\
        import sys
        from pathlib import Path
        from harness import jsonio
        from harness.errors import InputError
        refused = 0
        for _ in range(3000):
            try:
                jsonio.output_folder(Path(sys.argv[1]), "out")
            except InputError:
                refused += 1
        print(refused)
        """
    )
    command = [sys.executable, "-c", probe, str(out)]
    procs = [
        subprocess.Popen(command, cwd=REPO, env=harness_env(), stdout=subprocess.PIPE, text=True)
        for _ in "ab"
    ]
    refused = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert refused == ["0", "0"]  # the fixed name raced: each removed the other's probe
    assert list(out.iterdir()) == []


def test_a_folder_planted_at_a_file_name_is_refused_not_a_traceback(tmp_path):
    (tmp_path / "lock").mkdir()
    with pytest.raises(InputError, match="lock: is a folder where the harness keeps a file of its own"):
        jsonio.open_for_writing(tmp_path / "lock", "a+")
    (tmp_path / "report.md").mkdir()
    with pytest.raises(
        InputError, match=r"report\.md: is a folder where the harness keeps a file of its own"
    ):
        jsonio.write_text_atomic(tmp_path / "report.md", "text\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lock", "report.md"]  # no temporary file left


@pytest.mark.slow
@pytest.mark.parametrize("planted", [folder.LOCK_FILE, "report.md"])
def test_a_report_into_a_folder_with_a_folder_planted_at_a_file_name_is_refused(tmp_path, planted):
    out = tmp_path / "report"
    (out / planted).mkdir(parents=True)
    done = run_cli("report", "--results", str(GPU_LOCAL_ROUNDS), "--out", str(out))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stdout + done.stderr
    assert f"{out / planted}: is a folder where the harness keeps a file of its own; remove it" in done.stderr
    assert (out / planted).is_dir()


@pytest.mark.slow
def test_a_run_into_a_folder_with_a_folder_planted_at_its_lock_is_refused(tmp_path):
    out = tmp_path / "results"
    (out / folder.LOCK_FILE).mkdir(parents=True)
    matrix = tmp_path / "m.yaml"
    matrix.write_text(RELU)
    done = _run(matrix, out)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stdout + done.stderr
    assert f"{out / folder.LOCK_FILE}: is a folder where the harness keeps a file of its own" in done.stderr


def test_images_never_writes_its_build_logs_through_a_logs_folder_planted_as_a_link(tmp_path, outside):
    """``images`` keeps its build logs in the results folder's logs/ (or --log-dir): a link planted there is
    refused before the engine is asked for anything."""
    matrix = tmp_path / "m.yaml"
    matrix.write_text(
        "schema_version: 1\nname: imgs\nbackend: docker\n"
        'axes: {torch: ["2.11.0+cu130"], cudnn: [bundled], python: ["3.12"]}\nbaseline: {cudnn: bundled}\n'
    )
    logs = tmp_path / "results" / "imgs" / folder.LOGS
    logs.parent.mkdir(parents=True)
    logs.symlink_to(outside, target_is_directory=True)
    done = run_cli("images", "--matrix", str(matrix), cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "is a link where the harness keeps a folder of its own" in done.stderr, done.stderr
    _untouched(outside)


@pytest.mark.slow
def test_images_creates_nothing_before_the_engine_answers_and_a_log_dir_loop_is_refused(tmp_path):
    matrix = tmp_path / "m.yaml"
    matrix.write_text(
        "schema_version: 1\nname: imgs\nbackend: docker\n"
        'axes: {torch: ["2.11.0+cu130"], cudnn: [bundled], python: ["3.12"]}\nbaseline: {cudnn: bundled}\n'
    )
    no_engine = {**harness_env(), "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    done = run_cli("images", "--matrix", str(matrix), cwd=tmp_path, env=no_engine)
    assert done.returncode == 3, done.stdout + done.stderr
    assert not (tmp_path / "results").exists()
    (tmp_path / "loop").symlink_to("loop")
    # refused where the folder is made (an engine answers) or before, when none does: never a traceback
    done = run_cli("images", "--matrix", str(matrix), "--log-dir", "loop", cwd=tmp_path)
    assert done.returncode in (2, 3) and "Traceback" not in done.stderr, done.stdout + done.stderr
