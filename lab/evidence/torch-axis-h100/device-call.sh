#!/usr/bin/env bash
# One device call of the torch-axis lease, as it ran on the GPU machine (repository root, as root):
#   bash lab/evidence/torch-axis-h100/device-call.sh STEP [ARGS...]
# STEP:
#   probe          what the machine holds: GPU, driver, python3's torch and nvidia-* distributions
#   stage CALL     collect one carried folder (.carryT/call-NN, cut here) into /var/tmp:
#                    wp/  parts of whole PyPI wheels (../shared/tools/wheel-parts.sh), joined and sha256-checked
#                         into /var/tmp/wheelhouse by wheel-join.sh
#                    wd/  wheels as deltas against python3's installed distributions (wheel_deltas.py), rebuilt
#                         into /var/tmp/wheelhouse, every file checked against the wheel's sha256
#                    wt/  torch 2.14.1 as a delta against torch 2.13.0's wheel (unpacked into /var/tmp/t213 once
#                         that wheel has been joined), rebuilt into /var/tmp/wheelhouse the same way
#                    cd/  cuDNN releases as zstd deltas from 9.19.0.56 (../shared/tools/cudnn-deltas.sh), rebuilt
#                         into /var/tmp/cudnn by cudnn-rebuild.sh, every file checked against PyPI's sha256
#   wheels         zip every rebuilt cuDNN release into /var/tmp/wheelhouse; list the wheelhouse
#   run MATRIX NAME SECONDS [SEED]
#                  harness run MATRIX on the local backend (on a machine of several GPUs with --gpus, every
#                  GPU: one run per GPU at a time) with --wheelhouse /var/tmp/wheelhouse into
#                  /var/tmp/lease/NAME, stopped (SIGINT: whole results kept) after SECONDS; returns NAME.tar.gz.
#                  SEED: a results folder of the work tree (an earlier lease's, committed) copied into
#                  /var/tmp/lease/NAME first where that is not there yet, so the run adds only what it lacks
# Carried: .carryT/tools (zstd, cudnn-rebuild.sh, wheel-join.sh) always; one .carryT/call-NN for stage; .whl/
# (jsonschema, tabulate, rich and their needs, which python3 there lacks) for run. uv comes from the wheelhouse
# where it is there (cells of the machine's own torch need none). The release atlas's fifth lease
# (../release-atlas/second-interval-matrix.yaml) and later leases (t215/, ../release-atlas/resnet-layers-matrix.yaml,
# ../release-atlas/variants-matrix.yaml) ran with this script too.
set -uo pipefail
step=$1
here=lab/evidence/torch-axis-h100
tools=.carryT/tools
export PYTHONUNBUFFERED=1 HARNESS_CACHE=/var/tmp/harness-cache
mkdir -p /var/tmp/lease /var/tmp/wheelhouse /var/tmp/cudnn
case $step in
  probe)
    nvidia-smi --query-gpu=index,name,uuid,driver_version,power.limit --format=csv,noheader
    python3 -c "import torch, sys; print(sys.version.split()[0], 'torch', torch.__version__, 'cudnn', torch.backends.cudnn.version(), 'nccl', torch.cuda.nccl.version(), torch.__file__)"
    python3 -m pip list 2>/dev/null | grep -i -E "nvidia|cuda|triton|^torch " | tr -s ' ' | paste -sd';'
    python3 -m venv /tmp/venv-probe >/dev/null 2>&1 && echo "venv: ok" || echo "venv: fails"
    command -v uv || echo "no uv on PATH" ;;
  stage)
    call=$2
    [ -d "$call/wp" ] && bash "$tools/wheel-join.sh" "$call/wp" /var/tmp/wheelhouse | grep -v "^waits\|^have"
    [ -d "$call/wd" ] && python3 "$here/wheel_deltas.py" rebuild /var/tmp "$tools/zstd" "$call/wd" | grep -v "^waits"
    if [ -d "$call/wt" ]; then
      [ -d /var/tmp/t213 ] || python3 -m zipfile -e /var/tmp/wheelhouse/torch-2.13.0-*.whl /var/tmp/t213
      WHEEL_DELTAS_SITE=/var/tmp/t213 python3 "$here/wheel_deltas.py" rebuild /var/tmp/wt "$tools/zstd" "$call/wt" | grep -v "^waits"
      mv /var/tmp/wt/wheelhouse/*.whl /var/tmp/wheelhouse/ 2>/dev/null
    fi
    if [ -d "$call/cd" ]; then
      cp -p "$tools/zstd" "$call/cd/zstd"
      bash "$tools/cudnn-rebuild.sh" "$call/cd" /var/tmp/cudnn 2>&1 | grep -v -i "wait"
    fi
    du -sh /var/tmp 2>/dev/null | tail -1 ;;
  wheels)
    python3 lab/tools/wheelhouse.py /var/tmp/cudnn /var/tmp/wheelhouse
    ls /var/tmp/wheelhouse | grep -v '^\.' ;;
  run)
    matrix=$2 name=$3 seconds=${4:-540} seed=${5:-}
    [ -n "$seed" ] && [ ! -d "/var/tmp/lease/$name" ] && cp -r "$seed" "/var/tmp/lease/$name"
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl $(ls /var/tmp/wheelhouse/uv-*.whl 2>/dev/null) >/dev/null
    export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH
    nvidia-smi --query-gpu=index,name,uuid,driver_version,power.limit --format=csv,noheader | tee "/var/tmp/lease/$name-gpu.txt"
    gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | paste -sd,)  # several: one run per GPU at a time
    gpu_args=(); [[ $gpus == *,* ]] && gpu_args=(--gpus "$gpus")
    # cells of the machine's own torch and cuDNN need no wheelhouse, and harness run refuses an empty one
    ls /var/tmp/wheelhouse/*.whl >/dev/null 2>&1 && gpu_args+=(--wheelhouse /var/tmp/wheelhouse)
    timeout -s INT "$seconds" python3 -m harness run --matrix "$matrix" "${gpu_args[@]}" \
      --out "/var/tmp/lease/$name" 2>&1 | tee -a "/var/tmp/lease/$name-output.txt"
    echo "exit ${PIPESTATUS[0]}"
    tar -C /var/tmp/lease -czf "$OUT/$name.tar.gz" "$name" "$name-output.txt" "$name-gpu.txt" ;;
esac
df -h /var/tmp | tail -1
