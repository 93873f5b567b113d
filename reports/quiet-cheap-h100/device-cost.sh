#!/usr/bin/env bash
# Issue 34, lease C, as it ran on the GPU machine (repository root; .whl and .dev carried): round 1 (numerics
# on) of suite 0.5 and of suite 0.11 over the whole default profile, one after the other, each from its own
# folder outside the repository: `python -m` puts the working folder first on sys.path, so a suite run from
# the repository root is the checkout's whatever PYTHONPATH says (lease B's six A/A processes all ran suite
# 0.11 so; their documents say it).
set -uo pipefail
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
w=/var/tmp/w; rm -rf "$w"; mkdir -p "$w"; cp -r .dev/suite-0.5 .dev/orch "$w/"
nvidia-smi --query-gpu=name,uuid,driver_version,power.limit,temperature.gpu --format=csv | tee "$OUT/gpu.txt"
run() {  # name, folder, arguments
  local name=$1 dir=$2; shift 2
  cd "$w/$dir" || return
  local t0; t0=$(date +%s%N)
  PYTHONPATH=/tmp/site:$w/$dir timeout 295 python3 -m harness.suite run --out "$OUT/$name.json" \
    --cell '{"id": "bundled"}' --profile default --device cuda --dtypes fp32,tf32,bf16,fp16 "$@" 2> "$OUT/$name.log"
  echo "$name exit $? process_wall_ms $(( ($(date +%s%N) - t0) / 1000000 ))" | tee -a "$OUT/progress.txt"
  python3 -c "import json, sys; d = json.load(open(sys.argv[1])); print(d['suite_version'], d['duration_s'])" \
    "$OUT/$name.json"
  gzip -f "$OUT/$name.json"
}
run suite-0.5.r1 suite-0.5 --time-budget-s 0.5 --min-time-s 0.25
run suite-0.11.r1 orch --time-budget-s 1.0 --min-time-s 0.5 --timed-share 0.5
