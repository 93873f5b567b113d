#!/usr/bin/env bash
# Lease 15 (issue 40): harness runs in the background on chosen GPUs of one machine, so that one device call
# can start them and later calls bring back what they have written (repository root, as root):
#   bash lab/evidence/release-atlas/device-lease.sh start SECONDS NAME:GPU:MATRIX[:AFTER]...
#                                                start each run (once the file AFTER exists, if given), then wait
#   bash lab/evidence/release-atlas/device-lease.sh wait SECONDS NAME...               wait for the runs named
# Each run is `harness run --matrix MATRIX --gpus GPU --wheelhouse /var/tmp/wheelhouse` (the wheelhouse only where
# it holds a wheel when the run starts: cells of the machine's own torch and cuDNN need none) into
# /var/tmp/lease/NAME, in a session of its own (setsid: a call's end does not stop it), with its own
# HARNESS_CACHE (runs side by side do not share a cell environment being built). A call waits up to
# SECONDS for every run named to finish, then returns NAME.tar.gz (the results folder, its output and the
# GPUs' state) for each. Before it: the cuDNN releases staged into /var/tmp/wheelhouse by
# ../torch-axis-h100/device-call.sh (stage, then wheels). Carried: .whl (jsonschema and its needs, uv),
# which python3 there lacks. Each run works from its own copy of the harness (NAME-src), so that later calls,
# which lay the repository anew, do not change the code under it.
set -uo pipefail
step=$1; seconds=$2; shift 2
lease=/var/tmp/lease
mkdir -p "$lease"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH
names=()
for spec in "$@"; do
  name=${spec%%:*}; names+=("$name")
  [ "$step" = start ] || continue
  rest=${spec#*:}; gpu=${rest%%:*}; rest=${rest#*:}; matrix=${rest%%:*}; after=${rest#"$matrix"}; after=${after#:}
  rm -f "$lease/$name.DONE"  # a run started again (more rounds) is not done until it says so
  mkdir -p "$lease/$name-src"
  cp -r harness schemas images "$lease/$name-src/" && cp "$matrix" "$lease/$name-src/matrix.yaml"
  nvidia-smi --query-gpu=index,name,uuid,driver_version,power.limit --format=csv,noheader > "$lease/$name-gpu.txt"
  (cd "$lease/$name-src" && HARNESS_CACHE=/var/tmp/hc-$name PYTHONPATH=/tmp/site setsid nohup bash -c "
    while [ -n '$after' ] && [ ! -e '$after' ]; do sleep 5; done
    wh=; ls /var/tmp/wheelhouse/*.whl > /dev/null 2>&1 && wh='--wheelhouse /var/tmp/wheelhouse'
    python3 -m harness run --matrix matrix.yaml --gpus $gpu \$wh --out $lease/$name \
      > $lease/$name-output.txt 2>&1; echo \"exit \$?\" >> $lease/$name-output.txt; touch $lease/$name.DONE" \
    > /dev/null 2>&1 < /dev/null &) > /dev/null 2>&1 < /dev/null  # the and-list forks a shell that waits: not on our stdout
done
end=$(( $(date +%s) + seconds ))
for name in "${names[@]}"; do
  while [ ! -f "$lease/$name.DONE" ] && [ "$(date +%s)" -lt "$end" ]; do sleep 5; done
done
for name in "${names[@]}"; do
  echo "== $name: $(ls "$lease/$name"/*.json.gz 2>/dev/null | wc -l) results$([ -f "$lease/$name.DONE" ] && echo ", done")"
  tail -n 4 "$lease/$name-output.txt" 2>/dev/null
  nvidia-smi --query-gpu=index,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$lease/$name-gpu.txt"
  tar -C "$lease" -czf "$OUT/$name.tar.gz" --exclude='*.part' "$name" "$name-output.txt" "$name-gpu.txt" 2>/dev/null
done
df -h /var/tmp | tail -1
