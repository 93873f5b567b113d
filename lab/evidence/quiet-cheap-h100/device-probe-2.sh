#!/usr/bin/env bash
# Issue 34, lease B (the second probe), as it ran on the GPU machine (repository root, .whl carried):
#   bash lab/evidence/quiet-cheap-h100/device-probe-2.sh
# lab/studies/aa_sources.py --study rotation in 4 fresh processes: one graph against 4 graphs taken in turn
# (their outputs and workspaces at other addresses), and 4 graphs whose inputs moved too; processes 1 and
# 3 compute and hold an fp64 reference after each row, as the suite's numerics did until 0.11.
set -uo pipefail
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$OUT/gpu.txt"
timeout -s INT 420 python3 -m lab.studies.aa_sources run --study rotation --processes 4 --out "$OUT/rotation" 2>&1 | tail -8
python3 -m lab.studies.aa_sources report "$OUT/rotation" | tee "$OUT/rotation-report.txt"
tar -C "$OUT" -cf "$OUT/rotation.tar" rotation && rm -rf "$OUT/rotation"
