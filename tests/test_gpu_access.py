"""GPU access modes as the container settings they become (the engine's side is in test_docker_backend)."""

from __future__ import annotations

import pytest

from harness.backends.docker import gpu_access


def test_toolkit_and_cdi_ask_the_engine_for_exactly_the_given_gpus():
    (request,) = gpu_access.attach("toolkit", ("0", "1")).device_requests
    assert request["DeviceIDs"] == ["0", "1"] and request["Capabilities"] == [["gpu"]]
    (every,) = gpu_access.attach("toolkit", ()).device_requests
    assert every["Count"] == -1
    cdi = gpu_access.attach("cdi", ("GPU-1234",))
    assert cdi.device_requests[0]["Driver"] == "cdi" and cdi.record["cdi_devices"] == [
        "nvidia.com/gpu=GPU-1234"
    ]
    assert gpu_access.attach("cdi", ()).record["cdi_devices"] == ["nvidia.com/gpu=all"]


def test_devices_mode_mounts_a_driver_folder_read_only_or_only_the_driver_files_of_a_shared_one(tmp_path):
    own = tmp_path / "nvidia"
    (own / "lib64").mkdir(parents=True)
    (own / "lib64" / "libcuda.so.1").write_text("")
    source, volumes = gpu_access._driver_mounts(str(own))
    assert source == str(own) and volumes == {str(own): {"bind": "/usr/local/nvidia", "mode": "ro"}}
    with pytest.raises(gpu_access.GpuAccessError, match=r"holds no libcuda\.so\.1"):
        gpu_access._driver_mounts(str(tmp_path))


def test_devices_mode_refuses_uuids_and_says_what_a_host_without_the_driver_lacks(tmp_path):
    with pytest.raises(gpu_access.GpuAccessError, match="takes GPU indexes"):
        gpu_access.attach("devices", ("GPU-1234",))
    if not (tmp_path / "..").exists() or __import__("os").path.exists("/dev/nvidiactl"):
        pytest.skip("this host has the NVIDIA driver")
    with pytest.raises(
        gpu_access.GpuAccessError, match=r"/dev/nvidia0, /dev/nvidiactl, /dev/nvidia-uvm missing"
    ):
        gpu_access.attach("devices", ("0",))


@pytest.mark.parametrize(
    ("mode", "engine_says", "we_say"),
    [
        (
            "toolkit",
            'could not select device driver "" with capabilities: [[gpu]]',
            "NVIDIA Container Toolkit",
        ),
        ("cdi", 'could not select device driver "cdi" with capabilities: []', "nvidia-ctk cdi generate"),
        ("cdi", "unresolvable CDI devices nvidia.com/gpu=0", "Docker 25 or newer"),
        ("toolkit", "no such image", None),
    ],
)
def test_engine_refusals_become_what_to_install(mode, engine_says, we_say):
    explained = gpu_access.explain_engine_error(mode, engine_says)
    assert (explained is None) if we_say is None else (we_say in explained and engine_says in explained)
