#!/usr/bin/env bash
# One device call of the release atlas, as it ran on the GPU machine (repository root, as root):
#   bash lab/evidence/release-atlas/device-call.sh STEP [ARGS...]
# STEP:
#   probe          what the machine holds (GPUs, torch, cuDNN, the harness's Python dependencies)
#   stage BATCH... rebuild the cuDNN releases whose delta files this call carried (.carry/batch-NN, cut here from
#                  ../shared/tools/cudnn-deltas.sh's output) into /var/tmp/cudnn with cudnn-rebuild.sh (carried
#                  in .atlas/), each file checked against PyPI's sha256
#   wheels         zip every rebuilt release into the wheelhouse /var/tmp/wheelhouse (stored, not compressed)
#   run SECONDS    harness run matrix.yaml on the local backend, one run per GPU (every GPU the machine has),
#                  {wheel: X} cells from that
#                  wheelhouse, stopped (SIGINT: whole results kept) after SECONDS; a later call resumes
#   between SECONDS  the same with between-matrix.yaml (second lease: the rows that changed, at releases between)
#   adjacent SECONDS the same with adjacent-matrix.yaml (third lease: 9.26.1.1, 9.27.0.42, 9.28.0.42)
# Carried: .whl/ (jsonschema, tabulate, rich and their needs, which the machine's Python lacks) for probe and
# run, .atlas/ and one .carry/batch-NN for stage. Everything lives in /var/tmp while the machine is held; a
# run call returns the results folder as a tarball.
set -uo pipefail
step=$1
here=lab/evidence/release-atlas  # reports/release-atlas-h100 when the lease ran (renamed after it: the lease got H200s)
export PYTHONUNBUFFERED=1 HARNESS_CACHE=/var/tmp/harness-cache
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null
  export PYTHONPATH=/tmp/site:$PWD
fi
res=/var/tmp/atlas
mkdir -p "$res"
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | paste -sd,)  # every GPU (0,1,2,3 in the first lease)
case $step in
  probe)
    nvidia-smi --query-gpu=index,name,uuid,driver_version,power.limit --format=csv,noheader | tee "$res/gpu.txt"
    python3 -c "import torch, pandas, scipy, matplotlib, yaml, tabulate, jsonschema, rich, torchvision
print('torch', torch.__version__, 'cudnn', torch.backends.cudnn.version(), 'torchvision', torchvision.__version__)"
    python3 -m harness plan --matrix "$here/matrix.yaml" | tail -3 ;;
  stage)
    for batch in "${@:2}"; do
      /usr/bin/time -f "rebuild $batch: %e s" bash .atlas/cudnn-rebuild.sh "$batch" /var/tmp/cudnn
    done ;;
  wheels)
    /usr/bin/time -f "wheelhouse: %e s" python3 lab/tools/wheelhouse.py /var/tmp/cudnn /var/tmp/wheelhouse ;;
  run)
    timeout -s INT "${2:-540}" python3 -m harness run --matrix "$here/matrix.yaml" --gpus "$gpus" \
      --wheelhouse /var/tmp/wheelhouse --out "$res/results" 2>&1 | tee -a "$res/run-output.txt"
    echo "exit ${PIPESTATUS[0]}"
    tar -C "$res" -czf "$OUT/atlas.tar.gz" . ;;
  between)
    nvidia-smi --query-gpu=index,name,uuid,driver_version,power.limit --format=csv,noheader | tee "$res/gpu.txt"
    timeout -s INT "${2:-540}" python3 -m harness run --matrix "$here/between-matrix.yaml" --gpus "$gpus" \
      --wheelhouse /var/tmp/wheelhouse --out "$res/between" 2>&1 | tee -a "$res/between-output.txt"
    echo "exit ${PIPESTATUS[0]}"
    tar -C "$res" -czf "$OUT/between.tar.gz" between between-output.txt gpu.txt ;;
  adjacent)
    nvidia-smi --query-gpu=index,name,uuid,driver_version,power.limit --format=csv,noheader | tee "$res/gpu.txt"
    timeout -s INT "${2:-540}" python3 -m harness run --matrix "$here/adjacent-matrix.yaml" --gpus "$gpus" \
      --wheelhouse /var/tmp/wheelhouse --out "$res/adjacent" 2>&1 | tee -a "$res/adjacent-output.txt"
    echo "exit ${PIPESTATUS[0]}"
    tar -C "$res" -czf "$OUT/adjacent.tar.gz" adjacent adjacent-output.txt gpu.txt ;;
esac
df -h /var/tmp | tail -1
