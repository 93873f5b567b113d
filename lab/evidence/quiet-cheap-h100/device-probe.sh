#!/usr/bin/env bash
# Issue 34, lease A (the probe), as it ran on the GPU machine (repository root, .whl carried):
#   bash lab/evidence/quiet-cheap-h100/device-probe.sh
# 1. lab/studies/aa_sources.py in 4 fresh processes: what differs between processes of one cell;
# 2. one process of this checkout's suite over the whole default profile, round 1 (numerics on), suite
#    defaults: its wall time and phases before the side-by-side lease.
set -uo pipefail
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,uuid,driver_version,power.limit,clocks.sm,clocks.mem,temperature.gpu --format=csv \
  | tee "$OUT/gpu.txt"
timeout -s INT 300 python3 -m lab.studies.aa_sources run --processes 4 --out "$OUT/probe" 2>&1 | tail -5
python3 -m lab.studies.aa_sources report "$OUT/probe" | tee "$OUT/probe-report.txt"
start=$(date +%s)
timeout -s INT 240 python3 -m harness.suite run --out /var/tmp/new-r1.json --cell '{"id": "bundled"}' \
  --profile default --device cuda --dtypes fp32,tf32,bf16,fp16 --time-budget-s 1.0 --min-time-s 0.5 \
  --timed-share 0.5 2>"$OUT/new-r1.log"
echo "suite process: exit $?, $(( $(date +%s) - start )) s"
tail -3 "$OUT/new-r1.log"
[ -f /var/tmp/new-r1.json ] && gzip -c /var/tmp/new-r1.json > "$OUT/new-r1.json.gz"
tar -C "$OUT" -cf "$OUT/probe.tar" probe && rm -rf "$OUT/probe"
