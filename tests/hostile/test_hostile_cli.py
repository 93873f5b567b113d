"""Any command line, built from the harness's own commands and options and from hostile values and paths:
an exit code (0-3, or argparse's 2), never a traceback.

The commands run in-process (``cli.main``) in a scratch folder holding a copy of a real results folder, a
result file, a file, a FIFO, a link to /dev/zero and matrices that are refused. Nothing here can start a
run, a build or a job: every matrix in the pool is refused before that, except under ``plan``.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from harness.cli import main as cli
from tests.conftest import HOSTILE_MATRIX
from tests.evidence import GPU_LOCAL_ROUNDS

pytestmark = pytest.mark.slow  # every test here takes seconds (docs/development.md: the fast tests)

LOCAL = GPU_LOCAL_ROUNDS
SCRATCH = Path(tempfile.mkdtemp(prefix="hostile-cli-"))
atexit.register(shutil.rmtree, SCRATCH, ignore_errors=True)  # made at import, for hypothesis's tests
MATRIX = HOSTILE_MATRIX
REFUSED_MATRICES = {
    "nan.yaml": MATRIX.replace("BUDGET", ".nan"),
    "huge.yaml": MATRIX.replace("BUDGET", "1e999"),
    "cu999.yaml": MATRIX.replace("[installed]", '["2.11.0+cu999"]').replace("local", "docker"),
    "base.yaml": MATRIX.replace("BUDGET", "0.1").replace("disabled]}", "disabled], base_image: [a, b]}"),
    "escape.yaml": MATRIX.replace("name: hostile", "name: ../../escape").replace("BUDGET", "0.1"),
    "keys.yaml": MATRIX.replace("BUDGET", "0.1") + "[a, b]: x\n",
    "text.yaml": "[[[",
    "empty.yaml": "",
}


def _pool() -> list[str]:
    """The paths the sweep draws from, made once."""
    shutil.copytree(LOCAL, SCRATCH / "results", ignore=shutil.ignore_patterns("logs"))
    shutil.copy(next(LOCAL.glob("*bundled*.r1.json.gz")), SCRATCH / "one.json.gz")
    (SCRATCH / "a-file").write_text("not a folder\n")
    os.mkfifo(SCRATCH / "fifo")
    (SCRATCH / "zero").symlink_to("/dev/zero")
    (SCRATCH / "empty").mkdir()
    for name, text in REFUSED_MATRICES.items():
        (SCRATCH / name).write_text(text)
    (SCRATCH / "ok.yaml").write_text(MATRIX.replace("BUDGET", "0.1"))
    paths = ["results", "one.json.gz", "a-file", "a-file/sub", "fifo", "zero", "empty", "missing", "/proc/x"]
    return [*paths, "results/plan.json", *REFUSED_MATRICES]


PATHS = _pool()
VALUES = ["", "nan", "inf", "-inf", "-1", "0", "1e999", "5", "0.5", "0,0", "0,,1", "all", "x", "é", "../.."]
value = st.sampled_from(VALUES) | st.text(max_size=8).filter(lambda t: "\x00" not in t)
path = st.sampled_from(PATHS)
refused_matrix = st.sampled_from([*REFUSED_MATRICES, "missing", "fifo", "zero", "a-file"])


def _options(**choices: st.SearchStrategy[list[str]]) -> st.SearchStrategy[list[str]]:
    """Some of the given options, in any order, each as its argv words."""
    return st.lists(st.sampled_from(sorted(choices)), unique=True, max_size=4).flatmap(
        lambda names: st.tuples(*(choices[n] for n in names)).map(lambda parts: [w for p in parts for w in p])
    )


def _opt(name: str, values: st.SearchStrategy[str]) -> st.SearchStrategy[list[str]]:
    return values.map(lambda v: [name, v])


FLAG = {"--strict": st.just(["--strict"])}
RUN_OPTIONS = {
    "--out": _opt("--out", path),
    "--timeout-s": _opt("--timeout-s", value),
    "--gpus": _opt("--gpus", value),
    "--only": _opt("--only", value),
    "--memory": _opt("--memory", value),
    "--gpu-access": _opt("--gpu-access", value | st.sampled_from(["toolkit", "cdi", "devices"])),
    "--slurm-gpus": _opt("--slurm-gpus", value),
    "--slurm-time": _opt("--slurm-time", value),
    "--wheelhouse": _opt("--wheelhouse", path),
    "--ca-bundle": _opt("--ca-bundle", path),
    "--fresh": st.just(["--fresh"]),
}
COMMANDS = st.one_of(
    st.tuples(st.just(["plan"]), _options(**{"--matrix": _opt("--matrix", path | st.just("ok.yaml"))})),
    st.tuples(st.just(["validate"]), st.lists(path, min_size=1, max_size=3)),
    st.tuples(
        st.just(["report"]),
        _options(
            **{
                "--results": _opt("--results", path),
                "--results ": _opt("--results", path),
                "--out": _opt("--out", path),
                "--matrix": _opt("--matrix", refused_matrix),
                **FLAG,
            }
        ),
    ),
    st.tuples(
        st.lists(path, min_size=2, max_size=2).map(lambda ab: ["compare", *ab]),
        _options(
            **{
                "--only": _opt("--only", value),
                "--alpha": _opt("--alpha", value),
                "--threshold-pct": _opt("--threshold-pct", value),
                "--out": _opt("--out", path),
                **FLAG,
            }
        ),
    ),
    st.tuples(
        st.sampled_from([["run"], ["qualify"]]).flatmap(
            lambda c: refused_matrix.map(lambda m: [*c, "--matrix", m])
        ),
        _options(**RUN_OPTIONS),
    ),
    st.tuples(
        refused_matrix.map(lambda m: ["images", "--matrix", m]),
        _options(**{"--dry-run": st.just(["--dry-run"]), "--log-dir": _opt("--log-dir", path)}),
    ),
    st.tuples(
        st.tuples(path, path, value).map(
            lambda t: ["slurm-task", "--results", t[0], "--tasks", t[1], "--index", t[2]]
        ),
        st.just([]),
    ),
    st.tuples(
        path.map(lambda p: ["rerun", p]),
        _options(
            **{
                "--out": _opt("--out", path),
                "--timeout-s": _opt("--timeout-s", value),
                "--gpus": _opt("--gpus", value),
            }
        ),
    ),
)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(command=COMMANDS)
def test_no_command_line_gets_a_traceback(command):
    argv = [*command[0], *command[1]]
    out, err = io.StringIO(), io.StringIO()
    cwd = Path.cwd()
    os.chdir(SCRATCH)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main(argv)
            except SystemExit as exc:  # argparse: --help, or a value it refused
                code = exc.code
    finally:
        os.chdir(cwd)
    event(f"{argv[0]}: exit {code}")  # pytest --hypothesis-show-statistics shows what the sweep reached
    assert code in (0, 1, 2, 3), (argv, code, err.getvalue())
    if code == 2:
        assert err.getvalue().strip(), argv  # a refusal says why
    assert not (SCRATCH.parent / "escape").exists()
