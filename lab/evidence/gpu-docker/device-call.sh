#!/usr/bin/env bash
# One device call of issue 14's proof, as it ran on the GPU machine (repository root, as root):
#   bash lab/evidence/gpu-docker/device-call.sh STEP SECONDS [RUN OPTIONS...]
# STEP: docker (the docker matrix, resumed where the last call stopped), local (matrix-local.yaml), rerun.
# Carried: .gpu-docker/ (../shared/tools/docker-bundle.sh and gpu-docker-up.sh) and .whl/ (jsonschema and
# the docker SDK, which the machine's Python lacks). Results live in /var/tmp/gpu-docker while the machine
# is held, so a later call resumes into them; each call returns them as a tarball.
set -uo pipefail
step=$1; seconds=${2:-500}
export PYTHONUNBUFFERED=1 PATH=/opt/dk:$PATH
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null
export PYTHONPATH=/tmp/site:$PWD
base=gpu-host-root:ubuntu24.04
res=/var/tmp/gpu-docker
mkdir -p "$res"
if ! python3 -c "import docker, sys; docker.from_env().images.get(sys.argv[1])" "$base" 2>/dev/null; then
  nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader | tee "$res/gpu.txt"
  ls -la /usr/local/nvidia /usr/local/nvidia/lib64 2>&1 | head -20
  /usr/bin/time -f "docker up + import: %e s" bash .gpu-docker/gpu-docker-up.sh .gpu-docker/docker-bin.tar.xz "$base"
fi
case $step in
  docker) timeout -s INT "$seconds" python3 -m harness run --matrix lab/evidence/gpu-docker/matrix.yaml --out "$res/docker" "${@:3}" 2>&1 | tee -a "$res/run-docker.txt" ;;
  local) timeout -s INT "$seconds" python3 -m harness run --matrix lab/evidence/gpu-docker/matrix-local.yaml --out "$res/local" "${@:3}" 2>&1 | tee -a "$res/run-local.txt" ;;
  rerun) first=$(ls "$res"/docker/*bundled*.r1.json.gz | head -1)
         timeout -s INT "$seconds" python3 -m harness rerun "$first" --out "$res/rerun" 2>&1 | tee -a "$res/run-rerun.txt" ;;
esac
echo "exit ${PIPESTATUS[0]}"
tar -C "$res" -czf "$OUT/results.tar.gz" .
