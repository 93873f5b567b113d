"""``run --backend k8s --dry-run``: one Indexed Job per cell, checked against the Kubernetes schema."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import kubernetes_validate
import pytest
import yaml

from harness.results import documents
from tests.conftest import harness_env, run_cli

MATRIX = """
schema_version: 1
name: release-qual
backend: docker
axes:
  torch: ["2.11.0+cu130", "2.13.0+cpu"]
  cudnn: [bundled]
  python: ["3.12"]
suite: {profile: default, device: auto}
rounds: 3
baseline: {torch: "2.11.0+cu130"}
"""
K8S_VERSION = "1.31"


@pytest.fixture(scope="module")
def jobs(tmp_path_factory) -> list[dict]:
    path = tmp_path_factory.mktemp("k8s") / "matrix.yaml"
    path.write_text(MATRIX)
    done = run_cli(
        "run", "--matrix", str(path), "--backend", "k8s", "--dry-run", "--k8s-registry", "reg.example/ml"
    )
    assert done.returncode == 0, done.stderr
    assert "2 Indexed Jobs, 3 completions each" in done.stderr
    return list(yaml.safe_load_all(done.stdout))


def test_every_job_is_valid_against_the_kubernetes_schema(jobs):
    assert len(jobs) == 2
    for job in jobs:
        kubernetes_validate.validate(job, K8S_VERSION, strict=True)
        assert re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", job["metadata"]["name"])


def test_the_validation_is_real_a_broken_job_is_refused(jobs):
    broken = yaml.safe_load(yaml.safe_dump(jobs[0]))
    broken["spec"]["completions"] = "three"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSION, strict=True)
    broken = yaml.safe_load(yaml.safe_dump(jobs[0]))
    broken["spec"]["template"]["spec"]["containers"][0]["gpus"] = 1  # no such field
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSION, strict=True)


def test_one_completion_per_round_one_gpu_per_gpu_cell_and_least_privilege(jobs):
    by_cell = {job["metadata"]["annotations"]["io.cudnn-harness/cell"]: job for job in jobs}
    for cell, job in by_cell.items():
        spec = job["spec"]
        assert spec["completionMode"] == "Indexed" and spec["completions"] == 3 and spec["backoffLimit"] == 0
        pod = spec["template"]["spec"]
        (container,) = pod["containers"]
        assert container["image"].startswith("reg.example/ml/cudnn-harness-cell:" + cell)
        limits = container["resources"].get("limits", {})
        assert limits == ({} if "+cpu" in cell or "-cpu_" in cell else {"nvidia.com/gpu": "1"})
        security = container["securityContext"]
        assert security["runAsNonRoot"] and security["readOnlyRootFilesystem"]
        assert security["capabilities"] == {"drop": ["ALL"]} and security["allowPrivilegeEscalation"] is False
        assert pod["automountServiceAccountToken"] is False and pod["restartPolicy"] == "Never"
        out = container["args"][container["args"].index("--out") + 1]
        assert out == f"/results/{cell}.index$(JOB_COMPLETION_INDEX).json"
        assert {m["mountPath"] for m in container["volumeMounts"]} == {"/results", "/tmp"}


def test_submission_needs_a_configured_cluster_and_says_what_to_do(tmp_path, monkeypatch):
    path = tmp_path / "matrix.yaml"
    path.write_text(MATRIX)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-such-kubeconfig"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    done = run_cli("run", "--matrix", str(path), "--backend", "k8s")
    assert done.returncode == 3 and "no Kubernetes cluster is configured" in done.stderr, done.stderr
    assert "--dry-run" in done.stderr
    done = run_cli("run", "--matrix", str(path), "--dry-run")
    assert done.returncode == 2 and "only --backend k8s has a dry run" in done.stderr


def test_submission_to_an_unreachable_cluster_fails_clearly(tmp_path, monkeypatch):
    # the official client, configured from a real kubeconfig, against an API server that is not there
    path = tmp_path / "matrix.yaml"
    path.write_text(MATRIX)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "gone",
                "clusters": [
                    {
                        "name": "gone",
                        "cluster": {"server": "https://127.0.0.1:1", "insecure-skip-tls-verify": True},
                    }
                ],
                "users": [{"name": "me", "user": {"token": "x"}}],
                "contexts": [{"name": "gone", "context": {"cluster": "gone", "user": "me"}}],
            }
        )
    )
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    done = run_cli(
        "run", "--matrix", str(path), "--backend", "k8s", "--k8s-registry", "reg.example/ml", timeout=120
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert "cannot reach the Kubernetes cluster at https://127.0.0.1:1" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_what_the_pods_write_is_gathered_into_a_results_folder_that_report_reads(tmp_path):
    # each pod runs its Job's container args; here the same args run the suite directly, with the
    # results volume a folder and the completion index filled in as the kubelet would
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(
        """
schema_version: 1
name: pods
backend: docker
axes: {torch: ["2.13.0+cpu"], cudnn: [bundled, disabled], python: ["3.11"]}
suite: {workloads: [relu], dtypes: [fp32], time_budget_s: 0.02, numerics: false, device: cpu}
rounds: 3
baseline: {cudnn: bundled}
"""
    )
    done = run_cli("run", "--matrix", str(matrix), "--backend", "k8s", "--dry-run")
    assert done.returncode == 0, done.stderr
    volume = tmp_path / "volume"
    volume.mkdir()
    for job in yaml.safe_load_all(done.stdout):
        (container,) = job["spec"]["template"]["spec"]["containers"]
        for index in (0, 1):  # two of the three completions have run
            args = [
                a.replace("/results", str(volume)).replace("$(JOB_COMPLETION_INDEX)", str(index))
                for a in container["args"]
            ]
            ran = subprocess.run(
                [sys.executable, "-m", "harness.suite", *args],
                env=harness_env(),
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert ran.returncode == 0, ran.stderr[-2000:]
    pod_files = sorted(p.name for p in volume.iterdir())
    assert len(pod_files) == 4 and all(re.fullmatch(r".+\.index[01]\.json", n) for n in pod_files)
    bundled = next(n.split(".index")[0] for n in pod_files if "bundled" in n)
    (volume / f"{bundled}.index2.json").write_text("{not json")  # a pod killed mid-write
    (volume / "other-cell.index0.json").write_text("{}")
    (volume / f"{bundled}.index7.json").write_text("{}")
    (volume / "notes.txt").write_text("x")
    disabled = next(n.split(".index")[0] for n in pod_files if "disabled" in n)
    # a pod's result under another cell's name: never relabelled as that cell's
    (volume / f"{disabled}.index2.json").write_bytes((volume / f"{bundled}.index0.json").read_bytes())
    before = {p.name: p.read_bytes() for p in volume.iterdir()}

    out = tmp_path / "results"
    gathered = run_cli("gather", "--matrix", str(matrix), "--from", str(volume), "--out", str(out))
    assert gathered.returncode == 2, gathered.stdout + gathered.stderr  # some files were refused
    assert "gathered 4 results" in gathered.stdout and "refused 5" in gathered.stdout
    for name, why in (
        (f"{bundled}.index2.json", "cannot be read as JSON"),
        ("other-cell.index0.json", "is not in the plan"),
        (f"{bundled}.index7.json", "beyond the plan's 3 rounds"),
        ("notes.txt", "not a pod's result"),
        (f"{disabled}.index2.json", f"it names another cell than {disabled}"),
    ):
        assert f"{volume / name}: {why}" in gathered.stderr or (
            name in gathered.stderr and why in gathered.stderr
        )
    assert {p.name: p.read_bytes() for p in volume.iterdir()} == before  # the copy is left as it was
    kept = sorted(p.name for p in out.glob("*.json.gz"))
    assert kept == sorted(
        n.replace(".index0.json", ".r1.json.gz").replace(".index1.json", ".r2.json.gz") for n in pod_files
    )
    for path in out.glob("*.json.gz"):
        doc, problems = documents.check(path)
        assert problems == [] and doc["run"]["backend"] == "k8s" and doc["run"]["k8s"]["job"]

    reported = run_cli("report", "--results", str(out), "--out", str(tmp_path / "report"))
    assert reported.returncode in (0, 3), reported.stdout + reported.stderr  # one round of three is missing
    verdict = json.loads((tmp_path / "report" / "verdict.json").read_text())
    assert all(g["rounds_ok"] == 2 for g in verdict["groups"])
    assert [c["workload"] for c in verdict["comparisons"]] == ["relu"]
