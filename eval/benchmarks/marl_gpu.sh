#!/usr/bin/env bash
# The MARL figures of the README on one accelerator within a 10-minute budget (issue 37 item 7):
#   bash eval/benchmarks/marl_gpu.sh [out_dir]        (from the repository root)
# 1. throughput (at most MARL_GPU_BENCH_S, default 150 s): the marl benchmark, the training
#    loop at MARL_BENCH_MAIN episodes (default 65,536) with where its time goes, the preset=cpu
#    configuration, then the cost per env step at MARL_BENCH_EPISODES episodes; rows are kept
#    in bench.json as they finish, so a cut-off benchmark keeps its finished rows;
# 2. the 24-variant sweep (the rest of MARL_GPU_BUDGET_S, default 600 s, less 20 s to print):
#    a learned team per bomb variant (eval/learned.py, the cpu preset's method at
#    MARL_GPU_EPISODES episodes x MARL_GPU_UPDATES updates, one seed, no scripted teams: theirs
#    are the CPU table's, the same held-out episodes on any backend), in MARL_GPU_PROCS
#    processes of interleaved variants: each environment compiles its own programs (on the
#    CPU 76 CPU s for one variant's training chunk), so processes compile side by side on the
#    host's cores while the others train; a process cut off by the budget keeps its finished
#    environments (rerunning the script resumes them);
# 3. prints the bench rows and every shard's learned.md (the README table's rows: held-out and
#    bank success, endings).
# Tested on CPU at tiny size: MARL_GPU_PRESET=tiny MARL_GPU_ENVS=bomb/base-1,bomb/bait-1
#   MARL_GPU_PROCS=2 MARL_BENCH_MAIN=64 MARL_BENCH_EPISODES=64 (not yet run on a GPU).
set -euo pipefail
out=${1:-runs/marl_gpu}
budget=${MARL_GPU_BUDGET_S:-600}
bench_s=${MARL_GPU_BENCH_S:-150}
preset=${MARL_GPU_PRESET:-cpu}
envs=${MARL_GPU_ENVS:-bomb/all}
procs=${MARL_GPU_PROCS:-8}
episodes=${MARL_GPU_EPISODES:-1024}
updates=${MARL_GPU_UPDATES:-300}
start=$SECONDS
mkdir -p "$out"
python -c "import jax; print(jax.devices(), jax.default_backend())"

MARL_BENCH_MAIN=${MARL_BENCH_MAIN:-65536} \
MARL_BENCH_EPISODES=${MARL_BENCH_EPISODES:-65536,262144,1048576} \
    timeout "$bench_s" python -m eval.bench only=[marl] out="$out/bench.json" \
    || echo "benchmark stopped at ${bench_s} s; its finished rows are kept"

left=$((budget - (SECONDS - start) - 20))
# the variants, interleaved over the processes (neighbouring variants of a family cost alike)
mapfile -t shards < <(python - "$envs" "$procs" <<'PY'
import sys
from jaxcollab.io.run import env_selection
names = [n for e in sys.argv[1].split(",") for n in env_selection("envs", e)]
k = int(sys.argv[2])
for i in range(min(k, len(names))):
    print(",".join(names[i::k]))
PY
)
# every process gets its share of the accelerator's memory, not the first one all of it
export XLA_PYTHON_CLIENT_MEM_FRACTION=${XLA_PYTHON_CLIENT_MEM_FRACTION:-$(python -c \
    "print(round(0.9 / ${#shards[@]}, 3))")}
pids=()
for i in "${!shards[@]}"; do
    timeout "$left" python eval/learned.py "envs=[${shards[$i]}]" preset="$preset" \
        updates="$updates" chunk="$((updates < 100 ? updates : 100))" ppo.seeds=1 \
        ppo.episodes="$episodes" "teams=[]" logger.mode=disabled out_dir="$out/sweep-$i" \
        > "$out/sweep-$i.log" 2>&1 &
    pids+=($!)
done
for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || echo "sweep shard $i (${shards[$i]}) stopped; see $out/sweep-$i.log"
done

python - "$out" <<'PY'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
if (out / "bench.json").is_file():
    for row in json.loads((out / "bench.json").read_text()).get("rows", []):
        print(f"{row['name']}: {row['value']:,.4g} {row['unit']}  {row.get('notes', '')}")
for shard in sorted(out.glob("sweep-*/")):
    if (shard / "learned.md").is_file():   # a finished shard: the table with the bank column
        print(shard.name, (shard / "learned.md").read_text(), sep="\n")
        continue
    for res in sorted(shard.glob("runs/**/results.json")):  # a cut-off one: its trained envs
        r = json.loads(res.read_text())
        if "success_rate" in r:
            print(f"{r['config']['env']}: held-out success {r['success_rate']:.3f} "
                  f"{r['heldout'].get('endings')}, {r['env_steps_per_second']:,.0f} env steps/s")
PY
echo "wall ${SECONDS} s (budget ${budget} s)"
