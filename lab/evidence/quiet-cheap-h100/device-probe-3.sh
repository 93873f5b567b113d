#!/usr/bin/env bash
# Issue 34, the flush probe, as it ran on the GPU machine (repository root, .whl carried):
#   bash lab/evidence/quiet-cheap-h100/device-probe-3.sh
# lab/studies/aa_sources.py --study flush in 5 fresh processes: the suite's way (4 graphs taken in turn) with
# its L2 flush written to one buffer (R4w, suite 0.11/0.12), read from one of twice the L2's size (R4r), or
# written to 4 buffers taken in turn (R4f).
set -uo pipefail
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$OUT/gpu.txt"
timeout -s INT 540 python3 -m lab.studies.aa_sources run --study flush --processes 5 --out "$OUT/flush" 2>&1 | tail -8
python3 -m lab.studies.aa_sources report "$OUT/flush" | tee "$OUT/flush-report.txt"
tar -C "$OUT" -cf "$OUT/flush.tar" flush && rm -rf "$OUT/flush"
