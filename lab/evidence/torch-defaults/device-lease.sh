#!/usr/bin/env bash
# Issue 58's torch-axis lease (one H200), as it ran on the GPU machine (as root). The calls carried no tracked
# tree (an orphan checkout here), only ignored folders, so that each could carry about 60 MiB:
#   bash .carryT/tools/device-lease.sh stage CALL     collect one carried folder into /var/tmp and rebuild:
#        wh/  whole wheels (under 45 MB each), copied into /var/tmp/wheelhouse
#        wd/  wheels as per-file zstd deltas against the distributions python3 there holds (wheel_deltas.py,
#             literal files zstd-compressed), rebuilt into /var/tmp/wheelhouse, every file sha256-checked
#        cd/  cuDNN releases as deltas from 9.19.0.56 (../../shared/tools/cudnn-deltas.sh), rebuilt by
#             cudnn-rebuild.sh into /var/tmp/cudnn and zipped into /var/tmp/wheelhouse
#   bash .carryT/tools/device-lease.sh start NAME MATRIX [AFTER]
#        harness qualify MATRIX in the background (setsid: a call's end does not stop it) into /var/tmp/lease/NAME,
#        once the file AFTER exists (- for none), with --wheelhouse /var/tmp/wheelhouse
#   bash .carryT/tools/device-lease.sh wait SECONDS NAME...   wait up to SECONDS, return NAME.tar.gz each
# stage runs at the lowest priority on 4 of the 16 cores while a qualify runs. Each run works from .snap/src (git
# archive of the harness at the commit that started it, carried) with .whl (jsonschema, docker, rfc3339-validator
# and their needs, which python3 there lacks). Carried: .carryT/tools (zstd, this script, wheel_deltas.py,
# cudnn-rebuild.sh, wheelhouse.py) always.
set -uo pipefail
step=$1; shift
tools=.carryT/tools
lease=/var/tmp/lease
mkdir -p "$lease" /var/tmp/wheelhouse /var/tmp/cudnn
export PYTHONUNBUFFERED=1
stage() {
  call=$1
  [ -d "$call/wh" ] && cp -p "$call"/wh/*.whl /var/tmp/wheelhouse/ && ls "$call/wh"
  [ -d "$call/wd" ] && python3 "$tools/wheel_deltas.py" rebuild /var/tmp "$tools/zstd" "$call/wd" | grep -v "^waits"
  if [ -d "$call/cd" ]; then
    cp -p "$tools/zstd" "$call/cd/zstd"
    bash "$tools/cudnn-rebuild.sh" "$call/cd" /var/tmp/cudnn 2>&1 | grep -v -i "wait"
    python3 "$tools/wheelhouse.py" /var/tmp/cudnn /var/tmp/wheelhouse | tail -3
  fi
  ls /var/tmp/wheelhouse | wc -l
  du -sh /var/tmp 2>/dev/null | tail -1
}
case $step in
  stage)
    if pgrep -f "harness qualify" >/dev/null; then
      stage "$1" > /var/tmp/stage.log 2>&1 &
      pid=$!; renice -n 19 -p $pid >/dev/null; taskset -a -cp 12-15 $pid >/dev/null; wait $pid; cat /var/tmp/stage.log
    else
      stage "$1"
    fi ;;
  start)
    name=$1 matrix=$2 after=${3:--}
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl \
      /var/tmp/wheelhouse/uv-*.whl >/dev/null 2>&1
    rm -rf "$lease/$name-src" "$lease/$name.DONE"; cp -r .snap/src "$lease/$name-src"
    cp "$matrix" "$lease/$name-src/matrix.yaml"
    nvidia-smi --query-gpu=index,name,uuid,driver_version,power.limit --format=csv,noheader > "$lease/$name-gpu.txt"
    (cd "$lease/$name-src" && HARNESS_CACHE=/var/tmp/harness-cache PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH setsid nohup bash -c "
      while [ '$after' != - ] && [ ! -e '$after' ]; do sleep 5; done
      python3 -m harness qualify --matrix matrix.yaml --wheelhouse /var/tmp/wheelhouse --out $lease/$name \
        --report-out $lease/$name-report > $lease/$name-output.txt 2>&1
      echo \"exit \$?\" >> $lease/$name-output.txt; touch $lease/$name.DONE" \
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
esac
df -h /var/tmp | tail -1
