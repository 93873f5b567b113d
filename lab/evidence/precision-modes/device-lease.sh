#!/usr/bin/env bash
# Issue 58's lease (one H200), as it ran on the GPU machine (repository root, as root):
#   bash lab/evidence/precision-modes/device-lease.sh stage CALL          rebuild the cuDNN deltas one call carried
#   bash lab/evidence/precision-modes/device-lease.sh wheels              zip the rebuilt releases into the wheelhouse
#   bash lab/evidence/precision-modes/device-lease.sh start NAME MATRIX [AFTER] [QUALIFY-ARGS...]
#        harness qualify MATRIX in the background (setsid: a call's end does not stop it) into /var/tmp/lease/NAME,
#        once the file AFTER exists (- for none), with --wheelhouse /var/tmp/wheelhouse where it holds wheels
#   bash lab/evidence/precision-modes/device-lease.sh wait SECONDS NAME...  wait up to SECONDS, return NAME.tar.gz each
# stage: ../torch-axis-h100/device-call.sh's, at the lowest priority on 4 of the 16 cores when a run is going (the
# harness's processes keep the others). Each run works from .snap/src, a copy of the harness at the commit that
# started it (git archive, carried), so that later calls, which lay the tree anew, do not change the code under it.
# Carried: .carryT/tools (zstd, cudnn-rebuild.sh) and one .carryT/X/call-NN for stage; .whl (jsonschema, docker,
# rfc3339-validator and their needs, which python3 there lacks) and .snap for start.
set -uo pipefail
step=$1; shift
lease=/var/tmp/lease
mkdir -p "$lease" /var/tmp/wheelhouse /var/tmp/cudnn
export PYTHONUNBUFFERED=1
case $step in
  stage)
    if pgrep -f "harness qualify" >/dev/null; then
      nice -n 19 taskset -c 12-15 bash lab/evidence/torch-axis-h100/device-call.sh stage "$1"
    else
      bash lab/evidence/torch-axis-h100/device-call.sh stage "$1"
    fi ;;
  wheels)
    bash lab/evidence/torch-axis-h100/device-call.sh wheels ;;
  start)
    name=$1 matrix=$2 after=${3:--}; shift 3 2>/dev/null || shift $#
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
    rm -rf "$lease/$name-src" "$lease/$name.DONE"; cp -r .snap/src "$lease/$name-src"
    cp "$matrix" "$lease/$name-src/matrix.yaml"
    nvidia-smi --query-gpu=index,name,uuid,driver_version,power.limit --format=csv,noheader > "$lease/$name-gpu.txt"
    (cd "$lease/$name-src" && HARNESS_CACHE=/var/tmp/harness-cache PYTHONPATH=/tmp/site setsid nohup bash -c "
      while [ '$after' != - ] && [ ! -e '$after' ]; do sleep 5; done
      wh=; ls /var/tmp/wheelhouse/*.whl > /dev/null 2>&1 && wh='--wheelhouse /var/tmp/wheelhouse'
      python3 -m harness qualify --matrix matrix.yaml \$wh --out $lease/$name --report-out $lease/$name-report $* \
        > $lease/$name-output.txt 2>&1; echo \"exit \$?\" >> $lease/$name-output.txt; touch $lease/$name.DONE" \
      > /dev/null 2>&1 < /dev/null &) > /dev/null 2>&1 < /dev/null
    echo "started $name" ;;
  wait)
    seconds=$1; shift; end=$(( $(date +%s) + seconds ))
    for name in "$@"; do
      while [ ! -f "$lease/$name.DONE" ] && [ "$(date +%s)" -lt "$end" ]; do sleep 5; done
    done
    for name in "$@"; do
      echo "== $name: $(ls "$lease/$name"/*.json.gz 2>/dev/null | wc -l) results$([ -f "$lease/$name.DONE" ] && echo ", done")"
      tail -n 6 "$lease/$name-output.txt" 2>/dev/null
      nvidia-smi --query-gpu=index,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$lease/$name-gpu.txt"
      tar -C "$lease" -czf "$OUT/$name.tar.gz" --exclude='*.part' "$name" "$name-report" "$name-output.txt" \
        "$name-gpu.txt" 2>/dev/null
    done ;;
esac
df -h /var/tmp | tail -1
