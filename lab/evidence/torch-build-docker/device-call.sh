#!/usr/bin/env bash
# One device call of issue 40 item 5 (a torch build from a wheelhouse through the docker backend, against the
# same build on the local backend, one H100, one lease), as it ran on the GPU machine (repository root, root):
#   bash lab/evidence/torch-build-docker/device-call.sh STEP [ARGS...]
# STEP:
#   stage CALL     ../torch-axis-h100/device-call.sh's stage: .carryT/t211/call-NN's wp/ (whole wheels, joined and
#                  sha256-checked) and wd/ (wheels as deltas against the machine's installed torch 2.11.0 stack:
#                  PyPI's torch 2.11.0 is the very cu130 build installed there, so only its dist-info travels)
#                  into the wheelhouse /var/tmp/wheelhouse: 33 wheels, torch 2.11.0 and all it pins, torchvision
#                  0.26.0, nvidia-ml-py
#   cudart132 WHL  does CUDA 13.2's runtime (torch 2.15.0 pins 13.2.2) start on this driver? ctypes on the
#                  nvidia-cuda-runtime 13.2 wheel's libcudart: versions, device count, a malloc and a copy
#   up             start the Docker engine (.gpu-docker/: ../../../../shared/tools/docker-bundle.sh's bundle and
#                  gpu-docker-up.sh) and import the machine's root filesystem as gpu-host-root:ubuntu24.04
#   docker SECONDS harness run matrix-docker.yaml (image built from the wheelhouse) into /var/tmp/tbd/docker
#   local SECONDS  harness run matrix-local.yaml (environment made with uv from the wheelhouse) into .../local
# Carried: .carryT/tools and one call folder for stage; .gpu-docker/ for up; .whl/ and .whl2/ (the docker SDK
# and its needs) for docker and local. Each run call returns /var/tmp/tbd as a tarball.
set -uo pipefail
step=$1
here=lab/evidence/torch-build-docker
export PYTHONUNBUFFERED=1 HARNESS_CACHE=/var/tmp/harness-cache PATH=/opt/dk:$PATH
res=/var/tmp/tbd
mkdir -p "$res"
site() {
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl .whl2/*.whl >/dev/null
  export PYTHONPATH=/tmp/site:$PWD
}
case $step in
  stage) bash lab/evidence/torch-axis-h100/device-call.sh stage "$2" ;;
  cudart132)
    mkdir -p /var/tmp/cr && python3 -m zipfile -e "$2" /var/tmp/cr
    python3 - /var/tmp/cr <<'PY'
import ctypes, glob, sys
lib = ctypes.CDLL(sorted(glob.glob(sys.argv[1] + "/nvidia/cu*/lib/libcudart.so*"))[0])
def call(name, *args):
    code = getattr(lib, name)(*args)
    print(f"{name}: {code}" + (f" ({lib.cudaGetErrorString.__call__(code)})" if code else ""))
    return code
lib.cudaGetErrorString.restype = ctypes.c_char_p
runtime, driver, count, ptr = ctypes.c_int(), ctypes.c_int(), ctypes.c_int(), ctypes.c_void_p()
call("cudaRuntimeGetVersion", ctypes.byref(runtime)); call("cudaDriverGetVersion", ctypes.byref(driver))
print("runtime", runtime.value, "driver", driver.value)
call("cudaGetDeviceCount", ctypes.byref(count)); print("devices", count.value)
if call("cudaMalloc", ctypes.byref(ptr), ctypes.c_size_t(1 << 20)) == 0:
    host = (ctypes.c_ubyte * (1 << 20))(*([7] * (1 << 20)))
    back = (ctypes.c_ubyte * (1 << 20))()
    call("cudaMemcpy", ptr, host, ctypes.c_size_t(1 << 20), 1)
    call("cudaMemcpy", back, ptr, ctypes.c_size_t(1 << 20), 2)
    print("round trip ok:", bytes(back) == bytes(host))
    call("cudaFree", ptr)
PY
    ;;
  up)
    site
    nvidia-smi --query-gpu=index,name,uuid,driver_version,power.limit --format=csv,noheader | tee "$res/gpu.txt"
    /usr/bin/time -f "docker up + import: %e s" bash .gpu-docker/gpu-docker-up.sh .gpu-docker/docker-bin.tar.xz gpu-host-root:ubuntu24.04 ;;
  docker|local)
    site
    timeout -s INT "${2:-540}" python3 -m harness run --matrix "$here/matrix-$step.yaml" --wheelhouse /var/tmp/wheelhouse \
      --out "$res/$step" 2>&1 | tee -a "$res/run-$step.txt"
    echo "exit ${PIPESTATUS[0]}"
    tar -C "$res" -czf "$OUT/tbd.tar.gz" . ;;
esac
df -h /var/tmp | tail -1
