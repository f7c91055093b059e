#!/usr/bin/env bash
# MARL training throughput on one accelerator (issue 27 item 4: aim 1e7 env steps/s on one H200);
# prepared and tested on CPU at tiny size (MARL_GPU_PRESET=tiny, small MARL_BENCH_* sizes),
# not yet run on a GPU.
#   bash eval/benchmarks/marl_gpu.sh [out_dir]        (from the repository root)
# 1. the marl benchmark: the training loop at MARL_BENCH_MAIN episodes (default 65,536) with
#    where its time goes, then cost per env step from 16k to 1M parallel episodes;
# 2. the paper preset on bomb/base-1 (4 seeds x 16,384 episodes, vmapped in one jit): learning
#    curve, held-out success, env_steps_per_second in results.json.
set -euo pipefail
out=${1:-runs/marl_gpu}
preset=${MARL_GPU_PRESET:-paper}
mkdir -p "$out"
python -c "import jax; print(jax.devices(), jax.default_backend())"
MARL_BENCH_MAIN=${MARL_BENCH_MAIN:-65536} \
MARL_BENCH_EPISODES=${MARL_BENCH_EPISODES:-16384,65536,262144,1048576} \
    python -m eval.bench only=[marl] out="$out/bench.json"
python train/marl.py env=bomb/base-1 preset="$preset" out_dir="$out/base-1"
python - "$out" <<'PY'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
for row in json.loads((out / "bench.json").read_text())["rows"]:
    print(f"{row['name']}: {row['value']:,.4g} {row['unit']}  {row.get('notes', '')}")
res = json.loads((out / "base-1" / "results.json").read_text())
print("preset: env steps/s", res.get("env_steps_per_second"), "success", res.get("success_rate"))
PY
