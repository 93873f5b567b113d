"""Hostile input, round three (issue 31), class 2: files the harness writes for other programs to execute.

A Slurm batch script (sbatch reads its '#SBATCH' lines, bash runs the rest), a cell's or a reproducer's
Dockerfile (docker's parser, then /bin/sh in each RUN), and repro.py (Python). Every value that reaches
one is either refused, naming the field that holds it and the fix (exit 2, nothing written), or quoted
for the language it lands in. These tests parse or run what was written and see a hostile value arrive as
one inert value.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from harness import schemas
from harness.backends import registry
from harness.backends.docker import dockerfile
from harness.backends.packages import PackageSource
from harness.errors import InputError
from harness.executors.slurm import array
from harness.executors.slurm import request as slurm_request
from harness.plan import matrix
from harness.plan.model import Cell, CudnnSource, Plan
from harness.results import folder
from harness.workflows import repro
from tests.conftest import REPO, harness_env, run_cli

HOSTILE = [
    "x\nRUN rm -rf /",
    "x\n",
    "$(touch pwned)",
    "`touch pwned`",
    "x; touch pwned",
    "x'y",
    'x"y',
    "x\\",
    "x\x00y",
    "x\u2028y",
    "x #y",
    "x y",
]
# a folder name that means something to every language it could land in (Slurm refuses line breaks and
# backslashes in a results folder's path: see test_a_results_folder_slurm_cannot_carry_...)
HOSTILE_NAME = "r $(touch pwned) `touch pwned`; x' y\" #z %A %% é"


def stub(path: Path, body: str) -> Path:
    """An executable Python script at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!{sys.executable}\nimport json, os, sys\n{body}\n")
    path.chmod(0o755)
    return path


def pwned(*roots: Path) -> list[Path]:
    return [p for root in (*roots, REPO) for p in root.rglob("pwned")]


# ---- Slurm batch scripts -----------------------------------------------------------------------------

SLURM_MATRIX = {
    "schema_version": 1,
    "name": "hostile-slurm",
    "backend": "local",
    "axes": {"torch": ["installed"], "cudnn": ["bundled", "disabled"]},
    "suite": {
        "profile": "smoke",
        "device": "cpu",
        "workloads": ["relu"],
        "dtypes": ["fp32"],
        "time_budget_s": 0.05,
        "min_time_s": 0.02,
        "numerics": False,
        "what_ran": False,
    },
    "baseline": {"cudnn": "bundled"},
    "slurm": {"time": "10"},
}


def slurm_matrix(tmp_path: Path, **slurm_block: object) -> Path:
    path = tmp_path / "matrix.yaml"
    document = {**SLURM_MATRIX, "slurm": {"time": "10", **slurm_block}}
    path.write_text(yaml.safe_dump(document, allow_unicode=True))
    return path


@pytest.fixture
def fake_slurm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """sbatch, squeue, scontrol and scancel first on PATH; sbatch keeps its argv and the script it was
    given under the returned folder, and every task then leaves the queue without a result."""
    calls = tmp_path / "sbatch-calls"
    bin_dir = tmp_path / "slurm-bin"
    stub(
        bin_dir / "sbatch",
        f"calls = {str(calls)!r}\nos.makedirs(calls)\n"
        "open(os.path.join(calls, 'argv.json'), 'w').write(json.dumps(sys.argv[1:]))\n"
        "open(os.path.join(calls, 'script.sh'), 'w').write(open(sys.argv[-1]).read())\nprint('4242')",
    )
    stub(bin_dir / "squeue", "pass")
    stub(bin_dir / "scontrol", "print('JobId=4242 JobState=CANCELLED Reason=None ExitCode=0:0')")
    stub(bin_dir / "scancel", "pass")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return calls


def directives(script: str) -> list[str]:
    """The '#SBATCH' lines sbatch reads: those before the script's first command."""
    found = []
    for line in script.split("\n")[1:]:
        if line.strip() and not line.startswith("#"):
            break
        if line.startswith("#SBATCH"):
            found.append(line)
    return found


def assert_plain_directives(script: str) -> None:
    """sbatch splits an '#SBATCH' line at whitespace and reads no quotes: each value must be one plain
    token, and every '#SBATCH' line of the file must be one sbatch reads (none after a command)."""
    read = directives(script)
    assert read and len(read) == script.count("#SBATCH"), script
    for line in read:
        assert re.fullmatch(r"#SBATCH --[a-z-]+(=[A-Za-z0-9_.,:+-]+)?", line), line
    assert subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True).returncode == 0


SLURM_OPTION_CASES = [
    ("--slurm-partition", "gpu\nrm -rf /"),
    ("--slurm-partition", "gpu\n"),
    ("--slurm-partition", "$(touch pwned)"),
    ("--slurm-partition", "gpu part"),
    ("--slurm-partition", "gpu\u2028x"),
    ("--slurm-partition", "gpu#x"),
    ("--slurm-account", "acct\n"),
    ("--slurm-account", "acct;touch pwned"),
    ("--slurm-account", "'acct'"),
    ("--slurm-time", "10\n"),
    ("--slurm-time", "10\nrm -rf /"),
    ("--slurm-time", "10 #"),
]


@pytest.mark.parametrize(("option", "value"), SLURM_OPTION_CASES)
def test_a_slurm_option_that_is_not_one_plain_token_is_refused_before_anything_is_written(
    tmp_path, fake_slurm, option, value
):
    out = tmp_path / "results"
    done = run_cli(
        "run", "--backend", "slurm", "--matrix", str(slurm_matrix(tmp_path)), "--out", str(out), option, value
    )
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    error = done.stderr.strip().split("\n")[-1]  # argparse's usage, then this one line
    assert option in error and repr(value) in error and "Traceback" not in done.stderr, done.stderr
    assert not out.exists() and not fake_slurm.exists() and not pwned(tmp_path)


@pytest.mark.parametrize(
    ("field", "value"),
    [("partition", "gpu\nrm -rf /"), ("account", "acct\n"), ("time", "10\n"), ("partition", "gpu\u2028")],
)
def test_a_matrix_slurm_value_that_is_not_one_plain_token_is_refused(tmp_path, fake_slurm, field, value):
    out = tmp_path / "results"
    done = run_cli(
        "run",
        "--backend",
        "slurm",
        "--matrix",
        str(slurm_matrix(tmp_path, **{field: value})),
        "--out",
        str(out),
    )
    assert done.returncode == 2 and f"slurm.{field}" in done.stderr and "Traceback" not in done.stderr
    assert not out.exists() and not fake_slurm.exists()


def load_slurm_plan(tmp_path: Path) -> Plan:
    return matrix.load(slurm_matrix(tmp_path), ["relu"], registry.cell_problems)


def test_slurm_values_that_bypass_the_matrix_schema_are_refused_by_the_request(tmp_path):
    """plan.json (a results folder is untrusted), a library caller: the request checks every value itself."""
    plan = load_slurm_plan(tmp_path)
    for key, value in [("partition", v) for v in HOSTILE] + [("account", "a\n"), ("time", "10\n")]:
        with pytest.raises(InputError) as caught:
            slurm_request.request(
                dataclasses.replace(plan, slurm={key: value}), None, None, None, None, False
            )
        (problem,) = caught.value.problems
        assert problem.field == f"slurm.{key}" and "\n" not in str(problem), problem
    for asked, setting in [(("gpu\x00", None), "slurm_partition"), ((None, "a\u2028b"), "slurm_account")]:
        with pytest.raises(InputError) as caught:
            slurm_request.request(plan, *asked, None, None, False)
        (problem,) = caught.value.problems  # the caller's setting, which the command line names by its flag
        assert problem.setting == setting and "\n" not in str(caught.value)


def test_plan_json_checks_its_slurm_block_as_the_matrix_does(tmp_path):
    document = load_slurm_plan(tmp_path).to_json()
    assert schemas.problems("plan", document, "plan.json") == []
    for block, field in [
        ({"partition": "gpu\nrm -rf /"}, "slurm.partition"),
        ({"account": "a b"}, "slurm.account"),
        ({"time": "10\n"}, "slurm.time"),
        ({"cpus_per_task": "4; id"}, "slurm.cpus_per_task"),
        ({"script": "rm -rf /"}, "slurm.script"),
    ]:
        found = schemas.problems("plan", {**document, "slurm": block}, "plan.json")
        assert [p.field for p in found] == [field], found


@pytest.mark.slow
def test_a_results_folder_slurm_cannot_carry_is_refused_before_anything_is_written(tmp_path, fake_slurm):
    for name in ("r\nrm -rf ~", "r\\x", "r\u2028x", "r\tx"):
        out = tmp_path / name / "results"
        done = run_cli(
            "run", "--backend", "slurm", "--matrix", str(slurm_matrix(tmp_path)), "--out", str(out)
        )
        assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
        assert "--out" in done.stderr and "Traceback" not in done.stderr
        assert not (tmp_path / name).exists() and not fake_slurm.exists()


def test_the_batch_script_carries_hostile_paths_as_single_arguments(tmp_path, monkeypatch):
    """The script as a task runs it, with this interpreter swapped for a stub that records its argv: the
    results folder, the tasks file, the working folder and the interpreter arrive intact, nothing runs."""
    out = tmp_path / HOSTILE_NAME / "results"
    out.mkdir(parents=True)
    plan = load_slurm_plan(tmp_path)
    request = slurm_request.request(plan, "gpu,debug", "acct-1", "1-00:00:00", 2, False)
    submission = array.Submission(plan, out, registry.Settings("local", 60.0), request, lambda line: None)
    cwd = tmp_path / "cwd\nrm -rf ~ $(touch pwned)'"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    argv_file = tmp_path / "argv.json"
    python = stub(
        tmp_path / "bin\n$(touch pwned) `touch pwned`" / "python",
        f"json.dump([os.getcwd(), *sys.argv[1:]], open({str(argv_file)!r}, 'w'))",
    )
    monkeypatch.setattr(sys, "executable", str(python))
    tasks = out / "slurm" / "tasks-x.json"
    script = submission._script(tasks, 3)
    assert_plain_directives(script)
    assert directives(script)[-4:] == [
        "#SBATCH --time=1-00:00:00",
        "#SBATCH --partition=gpu,debug",
        "#SBATCH --account=acct-1",
        "#SBATCH --gres=gpu:2",
    ]
    done = subprocess.run(
        ["bash", "-c", script],
        env={**os.environ, "SLURM_ARRAY_TASK_ID": "2"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(argv_file.read_text()) == [
        str(cwd),
        "-m",
        "harness",
        "slurm-task",
        "--results",
        str(out.resolve()),
        "--tasks",
        str(tasks.resolve()),
        "--index",
        "2",
    ]
    assert not pwned(tmp_path)


@pytest.mark.slow
def test_a_run_through_sbatch_keeps_a_hostile_results_folder_out_of_its_directives(tmp_path, fake_slurm):
    """The whole path: 'run --backend slurm' into a folder whose name is shell, Python and Slurm syntax;
    sbatch gets the folder on its argv ('%' doubled: Slurm expands %A in --output), the script reads as
    plain directives, and the script, run as a task is, writes its result into that folder."""
    out = tmp_path / HOSTILE_NAME / "results"
    done = run_cli("run", "--backend", "slurm", "--matrix", str(slurm_matrix(tmp_path)), "--out", str(out))
    assert done.returncode == 3, done.stdout[-3000:] + done.stderr[-3000:]  # the stub's tasks left no result
    resolved = str(out.resolve())
    argv = json.loads((fake_slurm / "argv.json").read_text())
    assert f"--output={resolved.replace('%', '%%')}/slurm/logs/%A_%a.out" in argv
    assert f"--comment=harness:{resolved}" in argv
    script = (fake_slurm / "script.sh").read_text()
    assert_plain_directives(script)
    assert "#SBATCH --job-name=harness-hostile-slurm" in script and "%" not in "".join(directives(script))
    (written,) = (out / "slurm").glob("array-*.sh")
    task = subprocess.run(
        ["bash", str(written)],
        env={**harness_env(), "SLURM_ARRAY_TASK_ID": "0"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert task.returncode == 0, task.stdout[-3000:] + task.stderr[-3000:]
    cell = load_slurm_plan(tmp_path).cells[0]
    assert folder.result_path(out, cell.id, 1).is_file()
    assert not pwned(tmp_path)


def test_the_tasks_file_schema_takes_only_an_index_url_a_dockerfile_can_carry():
    base = {"backend": "docker", "timeout_s": 60, "tasks": [{"cell": "c", "round": 1}]}
    assert (
        schemas.problems("slurm-tasks", {**base, "build": {"index_url": "https://x.org/simple"}}, "t") == []
    )
    for url in ("https://x.org/$(reboot)", "https://x.org/simple\n", "https://x.org/`id`", "https://x.org/'"):
        found = schemas.problems("slurm-tasks", {**base, "build": {"index_url": url}}, "t")
        assert [p.field for p in found] == ["build.index_url"], url


# ---- Dockerfiles -------------------------------------------------------------------------------------

CUDA_BASE = "nvidia/cuda:13.0.1-base-ubuntu24.04"
NGC = "nvcr.io/nvidia/pytorch:25.10-py3"
BUNDLED = Cell("2.11.0+cu130", CudnnSource("bundled"), "auto", "3.12")


def instructions(text: str) -> list[str]:
    """The Dockerfile as docker's parser reads it: lines split at '\\n' only, a trailing '\\' continues an
    instruction, comment lines are dropped (inside a continuation too)."""
    assert "\r" not in text
    found, current = [], ""
    for line in text.split("\n"):
        if line.lstrip().startswith("#") or (not current and not line.strip()):
            continue
        current += line
        if current.endswith("\\"):
            current = current[:-1] + " "
            continue
        found.append(current)
        current = ""
    assert not current
    return found


def keywords(text: str) -> list[str]:
    return [line.split(None, 1)[0].upper() for line in instructions(text)]


def dockerfile_cases(suffix: str) -> dict[str, Callable[[], dockerfile.RenderedImage]]:
    """Each value a matrix gives a Dockerfile, ``suffix`` after a valid one: what render makes of it."""
    options = dockerfile.BuildOptions()
    return {
        "torch": lambda: dockerfile.render(
            Cell("2.11.0+cu130" + suffix, CudnnSource("bundled"), CUDA_BASE, "3.12"), options
        ),
        "torch (auto base)": lambda: dockerfile.render(
            Cell("2.11.0+cu130" + suffix, CudnnSource("bundled"), "auto", "3.12"), options
        ),
        "python": lambda: dockerfile.render(
            Cell("2.11.0+cu130", CudnnSource("bundled"), "auto", "3.12" + suffix), options
        ),
        "base_image": lambda: dockerfile.render(
            Cell("2.11.0+cu130", CudnnSource("bundled"), "ubuntu:24.04" + suffix, "3.12"), options
        ),
        "cudnn_version": lambda: dockerfile.render(
            Cell("2.11.0+cu130", CudnnSource("wheel", "9.19.0.56" + suffix), "auto", "3.12"), options
        ),
        "cudnn_version (system)": lambda: dockerfile.render(
            Cell("2.11.0+cu130", CudnnSource("system", "9.14.0.64" + suffix), "auto", "3.12"), options
        ),
        "cudnn_version (torch: image)": lambda: dockerfile.render(
            Cell("image", CudnnSource("wheel", "9.18.1.3" + suffix), NGC), options
        ),
        "base_image (torch: image)": lambda: dockerfile.render(
            Cell("image", CudnnSource("bundled"), NGC + suffix), options
        ),
        "image_python": lambda: dockerfile.render(
            Cell("image", CudnnSource("bundled"), NGC), options, "/usr/bin/python3" + suffix
        ),
        "side": lambda: dockerfile.render(
            BUNDLED, options, final="repro", extra={"side": "baseline" + suffix}
        ),
    }


@pytest.mark.parametrize("suffix", HOSTILE, ids=ascii)
def test_a_dockerfile_value_with_a_line_break_or_shell_text_is_refused_naming_its_field(suffix):
    for case, make in dockerfile_cases(suffix).items():
        with pytest.raises(InputError) as caught:
            make()
        field = case.split(" (")[0]
        assert any(p.field == field for p in caught.value.problems), (case, caught.value.problems)
        assert "\n" not in str(caught.value) and "cannot go into a Dockerfile" in str(caught.value), case


REFUSED_URLS = [
    "https://x.org/simple\n",
    "https://x.org/simple\nRUN rm -rf /",
    "https://x.org/$(reboot)",
    "https://x.org/${HOME}",
    "https://x.org/`id`",
    "https://x.org/a b",
    "https://x.org/'",
    'https://x.org/"',
    "https://x.org/\\",
    "https://x.org/\x00",
    "https://x.org/\u2028",
    "https://x.org/é",
    "ftp://x.org/simple",
    "--index-url=http://evil",
]


@pytest.mark.parametrize("url", REFUSED_URLS, ids=ascii)
def test_an_index_url_a_run_line_cannot_carry_is_refused(url):
    options = dockerfile.BuildOptions(PackageSource(index_url=url))
    for cell in (BUNDLED, Cell("image", CudnnSource("wheel", "9.18.1.3"), NGC)):
        with pytest.raises(InputError, match="is not a plain http") as caught:
            dockerfile.render(cell, options)
        assert caught.value.problems[0].setting == "index_url" and "\n" not in str(caught.value)


# accepted (an index may have a query, a fragment, credentials), and only ever one quoted word in a RUN
ACCEPTED_URLS = [
    "https://bot:t0k3n@x.org/simple?a=1&b=2;touch+pwned",
    "https://x.org/simple#frag",
    "https://x.org/(sub)!*,=;&&/simple",
]


@pytest.mark.parametrize("url", ACCEPTED_URLS)
def test_an_accepted_index_url_reaches_pip_as_one_argument(tmp_path, url):
    """Every 'RUN /opt/venv/bin/pip' of a wheel cell, run by /bin/sh with pip swapped for a stub."""
    cell = Cell("2.11.0+cu130", CudnnSource("wheel", "9.19.0.56"), "auto", "3.12")
    text = dockerfile.render(cell, dockerfile.BuildOptions(PackageSource(index_url=url))).dockerfile
    assert keywords(text) == keywords(dockerfile.render(cell, dockerfile.BuildOptions()).dockerfile)
    record = tmp_path / "pip-argv"
    pip = stub(tmp_path / "pip", f"open({str(record)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')")
    runs = [
        i[len("RUN ") :] for i in instructions(text) if i.startswith("RUN ") and "/opt/venv/bin/pip " in i
    ]
    assert len(runs) == 3  # torch, its companions (one loop), the cuDNN wheel
    for command in runs:
        done = subprocess.run(
            ["sh", "-c", command.replace("/opt/venv/bin/pip", str(pip))],
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
    calls = [json.loads(line) for line in record.read_text().splitlines()]
    assert [c[-1] for c in calls] == [
        "torch==2.11.0+cu130",
        "torchvision",
        "nvidia-ml-py",
        "nvidia-cudnn-cu13==9.19.0.56",
    ]
    assert all(c[-2] == "torch==2.11.0+cu130" for c in calls[1:3])  # torch named beside each companion
    assert all(c[c.index("--index-url") + 1] == url for c in calls)
    assert not pwned(tmp_path)


@pytest.mark.parametrize("url", ACCEPTED_URLS)
def test_an_image_torchs_cudnn_download_gets_the_index_url_as_one_argument(tmp_path, monkeypatch, url):
    """torch: image with {wheel: X}: its RUN line (site of torch, CUDA major, pip download, unpack) run by
    /bin/sh with the image's Python swapped for a stub and the build folder moved into tmp_path."""
    monkeypatch.setattr(dockerfile, "BUILD_DIR", str(tmp_path / "build"))
    record, site = tmp_path / "python-argv", tmp_path / "site"
    python = stub(
        tmp_path / "python3",
        f"open({str(record)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n"
        "if sys.argv[1] == '-c':\n"
        f"    print({str(site)!r} if '__file__' in sys.argv[2] else '13')\n"
        "elif sys.argv[1:3] == ['-m', 'pip']:\n"
        "    folder = sys.argv[sys.argv.index('-d') + 1]\n"
        "    os.makedirs(folder, exist_ok=True)\n"
        "    open(os.path.join(folder, 'nvidia_cudnn_cu13-9.18.1.3-py3-none-any.whl'), 'w').close()",
    )
    cell = Cell("image", CudnnSource("wheel", "9.18.1.3"), NGC)
    text = dockerfile.render(
        cell, dockerfile.BuildOptions(PackageSource(index_url=url)), str(python)
    ).dockerfile
    (command,) = [i[len("RUN ") :] for i in instructions(text) if "pip download" in i]
    done = subprocess.run(["sh", "-c", command], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    (download,) = [
        c for c in map(json.loads, record.read_text().splitlines()) if c[:3] == ["-m", "pip", "download"]
    ]
    assert (
        download[download.index("--index-url") + 1] == url and download[-1] == "nvidia-cudnn-cu13==9.18.1.3"
    )
    assert not pwned(tmp_path)


def test_a_reproducers_dockerfiles_keep_their_instructions_and_run_repro_py(tmp_path):
    for url in ACCEPTED_URLS:
        out = tmp_path / str(ACCEPTED_URLS.index(url))
        (path, *_copied) = repro._write_dockerfile(
            out, BUNDLED, "candidate", dockerfile.BuildOptions(PackageSource(index_url=url))
        )
        text = path.read_text()
        plain = dockerfile.render(
            BUNDLED, dockerfile.BuildOptions(), final="repro", extra={"side": "candidate"}
        )
        assert keywords(text) == keywords(plain.dockerfile)
        (entrypoint,) = [i for i in instructions(text) if i.startswith("ENTRYPOINT ")]
        assert json.loads(entrypoint[len("ENTRYPOINT ") :]) == [
            "/opt/venv/bin/python",
            "/opt/repro/repro.py",
            "--one",
            "--side",
            "candidate",
        ]
    with pytest.raises(InputError, match="plain http"):
        repro._write_dockerfile(
            tmp_path / "bad",
            BUNDLED,
            "baseline",
            dockerfile.BuildOptions(PackageSource(index_url=REFUSED_URLS[1])),
        )
    assert not (tmp_path / "bad").exists()


def test_images_refuses_a_hostile_index_url_on_the_command_line(tmp_path):
    path = tmp_path / "matrix.yaml"
    path.write_text(
        "schema_version: 1\nname: dry\nbackend: docker\n"
        'axes: {torch: ["2.11.0+cu130"], cudnn: [bundled], python: ["3.12"]}\nbaseline: {cudnn: bundled}\n'
    )
    for url in ("https://x.org/$(reboot)", "https://x.org/simple\nRUN id", "https://x.org/`id`"):
        done = run_cli("images", "--dry-run", "--matrix", str(path), "--index-url", url)
        assert done.returncode == 2 and "--index-url" in done.stderr, done.stdout[-2000:] + done.stderr
        assert "FROM" not in done.stdout and "Traceback" not in done.stderr
    done = run_cli("images", "--dry-run", "--matrix", str(path), "--index-url", ACCEPTED_URLS[0])
    assert done.returncode == 0 and shlex.quote(ACCEPTED_URLS[0]) in done.stdout, done.stderr


# ---- repro.py ----------------------------------------------------------------------------------------

TITLE = 'sdpa bf16 """; import os; os.system("touch pwned") #\n\x00\u2028\r\\ \'\'\' ` $(id) """'


def test_repro_py_carries_hostile_values_as_string_constants(tmp_path):
    row = {
        "title": TITLE,
        "workload": "sdpa",
        "sides": {
            "baseline": {"label": " ".join(HOSTILE), "system_lib_dir": " ".join(HOSTILE), "gpu": HOSTILE[2]},
            "candidate": {"label": HOSTILE[0], "system_lib_dir": None, "gpu": HOSTILE[8]},
        },
    }
    sources = {"harness/suite/x.py": "".join(HOSTILE)}
    path = repro._write_script(tmp_path / "repro.py", row, sources)
    text = path.read_bytes().decode()
    assert "\x00" not in text
    tree = ast.parse(text)
    template = ast.parse(repro.SCRIPT.read_text())
    assert [ast.dump(n) for n in tree.body[1:] if not isinstance(n, ast.AnnAssign)] == [
        ast.dump(n) for n in template.body[1:] if not isinstance(n, ast.AnnAssign)
    ]  # the same statements as the template: nothing injected, nothing lost
    docstring = ast.get_docstring(tree, clean=False)
    assert docstring is not None and docstring.startswith("Reproducer: sdpa bf16 ")
    assert "$(id)" in docstring and "touch pwned" in docstring
    assigned = {
        n.target.id: n.value
        for n in tree.body
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
    }
    call = assigned["ROW"]
    assert isinstance(call, ast.Call) and ast.unparse(call.func) == "json.loads"
    (argument,) = call.args
    assert isinstance(argument, ast.Constant) and isinstance(argument.value, str)
    assert json.loads(argument.value) == row
    assert ast.literal_eval(assigned["SOURCES"]) == sources
    namespace: dict = {}
    exec(compile(text.split("\ndef ", 1)[0], "repro.py", "exec"), namespace)
    assert namespace["ROW"] == row and namespace["SOURCES"] == sources
    assert not pwned(tmp_path)
