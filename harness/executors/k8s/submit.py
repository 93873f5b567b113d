"""Submit the rendered Indexed Jobs (``k8s_jobs``) through the official Kubernetes client and follow them.

Only where a cluster is configured (a kubeconfig, or running inside a pod). Each cell's Job writes its
results to the claim the Jobs mount; a copy of that claim (``kubectl cp``, or the claim mounted) becomes
a results folder through ``k8s_gather``, which ``report`` reads like any run's.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from harness.errors import BackendUnavailable

POLL_S = 5.0


def _client() -> Any:
    try:
        from kubernetes import client, config
    except ImportError:
        raise BackendUnavailable(
            "submitting to Kubernetes needs the official client: pip install kubernetes; or print the Jobs "
            "with a dry run",
            setting="dry_run",
        ) from None
    try:
        if os.environ.get("KUBERNETES_SERVICE_HOST"):
            config.load_incluster_config()
        else:
            config.load_kube_config()
    except (config.ConfigException, OSError, TypeError) as exc:
        raise BackendUnavailable(
            f"no Kubernetes cluster is configured here ({exc}); set KUBECONFIG, or print the Jobs with a dry "
            "run",
            setting="dry_run",
        ) from None
    return client


def submit(jobs: list[dict[str, Any]], namespace: str, say: Callable[[str], None]) -> bool:
    """Create every Job, then follow them until each has succeeded or failed; whether all succeeded."""
    client = _client()
    from kubernetes.client.rest import ApiException
    from urllib3.exceptions import HTTPError

    api = client.BatchV1Api()
    host = api.api_client.configuration.host
    try:
        for job in jobs:
            name = job["metadata"]["name"]
            try:
                api.create_namespaced_job(namespace, job)
                say(f"created Job {namespace}/{name} ({job['spec']['completions']} completions)")
            except ApiException as exc:
                if exc.status != 409:
                    raise BackendUnavailable(
                        f"the cluster at {host} refused Job {name}: {exc.status} {exc.reason}: "
                        f"{(exc.body or '')[:500]}"
                    ) from None
                say(f"Job {namespace}/{name} already exists; following it (delete it to run again)")
        return _follow(api, [j["metadata"]["name"] for j in jobs], namespace, say)
    except HTTPError as exc:
        raise BackendUnavailable(f"cannot reach the Kubernetes cluster at {host}: {exc}") from None


def _follow(api: Any, names: list[str], namespace: str, say: Callable[[str], None]) -> bool:
    last: dict[str, tuple[int, int, int]] = {}
    finished: dict[str, bool] = {}
    while len(finished) < len(names):
        for name in names:
            if name in finished:
                continue
            status = api.read_namespaced_job_status(name, namespace).status
            counts = (status.active or 0, status.succeeded or 0, status.failed or 0)
            if last.get(name) != counts:
                last[name] = counts
                say(f"Job {name}: {counts[0]} running, {counts[1]} succeeded, {counts[2]} failed")
            for condition in status.conditions or []:
                if condition.status == "True" and condition.type in ("Complete", "Failed"):
                    finished[name] = condition.type == "Complete"
                    if condition.type == "Failed":
                        say(f"Job {name} FAILED: {condition.reason}: {condition.message}")
        if len(finished) < len(names):
            time.sleep(POLL_S)
    return all(finished.values())
