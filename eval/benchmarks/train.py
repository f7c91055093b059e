"""Training throughput of the transformer, against a PyTorch reference in the same run (issue 18).

Rows: the machine's measured dense-matmul peak, then per shape — the ``cpu`` preset's model
(2 blocks, 4 heads, 64 wide) at batch 256 on a round-3 prefix of the own-bits view (15 bits,
two messages, ``=``: 22 tokens), and the paper's model (4 blocks, 6 heads, 240 wide) on paper
prefixes (30-character masked view, five messages, ``=``: 46 tokens) at batch 256 and 1024 —
train steps/s, tokens/s and model-FLOPs utilisation (MFU: 6N + 12·L·T·C FLOPs per token,
nanoGPT's estimate, over the measured matmul peak) for jaxcollab (:func:`make_train_chunk`, the
trainer's own multi-step call) and for the PyTorch reference (``_torch_gpt``, eager), GELU on
both sides, and their ratio. The two are timed alternately, best of several repeats each, so a
shared machine's load hits both alike. Without torch (the ``bench`` extra) its rows are skipped
with a message. Then the cpu preset with ReLU (the preset's choice) against GELU.

``quick`` uses small batches and fewer repeats. The compute dtype is the library default
(float32 on CPU, bfloat16 on a GPU).
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxcollab.collab.fit import TrainConfig, make_optimizer, make_train_chunk
from jaxcollab.envs.parity import VOCAB
from jaxcollab.models.gpt import GPT, GPTConfig, flops_per_token, n_params

SEQ_LEN = 30 + 5 * 3 + 1  # masked view, five 2-digit messages with separators, '='
CPU_SEQ_LEN = 15 + 2 * 3 + 1  # own bits, two 2-digit messages with separators, '='
CPU_MODEL = {"n_layer": 2, "n_head": 4, "n_embd": 64}  # configs/preset/cpu.yaml
PAPER_MODEL = {"n_layer": 4, "n_head": 6, "n_embd": 240}
# (label, model, tokens per row, batch, steps per timed call, timed calls per side)
SHAPES = [("cpu preset 2x4x64", CPU_MODEL, CPU_SEQ_LEN, 256, 20, 5),
          ("paper 4x6x240", PAPER_MODEL, SEQ_LEN, 256, 2, 3),
          ("paper 4x6x240", PAPER_MODEL, SEQ_LEN, 1024, 1, 3)]


def matmul_peak(dtype, n: int, repeats: int) -> float:
    """Measured FLOP/s of an ``n × n`` by ``n × n`` matmul in ``dtype`` (best of ``repeats``)."""
    a = jax.random.normal(jax.random.PRNGKey(0), (n, n), dtype)
    b = jax.random.normal(jax.random.PRNGKey(1), (n, n), dtype)
    matmul = jax.jit(jnp.matmul)
    jax.block_until_ready(matmul(a, b))
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(matmul(a, b))
        best = min(best, time.perf_counter() - start)
    return 2 * n**3 / best


def jax_steps(batch: int, seq_len: int, n_steps: int, **model):
    """A closure running ``n_steps`` jaxcollab train steps in one call (blocks until done);
    returns (closure, config, N non-embedding)."""
    cfg = GPTConfig(vocab_size=len(VOCAB), block_size=seq_len, **model)
    graphdef, params = nnx.split(GPT(cfg, nnx.Rngs(0)))
    tx = make_optimizer(TrainConfig(batch_size=batch))
    state = {"params": params, "opt": tx.init(params), "first": 1}
    chunk = make_train_chunk(graphdef, tx, batch, dropout=False)
    rng = np.random.default_rng(0)
    tokens = jnp.asarray(rng.integers(0, len(VOCAB), (4 * batch, seq_len)), jnp.int32)
    targets = jnp.asarray(rng.integers(0, 2, 4 * batch), jnp.int32)
    key = jax.random.PRNGKey(0)

    def run():
        state["params"], state["opt"], losses = chunk(
            state["params"], state["opt"], key, state["first"], tokens, targets, n_steps=n_steps
        )
        state["first"] += n_steps
        return np.asarray(losses)

    n_non_emb = n_params(nnx.merge(graphdef, params), embeddings=False)
    return run, cfg, n_non_emb


def torch_steps(batch: int, seq_len: int, n_steps: int, **model):
    """The PyTorch reference's ``n_steps`` steps as one closure, or None without torch."""
    try:
        from eval.benchmarks import _torch_gpt
    except ImportError:
        return None
    step = _torch_gpt.make_train_step(len(VOCAB), seq_len, batch, model)

    def run():
        for _ in range(n_steps):
            step()

    return run


def interleaved_best(fns: dict, rounds: int) -> dict:
    """Best wall seconds per call of each closure, calling them in turn ``rounds`` times after
    one warm-up (compile) call each."""
    for fn in fns.values():
        fn()
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def _rate_rows(label: str, seconds: float, tokens: int, flops: float, peak: float,
               note: str) -> list[dict]:
    return [
        {"name": f"{label} steps/s", "value": 1 / seconds, "unit": "steps/s", "notes": note},
        {"name": f"{label} tokens/s", "value": tokens / seconds, "unit": "tokens/s",
         "notes": note},
        {"name": f"{label} MFU", "value": flops * tokens / seconds / peak, "unit": "fraction",
         "notes": "6N + 12LTC FLOPs/token over the measured matmul peak"},
    ]


def run(quick: bool) -> list[dict]:
    dtype = GPTConfig(vocab_size=1, block_size=1).compute_dtype
    peak = matmul_peak(dtype, 1024 if quick else 2048, 2 if quick else 5)
    rows = [{"name": f"matmul peak ({jnp.dtype(dtype).name})", "value": peak / 1e9,
             "unit": "GFLOP/s", "notes": "square matmul, best of repeats"}]
    for shape, model, seq_len, batch, n_steps, rounds in SHAPES:
        batch, rounds = (min(batch, 64), 2) if quick else (batch, rounds)
        label = f"{shape} b{batch}"
        fns = {"jax": jax_steps(batch, seq_len, n_steps, **model)}
        cfg, n_non_emb = fns["jax"][1], fns["jax"][2]
        fns = {"jax": fns["jax"][0], "torch": torch_steps(batch, seq_len, n_steps, **model)}
        if fns["torch"] is None:
            print(f"train benchmark: torch not installed (pip install -e .[bench]); "
                  f"skipping the PyTorch rows for {label}")
            del fns["torch"]
        best = interleaved_best(fns, rounds)
        flops = flops_per_token(cfg, n_non_emb, seq_len)
        note = f"batch {batch} x {seq_len} tokens, GELU, {jnp.dtype(dtype).name}"
        for name, seconds in best.items():
            who = "jaxcollab" if name == "jax" else "pytorch"
            rows += _rate_rows(f"{label} {who}", seconds / n_steps, batch * seq_len, flops,
                               peak, f"{note}, best of {rounds}")
        if "torch" in best:
            rows.append({"name": f"{label} jaxcollab / pytorch", "value": best["torch"] /
                         best["jax"], "unit": "ratio", "notes": "steps/s, alternating runs"})
    relu = {act: jax_steps(256, CPU_SEQ_LEN, 20, activation=act, **CPU_MODEL)[0]
            for act in ("gelu", "relu")}
    best = interleaved_best(relu, 2 if quick else 5)
    rows.append({"name": "cpu-preset ReLU / GELU speed", "value": best["gelu"] / best["relu"],
                 "unit": "ratio", "notes": "jaxcollab, batch 256, alternating runs"})
    return rows
