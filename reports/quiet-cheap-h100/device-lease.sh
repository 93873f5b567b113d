#!/usr/bin/env bash
# Issue 34's side-by-side lease, as it ran on the GPU machine (repository root; .whl and .dev carried):
#   bash reports/quiet-cheap-h100/device-lease.sh start SECONDS   first call: set up, start the driver, wait
#   bash reports/quiet-cheap-h100/device-lease.sh wait SECONDS    later calls: wait for it, return what is done
# .dev/suite-0.5 = git archive 152b631 harness (suite 0.5); .dev/suite-0.10 = git archive e9f1ca1 harness
# (suite 0.10, the tree this issue was filed against); .dev/orch = git archive <this commit> harness schemas
# images (suite 0.11 and the orchestrator that runs the validation rounds).
# The driver runs in a session of its own, so one call's end does not stop it: the A/A processes one
# after another (each suite twice, interleaved: 0.5, 0.10, 0.11, 0.5, 0.10, 0.11; round 1 with numerics,
# round 2 as each suite's harness ran it: 0.5 with numerics, 0.10 and 0.11 without), then the early-verdict
# rounds of suite 0.11 (matrix-validation.yaml, then matrix-validation-aa.yaml).
set -uo pipefail
step=$1; seconds=${2:-580}
res=/var/tmp/qc
here=$PWD
if [ "$step" = start ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
  mkdir -p "$res/aa"
  nvidia-smi --query-gpu=name,uuid,driver_version,power.limit,clocks.sm,clocks.mem,temperature.gpu --format=csv \
    > "$res/gpu.txt"
  cat > "$res/driver.sh" <<DRIVER
set -u
export PYTHONUNBUFFERED=1
one() {  # name, suite folder, arguments
  local name=\$1 path=\$2; shift 2
  local t0=\$(date +%s%N)
  PYTHONPATH=/tmp/site:\$path python3 -m harness.suite run --out $res/aa/\$name.json --cell '{"id": "bundled"}' \
    --profile default --device cuda --dtypes fp32,tf32,bf16,fp16 "\$@" 2> $res/aa/\$name.log
  local rc=\$?
  echo "\$name exit \$rc process_wall_ms \$(( (\$(date +%s%N) - t0) / 1000000 ))" >> $res/progress.txt
  gzip -f $res/aa/\$name.json
}
new="--time-budget-s 1.0 --min-time-s 0.5 --timed-share 0.5"  # the plan's defaults (harness/plan/model.py)
old="--time-budget-s 0.5 --min-time-s 0.25"  # what suite 0.5's A/A ran with (reports/gpu-aa-0.5/matrix.yaml)
one suite-0.5.r1 $here/.dev/suite-0.5 \$old
one suite-0.10.r1 $here/.dev/suite-0.10 \$new
one suite-0.11.r1 $here/.dev/orch \$new
one suite-0.5.r2 $here/.dev/suite-0.5 \$old
one suite-0.10.r2 $here/.dev/suite-0.10 \$new --no-numerics
one suite-0.11.r2 $here/.dev/orch \$new --no-numerics
cd $here/.dev/orch
for m in validation validation-aa; do
  t0=\$(date +%s)
  PYTHONPATH=/tmp/site:$here/.dev/orch HARNESS_CACHE=/var/tmp/hc python3 -m harness run \
    --matrix $here/reports/quiet-cheap-h100/matrix-\$m.yaml --out $res/\$m > $res/\$m-output.txt 2>&1
  echo "\$m exit \$? wall_s \$(( \$(date +%s) - t0 ))" >> $res/progress.txt
done
echo done >> $res/progress.txt
touch $res/DONE
DRIVER
  setsid nohup bash "$res/driver.sh" > "$res/driver.log" 2>&1 < /dev/null &
fi
end=$(( $(date +%s) + seconds ))
while [ ! -f "$res/DONE" ] && [ "$(date +%s)" -lt "$end" ]; do sleep 5; done
cat "$res/progress.txt" 2>/dev/null; tail -2 "$res"/aa/*.log 2>/dev/null | tail -12
cp "$res/progress.txt" "$res/gpu.txt" "$OUT/" 2>/dev/null
tar -C "$res" -cf "$OUT/aa.tar" aa gpu.txt progress.txt driver.log 2>/dev/null
[ -d "$res/validation" ] && tar -C "$res" -cf "$OUT/validation.tar" --exclude='*.part' validation validation-output.txt \
  $( [ -d "$res/validation-aa" ] && echo validation-aa validation-aa-output.txt ) 2>/dev/null
ls -la "$OUT"
