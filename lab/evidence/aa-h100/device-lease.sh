#!/usr/bin/env bash
# Issue 45's lease on one H100 (modeled on ../quiet-cheap-h100/device-lease-h.sh). The device calls, from
# the repository root of this checkout, each with carry [".whl", ".dev"] and timeout_s 600:
#
#   1.  bash lab/evidence/aa-h100/device-lease.sh start 570     set up, start the driver, wait up to 570 s
#   2+. bash lab/evidence/aa-h100/device-lease.sh wait 570      wait for it, bring back what is done
#                                                          (again until progress.txt says "done")
#
# .whl: the wheels of jsonschema and friends (`python -m harness run` needs them); .dev/suite-0.15 =
# `git archive 0501554 harness` extracted (suite 0.15, as lease H ran it). Suite 0.18 is this checkout's
# harness, copied to /var/tmp/w/orch with schemas/ and images/ at the start, so later calls (which lay
# the repository anew) do not move it. Each suite runs from its own copy as the working folder
# (`python -m` puts it first on sys.path); every document records the suite version that made it.
#
# The driver runs in a session of its own (setsid), so a call's end does not stop it. Order, with the
# wall each part is expected to take on an H100 (lease H's figures; docs/method.md):
#   suite-0.15.r1   suite 0.15 round 1, numerics on, its plan defaults (time budget 1 s, min time
#                   0.5 s, timed share 0.5), its default profile (256 rows)            about 250 s
#   suite-0.15.r2   its round 2 without numerics: suite 0.15's A/A on the same GPU (lease 1 lacked it;
#                   AA_OLD_PAIR= leaves it out)                                         about 255 s
#   aa              matrix-aa.yaml through `harness run` (schema-valid result files): suite 0.18 round 1,
#                   numerics on, its defaults, the new default profile (319 rows)      estimate 225-265 s
#                   and round 2 without numerics (as harness run and qualify run later
#                   rounds)                                                             about 25 s less
#   validation      matrix-validation.yaml: bundled vs cuDNN disabled, 7 rounds each   about 330-400 s
#   validation-aa   matrix-validation-aa.yaml: 7 more rounds of the baseline           about 170-200 s
# In all about 25 minutes after the machine starts (lease 1, without suite-0.15.r2, took 28 on an H200). Suite 0.18's settings are its defaults; AA_SUITE
# adds `suite:` keys to its three matrices (the A/A and both validations), e.g. to run 0.17's way:
#   AA_SUITE="windows_max=3 timed_share=0.5" bash lab/evidence/aa-h100/device-lease.sh start 570
# AA_ROWS (suite 0.15's rows), AA_SUITE and AA_VALIDATION change what is measured, for a dry run of this
# driver on a CPU:
#   OUT=/tmp/out AA_ROWS="--profile smoke --device cpu --dtypes fp32 --workloads relu,gemm" \
#     AA_SUITE="workloads=[relu,gemm]" AA_VALIDATION= bash lab/evidence/aa-h100/device-lease.sh start 600
# Results stay under /var/tmp/aa (while the machine is held); each call tars them to $OUT:
# aa.tar (suite 0.15's result file .json.gz, its log, progress.txt, gpu.txt), aa-018.tar (the A/A pair,
# plan.json, harness run's output), validation.tar, validation-aa.tar.
# After the lease: python -m lab.studies.aa_profile <folder the tarballs were extracted into>.
set -uo pipefail
step=$1; seconds=${2:-570}
rows=${AA_ROWS:-"--profile default --device cuda --dtypes fp32,tf32,bf16,fp16"}
checks=${AA_VALIDATION-"validation validation-aa"}
old_pair=${AA_OLD_PAIR-1}  # empty: suite 0.15's round 1 only
# AA_GPUS="A B" (a machine of several GPUs): suite 0.18's matrices on GPU A, suite 0.15's processes on GPU B at
# the same time, each pair on one GPU; unset: everything in turn on the one GPU the machine has
read -r new_gpu old_gpu <<< "${AA_GPUS:-}"
# AA_ROUNDS: the A/A matrix's rounds (2: round 1 with numerics, round 2 without); AA_THEN_NEW: after suite
# 0.15's processes, one more of suite 0.18's round 1 with these arguments, on suite 0.15's GPU (so that
# goal 2 compares two processes of one GPU where the pairs ran on two), e.g. AA_THEN_NEW="--windows-max 3"
rounds=${AA_ROUNDS:-2}; then_new=${AA_THEN_NEW-}
# AA_DEFAULT_GPU=G: at the start, suite 0.18's round 1 at its defaults on GPU G, beside the rest (a GPU that
# later work takes: it writes default.DONE in the results folder when it is free again)
default_gpu=${AA_DEFAULT_GPU-}
res=/var/tmp/aa; w=/var/tmp/w
if [ "$step" = start ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
  rm -rf "$res" "$w"; mkdir -p "$res/aa" "$w/orch"
  cp -r .dev/suite-0.15 "$w/"
  cp -r harness schemas images "$w/orch/"
  cp lab/evidence/aa-h100/matrix-aa.yaml lab/evidence/aa-h100/matrix-validation*.yaml "$w/"
  sed -i "s/^rounds: 2$/rounds: $rounds/" "$w/matrix-aa.yaml"
  for pair in ${AA_SUITE:-}; do  # key=value: a line of each matrix's `suite:`, its last block
    for m in "$w"/matrix-*.yaml; do echo "  ${pair%%=*}: ${pair#*=}" >> "$m"; done
  done
  nvidia-smi --query-gpu=index,name,uuid,driver_version,power.limit,clocks.sm,clocks.mem,temperature.gpu --format=csv \
    > "$res/gpu.txt" 2>&1
  cat > "$res/driver.sh" <<DRIVER
set -u
export PYTHONUNBUFFERED=1
one() {  # name, suite folder, arguments
  local name=\$1 dir=\$2; shift 2
  cd $w/\$dir || return
  local t0=\$(date +%s%N)
  env \${gpu:+CUDA_VISIBLE_DEVICES=\$gpu} PYTHONPATH=/tmp/site:$w/\$dir python3 -m harness.suite run --out $res/aa/\$name.json --cell '{"id": "bundled"}' \
    $rows "\$@" 2> $res/aa/\$name.log
  local rc=\$?
  echo "\$name exit \$rc process_wall_ms \$(( (\$(date +%s%N) - t0) / 1000000 ))" >> $res/progress.txt
  gzip -f $res/aa/\$name.json
  nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader 2>&1 \
    | sed "s/^/\$name after: /" >> $res/gpu.txt
}
old="--time-budget-s 1.0 --min-time-s 0.5 --timed-share 0.5"  # suite 0.15's plan defaults, as lease H ran it
if [ -n "$default_gpu" ]; then
  (gpu=$default_gpu one suite-0.18d.r1 orch; touch $res/default.DONE) &
fi
old_suite() {
  one suite-0.15.r1 suite-0.15 \$old
  [ -n "$old_pair" ] && one suite-0.15.r2 suite-0.15 \$old --no-numerics  # its A/A on this GPU
  [ -n "$then_new" ] && one suite-0.18.r1 orch $then_new
}
if [ -n "$old_gpu" ]; then (gpu=$old_gpu old_suite) & else old_suite; fi
cd $w/orch
for m in aa $checks; do
  t0=\$(date +%s)
  PYTHONPATH=/tmp/site:$w/orch HARNESS_CACHE=/var/tmp/hc python3 -m harness run \
    --matrix $w/matrix-\$m.yaml --out $res/\${m/#aa/aa-018} ${new_gpu:+--gpus $new_gpu} > $res/\$m-output.txt 2>&1
  echo "\$m exit \$? wall_s \$(( \$(date +%s) - t0 ))" >> $res/progress.txt
  nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader 2>&1 \
    | sed "s/^/\$m after: /" >> $res/gpu.txt
done
wait  # suite 0.15's processes, where they ran beside
echo done >> $res/progress.txt
touch $res/DONE
DRIVER
  setsid nohup bash "$res/driver.sh" > "$res/driver.log" 2>&1 < /dev/null &
fi
end=$(( $(date +%s) + seconds ))
while [ ! -f "$res/DONE" ] && [ "$(date +%s)" -lt "$end" ]; do sleep 5; done
cat "$res/progress.txt" 2>/dev/null; tail -n 2 "$res"/aa/*.log "$res"/*-output.txt 2>/dev/null | tail -16
tar -C "$res" -cf "$OUT/aa.tar" --exclude='*.json' aa gpu.txt progress.txt driver.log 2>/dev/null
for m in aa validation validation-aa; do
  d=${m/#aa/aa-018}
  [ -d "$res/$d" ] && tar -C "$res" -cf "$OUT/$d.tar" --exclude='*.part' "$d" "$m-output.txt" 2>/dev/null
done
ls -la "$OUT"
