"""The command line as a person meets it: help, version, mistakes."""

from __future__ import annotations

import os
import pty
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from harness import __version__
from harness.cli import parser as arguments
from harness.suite import SUITE_VERSION
from tests.conftest import REPO, cli_in_process, harness_env, run_cli, start_cli


def test_help_lists_the_commands_people_use_and_the_exit_codes():
    done = run_cli("--help")
    assert done.returncode == 0
    assert "SUPPRESS" not in done.stdout and "slurm-task" not in done.stdout
    for command in ("init", "plan", "run", "report", "compare", "repro", "qualify"):
        assert f"\n    {command} " in done.stdout
    assert "exit codes:" in done.stdout and "3    an infrastructure failure" in done.stdout


@pytest.mark.slow
def test_every_option_says_what_it_does_and_run_groups_them_by_backend():
    for command in ("run", "qualify", "report", "compare", "repro", "images", "rerun", "plan"):
        text = run_cli(command, "--help").stdout
        options = [line.split()[0] for line in text.splitlines() if line.startswith("  --")]
        assert options, command
        described = text.split("options:")[1]
        for option in options:
            line = described.split(option, 1)[1].split("\n  -")[0]
            assert len(line.split()) > 1, f"{command} {option} has no help"
    text = run_cli("run", "--help").stdout
    for group in (
        "local backend:",
        "docker backend:",
        "slurm (--backend slurm):",
        "kubernetes (--backend k8s):",
    ):
        assert group in text
    # compare judges as A's plan says, else by the defaults: its help names both
    shown = " ".join(run_cli("compare", "--help").stdout.split())
    assert "default: A's plan's, else B's, 0.002 where neither has one" in shown
    assert "default: the thresholds of A's plan.json, per workload too" in shown


def test_qualify_help_names_the_cluster_options_in_one_group_and_still_takes_them(tmp_path, write_matrix):
    # issue 41 item 10: qualify's --help was crowded with Slurm and Kubernetes settings
    text = run_cli("qualify", "--help").stdout
    cluster = text.split("cluster backends:")[1].split("\n\n")[0]
    for option in ("--slurm-partition", "--slurm-gpus"):
        assert option in cluster and f"[{option}" not in text  # named once, not in the usage line
    assert "--dry-run" not in text and "--k8s-" not in text  # qualify refuses k8s: 'run' submits Jobs
    assert "slurm (--backend slurm):" not in text and "kubernetes (--backend k8s):" not in text
    done = cli_in_process("qualify", "--matrix", str(tmp_path / "none.yaml"), "--slurm-time", "30")
    assert (
        "unrecognized arguments" not in done.stderr and done.returncode == 2
    )  # taken; the matrix is missing


HEAVY = ("scipy", "pandas", "matplotlib", "docker", "jsonschema", "rich", "torch", "numpy")
COMMANDS = ("init", "plan", "validate", "run", "images", "rerun", "gather", "report", "compare", "repro")
COMMANDS += ("qualify", "bisect", "history", "site")


def test_help_and_every_commands_help_load_no_heavy_library():
    # the parser is built and every help printed in one fresh interpreter; then what did it import?
    script = f"""
import contextlib, io, sys
from harness.cli import main as cli
for command in [[], *([c] for c in {COMMANDS!r})]:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        cli.main([*command, "--help"])
print(sorted({{m.split(".")[0] for m in sys.modules}} & set({HEAVY!r})))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], env=harness_env(), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", f"--help imports {done.stdout.strip()}"


def test_python_m_harness_help_imports_no_scipy_pandas_or_matplotlib():
    done = run_cli("report", "--help", env={**harness_env(), "PYTHONPROFILEIMPORTTIME": "1"}, timeout=120)
    assert done.returncode == 0 and "usage:" in done.stdout, done.stderr[-2000:]
    imported = {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.splitlines()}
    assert not imported & {"scipy", "pandas", "matplotlib"}, imported & set(HEAVY)


def test_the_installed_command_calls_itself_harness_and_python_m_says_python_m():
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"harness": "harness.cli.main:main"}
    # what the installed script runs: the entry point, with the command line's arguments
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from harness.cli.main import main; sys.exit(main())", "--help"],
        env=harness_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout.startswith("usage: harness [-h]"), done.stdout[:200]
    assert run_cli("report", "--help").stdout.startswith("usage: python -m harness report ")
    installed = Path(sys.executable).with_name("harness")  # where the test environment installed it
    # an install made from an older checkout names the entry point it had: pip install -e . renews it
    if installed.exists() and "from harness.cli.main import main" in installed.read_text():
        done = subprocess.run(
            [str(installed), "compare", "--help"], env=harness_env(), capture_output=True, text=True
        )
        assert done.stdout.startswith("usage: harness compare "), done.stdout[:200]
        assert "example: harness compare " in done.stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_says_what_it_does_in_one_line_and_shows_an_example_that_parses(command):
    text = run_cli(command, "--help").stdout
    paragraphs = text.split("\n\n")
    usage = next(i for i, p in enumerate(paragraphs) if p.startswith("usage: "))
    description = paragraphs[usage + 1]
    assert "\n" not in description and not description.startswith(("options:", "positional")), text
    assert len(description) <= 110, description  # one line on a terminal
    examples = [line for line in text.splitlines() if line.startswith("example: ")]
    assert len(examples) == 1, text
    example = examples[0].removeprefix("example: ")
    assert example.startswith(f"python -m harness {command}"), example
    # the example is a command line the parser takes (nothing runs: parsing only)
    args = arguments.parser("", "python -m harness").parse_args(
        shlex.split(example.removeprefix("python -m harness"))
    )
    assert args.command == command


@pytest.mark.slow
def test_the_version_names_the_suite_and_schemas():
    done = run_cli("--version")
    assert (
        done.stdout.strip()
        == f"harness {__version__}, suite {SUITE_VERSION}, result schema 1, verdict schema 1"
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("qualfy",), "did you mean 'qualify'?"),
        (("run", "--gpu", "0"), "unrecognized arguments: --gpu 0"),  # no abbreviation: --gpu is not --gpus
        (("report", "--res", "x"), "unrecognized arguments: --res x"),
    ],
)
def test_a_mistyped_command_or_an_abbreviated_option_is_refused_before_anything_runs(args, says):
    done = cli_in_process(*args)
    assert done.returncode == 2 and says in done.stderr, done.stderr
    assert "running" not in done.stdout


def test_gpu_ids_for_a_gpu_suite_must_be_this_hosts_gpus(tmp_path, write_matrix):
    # device auto: refused before anything runs, where nvidia-smi lists no GPU 99 (or no GPU at all)
    path = write_matrix("""
schema_version: 1
name: gpus
axes: {torch: [installed], cudnn: [bundled]}
suite: {workloads: [relu], dtypes: [fp32], time_budget_s: 0.02}
baseline: {cudnn: bundled}
""")
    done = run_cli("run", "--matrix", str(path), "--out", str(tmp_path / "r"), "--gpus", "99")
    assert done.returncode == 2 and "--gpus: 99" in done.stderr, done.stderr
    assert ("nvidia-smi" in done.stderr or "not a GPU of this host" in done.stderr) and not (
        tmp_path / "r"
    ).exists()


SMOKE = """
schema_version: 1
name: loud
axes: {torch: [installed], cudnn: [bundled]}
suite: {workloads: [relu], dtypes: [fp32], time_budget_s: 0.02, numerics: false, what_ran: false}
rounds: 2
baseline: {cudnn: bundled}
"""


@pytest.mark.slow
def test_progress_lines_carry_their_time_and_verbosity_chooses_how_many(tmp_path, write_matrix):
    path = write_matrix(SMOKE)
    normal = run_cli("run", "--matrix", str(path), "--out", str(tmp_path / "a"))
    assert normal.returncode == 0, normal.stderr
    lines = normal.stdout.splitlines()
    assert lines and all(re.match(r"\[\d\d:\d\d:\d\d\] ", line) for line in lines), lines
    assert any("round 2: ok" in line for line in lines) and not any("median" in line for line in lines)
    verbose = run_cli("run", "--matrix", str(path), "--out", str(tmp_path / "b"), "-v")
    assert any("relu fp32" in line and "median" in line for line in verbose.stdout.splitlines())
    quiet = run_cli("run", "--matrix", str(path), "--out", str(tmp_path / "c"), "--quiet")
    assert quiet.returncode == 0 and quiet.stdout == ""
    assert len(list((tmp_path / "c").glob("*.json.gz"))) == 2  # quiet, not idle


@pytest.mark.slow
def test_a_terminal_gets_a_live_bar_of_the_runs_with_elapsed_time_and_time_left(tmp_path, write_matrix):
    path = write_matrix(SMOKE)
    main, replica = pty.openpty()
    proc = start_cli(
        "run",
        "--matrix",
        str(path),
        "--out",
        str(tmp_path / "r"),
        env={**harness_env(), "COLUMNS": "120", "TERM": "xterm"},
        stdout=replica,
        stderr=replica,
    )
    os.close(replica)
    seen = b""
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:  # the other end closed: the run is over
            break
        if not chunk:
            break
        seen += chunk
    assert proc.wait(timeout=600) == 0
    text = seen.decode(errors="replace")
    assert "runs" in text and "0/2" in text and "left" in text and "0:00:0" in text, text[-2000:]
    assert "round 2: ok" in text and not re.search(
        r"\[\d\d:\d\d:\d\d\] running", text
    )  # a terminal: no times
