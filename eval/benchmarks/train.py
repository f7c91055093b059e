"""Training throughput of the default transformer (issue 3, item 9).

Rows: the machine's measured dense-matmul peak, then for the default model (4 blocks, 6 heads,
embedding 240) on paper-length parity prefixes (the 30-character masked view plus five
probability messages and ``=``: 46 tokens) — train steps/s, tokens/s and model-FLOPs
utilisation (MFU = 6N + 12·L·T·C FLOPs per token, nanoGPT's estimate, over the measured peak
of the same dtype, measured in the same run). float32 always; bfloat16 too when a GPU is
present. ``quick`` uses batch 64 and fewer repetitions (the paper batch is 1024).

Then the ``cpu`` preset's model (2 blocks, 4 heads, 64 wide) at its batch 256 on a round-3
prefix of the own-bits view (15 bits, two messages, ``=``: 22 tokens) with GELU and with ReLU,
and their ratio from the same run (the preset uses ReLU).
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxcollab.collab.fit import TrainConfig, make_optimizer, make_train_step
from jaxcollab.envs.parity import VOCAB
from jaxcollab.models.gpt import GPT, GPTConfig, flops_per_token, n_params

SEQ_LEN = 30 + 5 * 3 + 1  # masked view, five 2-digit messages with separators, '='
CPU_SEQ_LEN = 15 + 2 * 3 + 1  # own bits, two 2-digit messages with separators, '='
CPU_MODEL = {"n_layer": 2, "n_head": 4, "n_embd": 64}  # configs/preset/cpu.yaml


def _best_seconds(fn, repeats: int) -> float:
    jax.block_until_ready(fn())  # compile
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - start)
    return min(times)


def matmul_peak(dtype, n: int, repeats: int) -> float:
    """Measured FLOP/s of an ``n × n`` by ``n × n`` matmul in ``dtype`` (best of ``repeats``)."""
    a = jax.random.normal(jax.random.PRNGKey(0), (n, n), dtype)
    b = jax.random.normal(jax.random.PRNGKey(1), (n, n), dtype)
    matmul = jax.jit(jnp.matmul)
    return 2 * n**3 / _best_seconds(lambda: matmul(a, b), repeats)


def train_rate(batch: int, repeats: int, seq_len: int = SEQ_LEN,
               **model) -> tuple[float, GPTConfig, int]:
    """Seconds per train step of a model (default: the paper's) on ``seq_len`` tokens; returns
    (seconds, config, N non-embedding)."""
    cfg = GPTConfig(vocab_size=len(VOCAB), block_size=seq_len, **model)
    graphdef, params = nnx.split(GPT(cfg, nnx.Rngs(0)))
    tc = TrainConfig(batch_size=batch)
    tx = make_optimizer(tc)
    state = {"params": params, "opt": tx.init(params)}
    step = make_train_step(graphdef, tx, batch, dropout=False)
    rng = np.random.default_rng(0)
    tokens = jnp.asarray(rng.integers(0, len(VOCAB), (4 * batch, seq_len)), jnp.int32)
    targets = jnp.asarray(rng.integers(0, 2, 4 * batch), jnp.int32)

    def one_step():
        state["params"], state["opt"], loss = step(
            state["params"], state["opt"], jax.random.PRNGKey(0), tokens, targets
        )
        return loss

    n_non_emb = n_params(nnx.merge(graphdef, params), embeddings=False)
    return _best_seconds(one_step, repeats), cfg, n_non_emb


def run(quick: bool) -> list[dict]:
    dtypes = ["float32"] + (["bfloat16"] if jax.default_backend() == "gpu" else [])
    batch, repeats = (64, 2) if quick else (1024, 3)
    rows = []
    for dtype in dtypes:
        peak = matmul_peak(jnp.dtype(dtype), 1024 if quick else 2048, repeats)
        rows.append({"name": f"matmul peak ({dtype})", "value": peak / 1e9, "unit": "GFLOP/s",
                     "notes": "square matmul, best of repeats"})
        seconds, cfg, n_non_emb = train_rate(batch, repeats, dtype=dtype)
        tokens = batch * SEQ_LEN
        model_flops = flops_per_token(cfg, n_non_emb, SEQ_LEN) * tokens / seconds
        note = f"default model (4x6x240), batch {batch} x {SEQ_LEN} tokens, {dtype}"
        rows += [
            {"name": f"train steps/s ({dtype})", "value": 1 / seconds, "unit": "steps/s",
             "notes": note},
            {"name": f"train tokens/s ({dtype})", "value": tokens / seconds, "unit": "tokens/s",
             "notes": note},
            {"name": f"train MFU ({dtype})", "value": model_flops / peak, "unit": "fraction",
             "notes": "6N + 12LTC FLOPs/token over the measured matmul peak (same run)"},
        ]
    rates = {}
    for act in ("gelu", "relu"):
        seconds = train_rate(256, repeats + 2, CPU_SEQ_LEN, activation=act, **CPU_MODEL)[0]
        rates[act] = 1 / seconds
        rows.append({"name": f"cpu-preset train steps/s ({act})", "value": rates[act],
                     "unit": "steps/s", "notes": f"2x4x64, batch 256 x {CPU_SEQ_LEN} tokens"})
    rows.append({"name": "cpu-preset ReLU / GELU speed", "value": rates["relu"] / rates["gelu"],
                 "unit": "ratio", "notes": "same run"})
    return rows
