#!/usr/bin/env bash
# The lab's device transport: what each call of a lease runs on the GPU machine (as root), from the folder the
# call lays out. Carry this folder (lab/tools) as .carryT/tools, with ../shared/tools' zstd and cudnn-rebuild.sh
# copied beside it, plus what each step names below.
#   bash .carryT/tools/device.sh stage CALL       collect one call's folder (python -m lab.tools.calls cut) into
#        /var/tmp and rebuild what it completes:
#        wh/  whole wheels, copied into /var/tmp/wheelhouse
#        wd/  wheels as per-file zstd deltas against the distributions python3 there holds (wheel_deltas.py),
#             rebuilt into /var/tmp/wheelhouse, every file sha256-checked
#        cd/  cuDNN releases as deltas (../shared/tools/cudnn-deltas.sh), rebuilt by cudnn-rebuild.sh into
#             /var/tmp/cudnn and zipped into /var/tmp/wheelhouse (wheelhouse.py)
#        While a qualify runs, stage runs at the lowest priority on the last 4 cores.
#   bash .carryT/tools/device.sh start NAME MATRIX [AFTER [QUALIFY-ARGS...]]
#        harness qualify MATRIX in the background (setsid: a call's end does not stop it) into /var/tmp/lease/NAME,
#        once the file AFTER exists (- for none), with --wheelhouse /var/tmp/wheelhouse where it holds wheels.
#        Works from .snap/src (git archive of the harness at the commit that starts it, carried), so that later
#        calls, which lay the tree anew, do not change the code under it, with .whl (jsonschema, docker,
#        rfc3339-validator and their needs, which python3 there lacks) installed into /tmp/site.
#   bash .carryT/tools/device.sh wait SECONDS NAME...   wait up to SECONDS for each run, return $OUT/NAME.tar.gz
set -uo pipefail
step=${1:?stage, start or wait}; shift
tools=$(cd "$(dirname "$0")" && pwd)
lease=/var/tmp/lease
mkdir -p "$lease" /var/tmp/wheelhouse /var/tmp/cudnn
export PYTHONUNBUFFERED=1

stage() {
  local call=$1
  if [ -d "$call/wh" ]; then cp -p "$call"/wh/*.whl /var/tmp/wheelhouse/ && ls "$call/wh"; fi
  if [ -d "$call/wd" ]; then
    python3 "$tools/wheel_deltas.py" rebuild /var/tmp "$tools/zstd" "$call/wd" | grep -v "^waits"
  fi
  if [ -d "$call/cd" ]; then
    cp -p "$tools/zstd" "$call/cd/zstd"
    bash "$tools/cudnn-rebuild.sh" "$call/cd" /var/tmp/cudnn 2>&1 | grep -v -i "wait"
    python3 "$tools/wheelhouse.py" /var/tmp/cudnn /var/tmp/wheelhouse | tail -3
  fi
  echo "wheelhouse: $(ls /var/tmp/wheelhouse | wc -l) files, /var/tmp $(du -sh /var/tmp 2>/dev/null | cut -f1)"
}

case $step in
  stage)
    if pgrep -f "harness qualify" >/dev/null; then
      stage "$1" > /var/tmp/stage.log 2>&1 &
      pid=$!; renice -n 19 -p $pid >/dev/null; taskset -a -cp "$(( $(nproc) - 4 ))-$(( $(nproc) - 1 ))" $pid >/dev/null
      wait $pid; cat /var/tmp/stage.log
    else
      stage "$1"
    fi ;;
  start)
    name=$1 matrix=$2 after=${3:--}; shift $(( $# < 3 ? $# : 3 ))
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl \
      $(ls /var/tmp/wheelhouse/uv-*.whl 2>/dev/null) >/dev/null 2>&1
    rm -rf "$lease/$name-src" "$lease/$name.DONE"; cp -r .snap/src "$lease/$name-src"
    cp "$matrix" "$lease/$name-src/matrix.yaml"
    nvidia-smi --query-gpu=index,name,uuid,driver_version,power.limit --format=csv,noheader > "$lease/$name-gpu.txt"
    (cd "$lease/$name-src" && HARNESS_CACHE=/var/tmp/harness-cache PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH \
      setsid nohup bash -c "
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
      tail -n 8 "$lease/$name-output.txt" 2>/dev/null
      nvidia-smi --query-gpu=index,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$lease/$name-gpu.txt"
      tar -C "$lease" -czf "$OUT/$name.tar.gz" --exclude='*.part' "$name" "$name-report" "$name-output.txt" \
        "$name-gpu.txt" 2>/dev/null
    done ;;
  *) echo "device.sh: unknown step $step (stage, start or wait)" >&2; exit 2 ;;
esac
df -h /var/tmp | tail -1
