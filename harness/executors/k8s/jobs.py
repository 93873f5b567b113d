"""One Kubernetes Indexed Job per cell: the cell's image, one completion index per round.

The CLI prints them (a dry run) or hands them to ``k8s_submit``. The manifests carry the same least
privilege as the docker backend's containers (non-root, read-only root filesystem, every capability
dropped, no privilege escalation, only /results and /tmp writable) and one ``nvidia.com/gpu`` per GPU
cell. Pod ``i`` of a Job writes ``<cell>.index<i>.json`` (round ``i + 1``) into the volume claim given;
``k8s_gather`` makes a copy of those files a results folder.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from harness.backends.base import needs_gpu, suite_arguments
from harness.backends.docker import dockerfile
from harness.plan.model import Cell, Plan

RESULTS_CLAIM = "cudnn-harness-results"
CONTAINER_UID = 10001
LABEL = "io.cudnn-harness"


def job_name(cell: Cell) -> str:
    """A DNS-1123 name under 63 characters: cell ids hold '.', '_' and '+', and run longer."""
    digest = hashlib.sha256(cell.id.encode()).hexdigest()[:10]
    return f"cudnn-harness-{digest}"


@dataclass(frozen=True)
class Target:
    """Where the Jobs go: the registry the cell images were pushed to, the namespace, the results volume."""

    registry: str | None = None
    namespace: str = "default"
    results_claim: str = RESULTS_CLAIM
    timeout_s: float = 3600.0  # per pod


def render(
    plan: Plan, cells: tuple[Cell, ...], options: dockerfile.BuildOptions, target: Target
) -> list[dict[str, Any]]:
    jobs = []
    for cell in cells:
        image = dockerfile.render(cell, options, plan.image_python)
        reference = f"{target.registry.rstrip('/')}/{image.reference}" if target.registry else image.reference
        # the kubelet expands $(JOB_COMPLETION_INDEX), which the Job controller sets in each pod;
        # index i is round i + 1: 'harness gather' makes the files a results folder (k8s_gather)
        out = f"/results/{cell.id}.index$(JOB_COMPLETION_INDEX).json"
        # a Quantity, which the API client only takes as a string
        limits = {"nvidia.com/gpu": "1"} if needs_gpu(cell, plan) else {}
        container = {
            "name": "suite",
            "image": reference,
            "args": suite_arguments(cell, plan, out, image.expect_cudnn),
            "resources": {"limits": limits} if limits else {},
            "securityContext": {
                "runAsNonRoot": True,
                "runAsUser": CONTAINER_UID,
                "runAsGroup": CONTAINER_UID,
                "readOnlyRootFilesystem": True,
                "allowPrivilegeEscalation": False,
                "privileged": False,
                "capabilities": {"drop": ["ALL"]},
            },
            "volumeMounts": [
                {"name": "results", "mountPath": "/results"},
                {"name": "tmp", "mountPath": "/tmp"},
            ],
        }
        labels = {f"{LABEL}/matrix": _label_value(plan.name), f"{LABEL}/job": job_name(cell)}
        jobs.append(
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {
                    "name": job_name(cell),
                    "namespace": target.namespace,
                    "labels": labels,
                    "annotations": {f"{LABEL}/cell": cell.id, f"{LABEL}/image": reference},
                },
                "spec": {
                    "completionMode": "Indexed",
                    "completions": plan.rounds,
                    "parallelism": 1,  # a cell's rounds run one after another, each in a pod of its own
                    "backoffLimit": 0,  # a failed round is a result, not something to retry silently
                    "activeDeadlineSeconds": int(target.timeout_s * plan.rounds),
                    "template": {
                        "metadata": {"labels": dict(labels)},  # a copy: YAML would write an anchor
                        "spec": {
                            "restartPolicy": "Never",
                            "automountServiceAccountToken": False,
                            "securityContext": {
                                "runAsNonRoot": True,
                                "seccompProfile": {"type": "RuntimeDefault"},
                            },
                            "containers": [container],
                            "volumes": [
                                {
                                    "name": "results",
                                    "persistentVolumeClaim": {"claimName": target.results_claim},
                                },
                                {"name": "tmp", "emptyDir": {"sizeLimit": "2Gi"}},
                            ],
                        },
                    },
                },
            }
        )
    return jobs


def _label_value(text: str) -> str:
    """Label values: at most 63 characters of [A-Za-z0-9._-], starting and ending alphanumeric."""
    cleaned = "".join(c if c.isalnum() or c in "._-" else "-" for c in text)[:63].strip("._-")
    return cleaned or "matrix"
