#!/usr/bin/env bash
# Issue 34, lease H, as it ran on the GPU machine (repository root; .whl and .dev carried):
#   bash lab/evidence/quiet-cheap-h100/device-lease-h.sh start SECONDS   first call: set up, start the driver, wait
#   bash lab/evidence/quiet-cheap-h100/device-lease-h.sh wait SECONDS    later calls: wait for it, return what is done
# .dev/suite-0.5 = git archive 152b631 harness (suite 0.5); .dev/suite-0.10 = suite 0.10's harness;
# .dev/orch = git archive <this commit> harness schemas images (suite 0.15).
# Each suite runs from its own copy under /var/tmp/w, with that copy as the working folder:
# `python -m` puts the working folder first on sys.path (lease B ran the checkout's suite six times so),
# and a device call lays the repository anew. Every document records the suite version that made it.
# The driver runs in a session of its own, so a call's end does not stop it. Order: 0.5 and 0.15 round 1
# (numerics on), 0.15 round 2 (without, as qualify runs later rounds), then the early-verdict rounds of
# suite 0.15 (matrix-validation.yaml, then matrix-validation-aa.yaml, copied beside the suite), then 0.10
# round 1 and 0.5 round 2 (with numerics, as its harness ran later rounds) as far as the lease goes.
set -uo pipefail
step=$1; seconds=${2:-580}
res=/var/tmp/qh; w=/var/tmp/w
if [ "$step" = start ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
  rm -rf "$res" "$w"; mkdir -p "$res/aa" "$w"; cp -r .dev/suite-0.5 .dev/suite-0.10 .dev/orch lab/evidence/quiet-cheap-h100/matrix-validation*.yaml "$w/"
  nvidia-smi --query-gpu=name,uuid,driver_version,power.limit,clocks.sm,clocks.mem,temperature.gpu --format=csv \
    > "$res/gpu.txt"
  cat > "$res/driver.sh" <<DRIVER
set -u
export PYTHONUNBUFFERED=1
one() {  # name, suite folder, arguments
  local name=\$1 dir=\$2; shift 2
  cd $w/\$dir || return
  local t0=\$(date +%s%N)
  PYTHONPATH=/tmp/site:$w/\$dir python3 -m harness.suite run --out $res/aa/\$name.json --cell '{"id": "bundled"}' \
    --profile default --device cuda --dtypes fp32,tf32,bf16,fp16 "\$@" 2> $res/aa/\$name.log
  local rc=\$?
  echo "\$name exit \$rc process_wall_ms \$(( (\$(date +%s%N) - t0) / 1000000 ))" >> $res/progress.txt
  gzip -f $res/aa/\$name.json
}
old="--time-budget-s 0.5 --min-time-s 0.25"  # what suite 0.5's A/A ran with (lab/evidence/gpu-aa-0.5/matrix.yaml)
new="--time-budget-s 1.0 --min-time-s 0.5 --timed-share 0.5"  # the plan's defaults (harness/suite/settings.py)
one suite-0.5.r1 suite-0.5 \$old
one suite-0.15.r1 orch \$new
one suite-0.15.r2 orch \$new --no-numerics
cd $w/orch
for m in validation validation-aa; do
  t0=\$(date +%s)
  PYTHONPATH=/tmp/site:$w/orch HARNESS_CACHE=/var/tmp/hc python3 -m harness run \
    --matrix $w/matrix-\$m.yaml --out $res/\$m > $res/\$m-output.txt 2>&1
  echo "\$m exit \$? wall_s \$(( \$(date +%s) - t0 ))" >> $res/progress.txt
done
one suite-0.10.r1 suite-0.10 \$new
one suite-0.5.r2 suite-0.5 \$old
echo done >> $res/progress.txt
touch $res/DONE
DRIVER
  setsid nohup bash "$res/driver.sh" > "$res/driver.log" 2>&1 < /dev/null &
fi
end=$(( $(date +%s) + seconds ))
while [ ! -f "$res/DONE" ] && [ "$(date +%s)" -lt "$end" ]; do sleep 5; done
cat "$res/progress.txt" 2>/dev/null; tail -n 2 "$res"/aa/*.log 2>/dev/null | tail -12
tar -C "$res" -cf "$OUT/aa.tar" --exclude='*.json' aa gpu.txt progress.txt driver.log 2>/dev/null
for m in validation validation-aa; do
  [ -d "$res/$m" ] && tar -C "$res" -cf "$OUT/$m.tar" --exclude='*.part' "$m" "$m-output.txt" 2>/dev/null
done
ls -la "$OUT"
