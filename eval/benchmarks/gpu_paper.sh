#!/usr/bin/env bash
# Paper-scale training on one GPU (issue 18): not yet run on a GPU.
#   bash eval/benchmarks/gpu_paper.sh [out_dir]        (from the repository root)
# 1. the train benchmark (bf16 by default on a GPU; jaxcollab vs PyTorch if torch is installed):
#    steps/s, tokens/s and MFU at the paper shapes;
# 2. the paper preset of parity_separation (both protocols, 5 rounds x 2,000 iterations x
#    batch 1024): wall time, and tokens/s and MFU over its training steps;
# 3. one 50,000-iteration maze round (paper maze preset: 4x6x240, batch 1024, round 1's
#    prefixes): wall time, tokens/s, MFU.
# MFU = (6N + 12·L·T·C) FLOPs/token x tokens/s over the dense bf16 peak of an H200 (989 TFLOP/s,
# NVIDIA's datasheet figure without sparsity). Aim (issue 18): parity < 5 min, maze round < 10.
set -euo pipefail
out=${1:-runs/gpu_paper}
mkdir -p "$out"
python -c "import jax; print(jax.devices(), jax.default_backend())"

python eval/bench.py only=[train] out="$out/bench.json"

python train/collab.py experiment=parity_separation preset=paper out_dir="$out/parity"
python - "$out/parity" <<'EOF'
import json, sys
from pathlib import Path
import numpy as np
from flax import nnx
from jaxcollab.models.gpt import GPT, GPTConfig, flops_per_token, n_params
run = Path(sys.argv[1])
res = json.loads((run / "results.json").read_text())
cfg = res["config"]
m = cfg["model"]
tokens = flops = seconds = 0.0
for metrics_file in sorted(run.glob("*/round_*/metrics.json")):
    r = json.loads(metrics_file.read_text())
    if r.get("shared_from"):
        continue
    width = np.load(metrics_file.parent / "round.npz")["test_messages"].shape[1]
    seq = 30 + (r["round"] - 1) * (1 + width) + 1  # view, (separator, message) per round, '='
    n = cfg["train"]["steps"] * cfg["train"]["batch_size"] * seq
    c = GPTConfig(vocab_size=14, block_size=seq, **{k: m[k] for k in ("n_layer", "n_head", "n_embd")})
    n_non_emb = n_params(GPT(c, nnx.Rngs(0)), embeddings=False)
    tokens, seconds = tokens + n, seconds + r["train_seconds"]
    flops += n * flops_per_token(c, n_non_emb, seq)
print(f"parity paper: wall {res['wall_seconds']:.0f} s, training {seconds:.0f} s, "
      f"{tokens / seconds:,.0f} tokens/s, MFU {flops / seconds / 989e12:.3f} (vs 989 TFLOP/s)")
EOF

python - "$out/maze" <<'EOF'
import sys, time
import jax
from omegaconf import OmegaConf
from jaxcollab.collab.fit import TrainConfig
from jaxcollab.collab.maze_task import maze_task
from jaxcollab.collab.messages import MessageCodec
from jaxcollab.collab.trainer import RoundTrainer
from flax import nnx
from jaxcollab.models.gpt import GPT, flops_per_token, n_params
exp = OmegaConf.load("configs/experiment/maze_messages.yaml")["scale"]["paper"]
task_cfg = {**OmegaConf.to_container(OmegaConf.load("configs/task/maze.yaml")),
            "n_examples": exp["n_examples"], "view": "masked"}
task = maze_task(task_cfg, jax.random.PRNGKey(0))
codec = MessageCodec("probability", task.vocab, task.class_chars)
tc = TrainConfig(**exp["train"])
trainer = RoundTrainer(task, codec, dict(exp["model"]), tc, 1, sys.argv[1], jax.random.PRNGKey(1))
start = time.perf_counter()
info = trainer.run()[0]
wall = time.perf_counter() - start
c = trainer.model_cfg
seq = trainer.prefixes(1, slice(0, 1), []).shape[1]
tokens = tc.steps * tc.batch_size * seq
flops = tokens * flops_per_token(c, n_params(GPT(c, nnx.Rngs(0)), embeddings=False), seq)
print(f"maze round ({tc.steps} its x {tc.batch_size} x {seq} tokens): wall {wall:.0f} s, "
      f"training {info['train_seconds']:.0f} s, {tokens / info['train_seconds']:,.0f} tokens/s, "
      f"MFU {flops / info['train_seconds'] / 989e12:.3f}, test accuracy {info['test_accuracy']:.4f}")
EOF
