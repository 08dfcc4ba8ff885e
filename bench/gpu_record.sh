#!/usr/bin/env bash
# The GPU record in one call of a lent GPU machine: the speed record (bench_speed), its profile
# (profile_speed) and the CUDA tests of the optimised paths, most valuable first, each under its own
# time limit so that one failure or a short lease still leaves the others' results. At most about
# 9.5 minutes on an H200.
#
#   bash bench/gpu_record.sh OUTDIR
#
# Copy OUTDIR/record.json and OUTDIR/profile.json to bench/results/<date>-<gpu>[-tag].json and
# ...-profile.json, then `python -m bench.speed_table` rewrites docs/speed.md's table. The GPU machine
# reaches no network: carry .peer/ (`.ci/peer_wheel` fills it) so that bench_speed times vLLM-Omni's
# transformer beside ours; without it the record says "peer": null.
set -uo pipefail
out=${1:?usage: bash bench/gpu_record.sh OUTDIR}
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv > "$out/gpu.txt"
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)" >> "$out/gpu.txt"

timeout 330 python3 -m bench.bench_speed --device cuda --repeats 2 --out "$out/record.json" > "$out/bench.log" 2>&1
status=$?
echo "bench_speed: exit $status" >> "$out/gpu.txt"
if [ "$status" -ne 0 ] && [ "$status" -ne 124 ] && [ ! -s "$out/record.json" ]; then
    # a failure (a compile failure, say), not the time limit: the record without compiling
    timeout 120 python3 -m bench.bench_speed --device cuda --repeats 2 --no-compile --out "$out/record.json" \
        >> "$out/bench.log" 2>&1
    echo "bench_speed --no-compile: exit $?" >> "$out/gpu.txt"
fi

timeout 80 python3 -m bench.profile_speed --device cuda --out "$out/profile.json" > "$out/profile.log" 2>&1
echo "profile_speed: exit $?" >> "$out/gpu.txt"

# Graph replay equals the eager step (the compiled DiT blocks among them), the batcher's solo,
# shared and packed (varlen) steps, the graphed VAE decode, and Audex's fast tokens. Serially (no addopts), so the
# machine's Python needs no pytest-xdist.
timeout 120 python3 -m pytest -o addopts= -q -rs -p no:cacheprovider -k cuda tests/auk/test_step_graphs.py \
    tests/auk/test_batching.py tests/auk/test_vae_decode.py tests/audex/test_audex_decode.py > "$out/tests.log" 2>&1
echo "tests: exit $?" >> "$out/gpu.txt"
cat "$out/gpu.txt"
tail -3 "$out/tests.log"
