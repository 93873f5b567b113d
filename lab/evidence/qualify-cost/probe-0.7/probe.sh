set -x
python3 -m pip install -q --no-index --find-links .whl jsonschema rfc3339-validator rich tabulate docker 2>&1 | tail -2
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit --format=csv
python3 .probe/micro.py
mkdir -p $OUT/p
( time python3 -m harness run --matrix lab/evidence/qualify-cost/matrix-probe.yaml --out results/probe ) > $OUT/p/run.txt 2>&1
tail -5 $OUT/p/run.txt
for rows in "sdpa_cudnn_s2048:bf16" "conv2d_r50_3x3,lstm:fp32,bf16"; do
  w=${rows%%:*}; d=${rows##*:}
  /usr/bin/time -f "wall %e s" python3 -m harness.suite run --out results/one-$w.json --workloads $w --dtypes $d --profile default --device cuda --time-budget-s 2 --min-time-s 1 --timed-share 0.5 --no-numerics 2>&1 | tail -2
done
cp results/one-*.json $OUT/p/ 2>/dev/null
tar czf $OUT/p/probe.tgz results/probe
python3 .probe/summary.py results/probe results/one-*.json
