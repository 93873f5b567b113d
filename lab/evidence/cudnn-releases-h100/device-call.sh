#!/usr/bin/env bash
# One device call of the cuDNN release sweep, as it ran on the GPU machine (repository root, as root):
#   bash lab/evidence/cudnn-releases-h100/device-call.sh STEP SECONDS [OPTIONS...]
# STEP:
#   stage     rebuild the cuDNN releases whose delta files this call carried (OPTIONS: the batch folders, made here
#             by ../shared/tools/cudnn-deltas.sh) into /var/tmp/cudnn with cudnn-rebuild.sh (carried in
#             .dev/, a copy of ../shared/tools/cudnn-rebuild.sh), each file checked against PyPI's sha256
#   wheels    zip every rebuilt release into the wheelhouse /var/tmp/wheelhouse (stored, not compressed)
#   sweep     qualify matrix.yaml on the local backend, {wheel: X} cells from that wheelhouse (first lease)
#   upper     qualify matrix-upper.yaml the same way (second lease)
#   bisect    harness bisect OPTIONS (e.g. --row sdpa:bf16 --good 9.12.0.46 --bad 9.19.0 ...)
#   docker-up start the carried Docker engine, import the host's root filesystem as gpu-host-root:ubuntu24.04
#   docker    qualify docker-matrix.yaml (the docker backend, the same wheelhouse)
# Carried: .whl/ (jsonschema and the docker SDK, which the machine's Python lacks), .lease/X/NN (the deltas),
# .dev/ (the rebuild script), .gpu-docker/ (../shared/tools/docker-bundle.sh and gpu-docker-up.sh) for docker.
# Everything lives in /var/tmp while the machine is held; each call returns the results as a tarball.
set -uo pipefail
step=$1; seconds=${2:-500}
here=lab/evidence/cudnn-releases-h100
export PYTHONUNBUFFERED=1 PATH=/opt/dk:$PATH HARNESS_CACHE=/var/tmp/harness-cache
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null
export PYTHONPATH=/tmp/site:$PWD
res=/var/tmp/sweep
mkdir -p "$res"
case $step in
  stage)
    for batch in "${@:3}"; do
      /usr/bin/time -f "rebuild $batch: %e s" bash .dev/cudnn-rebuild.sh "$batch" /var/tmp/cudnn
    done ;;
  smoke)  # one wheel cell and the bundled one, two rows, one round: the path works before the sweep runs
    python3 -m harness run --matrix .dev/smoke.yaml --wheelhouse /var/tmp/wheelhouse --out "$res/smoke" 2>&1 |
      tee -a "$res/smoke-output.txt" ;;
  wheels)
    /usr/bin/time -f "wheelhouse: %e s" python3 "$here/wheelhouse.py" /var/tmp/cudnn /var/tmp/wheelhouse ;;
  sweep)
    nvidia-smi --query-gpu=name,uuid,driver_version,power.limit --format=csv,noheader | tee -a "$res/gpu.txt"
    timeout -s INT "$seconds" python3 -m harness qualify --matrix "$here/matrix.yaml" \
      --wheelhouse /var/tmp/wheelhouse --out "$res/results" --report-out "$res/report" "${@:3}" 2>&1 |
      tee -a "$res/qualify-output.txt" ;;
  upper)
    timeout -s INT "$seconds" python3 -m harness qualify --matrix "$here/matrix-upper.yaml" \
      --wheelhouse /var/tmp/wheelhouse --out "$res/upper" --report-out "$res/upper-report" "${@:3}" 2>&1 |
      tee -a "$res/upper-output.txt" ;;
  bisect)
    timeout -s INT "$seconds" python3 -m harness bisect --matrix "$here/matrix.yaml" \
      --wheelhouse /var/tmp/wheelhouse --results "$res/results" --out "$res/bisect" "${@:3}" 2>&1 |
      tee -a "$res/bisect-output.txt" ;;
  docker-up)
    base=gpu-host-root:ubuntu24.04
    if ! python3 -c "import docker, sys; docker.from_env().images.get(sys.argv[1])" "$base" 2>/dev/null; then
      /usr/bin/time -f "docker up + import: %e s" bash .gpu-docker/gpu-docker-up.sh .gpu-docker/docker-bin.tar.xz "$base"
    fi ;;
  docker)
    timeout -s INT "$seconds" python3 -m harness qualify --matrix "$here/docker-matrix.yaml" \
      --wheelhouse /var/tmp/wheelhouse --out "$res/docker" --report-out "$res/docker-report" "${@:3}" 2>&1 |
      tee -a "$res/docker-output.txt" ;;
esac
echo "exit ${PIPESTATUS[0]}"
df -h /var/tmp | tail -1
tar -C "$res" -czf "$OUT/sweep.tar.gz" .
