"""nanoGPT-style character transformer in Flax NNX (Narrowing the
Collaboration Gap, Probably, App. E).

Pre-LN blocks (LayerNorm → causal self-attention → residual, LayerNorm → GELU MLP → residual),
learned positional embeddings, a final LayerNorm and weight tying (the output projection is the
token embedding transposed). Parameters are float32; the matmuls run in the compute dtype:
``dtype="auto"`` (the default) is bfloat16 on a GPU (the paper trains in bf16) and float32
elsewhere. Attention is :func:`jax.nn.dot_product_attention`, cuDNN flash attention where it
applies (:func:`attention_implementation`). Dropout is active only when the call is given
``rngs`` (training); without them the model is deterministic.

Defaults follow the paper's nanoGPT set-up: 4 blocks, 6 heads, embedding 240.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import nnx

DTYPES = {"float32": jnp.float32, "bfloat16": jnp.bfloat16}
# GELU (tanh form) is nanoGPT's; ReLU skips the transcendental: 1.03x the step rate for the
# small CPU-preset model on XLA:CPU (eval/benchmarks/train.py measures both in one run).
ACTIVATIONS = {"gelu": jax.nn.gelu, "relu": jax.nn.relu}
ATTENTION = ("auto", "xla", "cudnn")


def resolve_dtype(name: str):
    """The compute dtype for ``name``: ``"auto"`` is bfloat16 on a GPU, float32 elsewhere."""
    if name == "auto":
        return jnp.bfloat16 if jax.default_backend() == "gpu" else jnp.float32
    return DTYPES[name]


def attention_implementation(choice: str, dtype, head_dim: int) -> str:
    """The :func:`jax.nn.dot_product_attention` backend for ``choice`` (one of ``ATTENTION``).

    ``"auto"`` takes cuDNN flash attention on a GPU when it supports the call (16-bit inputs,
    head size a multiple of 8 up to 128; cuDNN's documented limits) and XLA's einsum/softmax
    otherwise, which is also what XLA:CPU runs.
    """
    if choice != "auto":
        return choice
    cudnn_ok = jnp.dtype(dtype).itemsize == 2 and head_dim % 8 == 0 and head_dim <= 128
    return "cudnn" if jax.default_backend() == "gpu" and cudnn_ok else "xla"


@dataclasses.dataclass(frozen=True)
class GPTConfig:
    """Static model shape.

    Attributes:
        vocab_size: number of token ids V.
        block_size: context length T_max (the longest prefix plus the answer token).
        n_layer, n_head, n_embd: depth, heads, width (``n_embd % n_head == 0``).
        dropout: dropout rate on attention weights and residual branches (training only).
        bias: biases in linear layers and LayerNorms.
        dtype: compute dtype, ``"auto"`` (bfloat16 on a GPU, float32 elsewhere), ``"float32"``
            or ``"bfloat16"`` (parameters stay float32).
        activation: MLP nonlinearity, ``"gelu"`` (nanoGPT) or ``"relu"``.
        attention: ``"auto"``, ``"xla"`` or ``"cudnn"`` (:func:`attention_implementation`).

    Raises:
        ValueError: a non-positive size, ``n_embd`` not divisible by ``n_head``, dropout outside
            [0, 1), or an unknown dtype or activation.
    """

    vocab_size: int
    block_size: int
    n_layer: int = 4
    n_head: int = 6
    n_embd: int = 240
    dropout: float = 0.0
    bias: bool = True
    dtype: str = "auto"
    activation: str = "gelu"
    attention: str = "auto"

    def __post_init__(self):
        sizes = {k: getattr(self, k) for k in ("vocab_size", "block_size", "n_layer", "n_head")}
        bad = {k: v for k, v in sizes.items() if v < 1}
        if bad:
            raise ValueError(f"model sizes must be >= 1, got {bad}")
        if self.n_embd < 1 or self.n_embd % self.n_head:
            raise ValueError(
                f"n_embd={self.n_embd} must be a positive multiple of n_head={self.n_head}"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout={self.dropout} must be in [0, 1)")
        if self.dtype not in (*DTYPES, "auto"):
            raise ValueError(
                f"unknown dtype {self.dtype!r}; expected 'auto' or one of {sorted(DTYPES)}"
            )
        if self.attention not in ATTENTION:
            raise ValueError(f"unknown attention {self.attention!r}; expected one of {ATTENTION}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(
                f"unknown activation {self.activation!r}; expected one of {sorted(ACTIVATIONS)}"
            )

    @property
    def compute_dtype(self):
        return resolve_dtype(self.dtype)


def _linear(cfg: GPTConfig, d_in: int, d_out: int, rngs: nnx.Rngs, std: float = 0.02) -> nnx.Linear:
    return nnx.Linear(
        d_in,
        d_out,
        use_bias=cfg.bias,
        dtype=cfg.compute_dtype,
        kernel_init=nnx.initializers.normal(std),
        rngs=rngs,
    )


def _project(linear: nnx.Linear, x: jax.Array, cols: slice) -> jax.Array:
    """``linear(x)[..., cols]`` computing only those output columns (as ``nnx.Linear`` does:
    inputs and weights in its dtype, then the bias)."""
    kernel = linear.kernel[...][:, cols].astype(linear.dtype)
    y = x.astype(linear.dtype) @ kernel
    return y if linear.bias is None else y + linear.bias[...][cols].astype(linear.dtype)


def _layer_norm(cfg: GPTConfig, rngs: nnx.Rngs) -> nnx.LayerNorm:
    return nnx.LayerNorm(cfg.n_embd, use_bias=cfg.bias, dtype=cfg.compute_dtype, rngs=rngs)


def _dropout(x: jax.Array, rate: float, rngs: nnx.Rngs | None) -> jax.Array:
    if rngs is None or rate == 0.0:
        return x
    keep = jax.random.bernoulli(rngs.dropout(), 1.0 - rate, x.shape)
    return jnp.where(keep, x / (1.0 - rate), 0).astype(x.dtype)


def _causal_mask(n_query: int, t: int) -> jax.Array | None:
    """Bool ``[1, 1, n_query, t]``: query i (of the last ``n_query``) sees keys ``<= t − n_query
    + i``; None when nothing is masked (a single last query)."""
    if n_query == 1:
        return None
    return (jnp.arange(t)[None, :] <= jnp.arange(t - n_query, t)[:, None])[None, None]


def _attention_with_dropout(q, k, v, mask, rate: float, rngs: nnx.Rngs) -> jax.Array:
    """Training-time attention with dropout on the attention weights (nanoGPT), which
    :func:`jax.nn.dot_product_attention` does not offer: ``[B, Tq, H, D] → [B, Tq, H, D]``."""
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k, preferred_element_type=jnp.float32)
    scores = scores / jnp.sqrt(q.shape[-1])
    if mask is not None:
        scores = jnp.where(mask, scores, -jnp.inf)
    weights = _dropout(jax.nn.softmax(scores, axis=-1).astype(q.dtype), rate, rngs)
    return jnp.einsum("bhqk,bkhd->bqhd", weights, v)


class CausalSelfAttention(nnx.Module):
    """Multi-head causal self-attention: ``[B, T, C] → [B, T, C]``."""

    def __init__(self, cfg: GPTConfig, rngs: nnx.Rngs):
        self.cfg = cfg
        self.qkv = _linear(cfg, cfg.n_embd, 3 * cfg.n_embd, rngs)
        # nanoGPT: residual projections scaled by 1/sqrt(2 · n_layer)
        self.proj = _linear(cfg, cfg.n_embd, cfg.n_embd, rngs, 0.02 / (2 * cfg.n_layer) ** 0.5)

    def __call__(self, x: jax.Array, rngs: nnx.Rngs | None = None, n_query: int | None = None):
        """Attend from the last ``n_query`` positions (all when None) → ``[B, n_query, C]``."""
        b, t, c = x.shape
        cfg = self.cfg
        n_query = t if n_query is None else n_query
        heads = (cfg.n_head, c // cfg.n_head)
        if n_query == t:
            q, k, v = jnp.split(self.qkv(x).reshape(b, t, 3 * cfg.n_head, heads[1]), 3, axis=2)
        else:  # queries of the last positions only: the same weights, a third less work
            q = _project(self.qkv, x[:, t - n_query :], slice(0, c)).reshape(b, n_query, *heads)
            k, v = jnp.split(_project(self.qkv, x, slice(c, 3 * c)).reshape(
                b, t, 2 * cfg.n_head, heads[1]), 2, axis=2)
        mask = _causal_mask(n_query, t)
        if rngs is not None and cfg.dropout > 0:
            out = _attention_with_dropout(q, k, v, mask, cfg.dropout, rngs)
        else:
            impl = attention_implementation(cfg.attention, x.dtype, c // cfg.n_head)
            causal = n_query == t
            out = jax.nn.dot_product_attention(
                q, k, v, mask=None if causal else mask, is_causal=causal, implementation=impl
            )
        return _dropout(self.proj(out.reshape(b, n_query, c)), cfg.dropout, rngs)


class Block(nnx.Module):
    """Pre-LN transformer block: ``x + attn(ln(x))`` then ``x + mlp(ln(x))``."""

    def __init__(self, cfg: GPTConfig, rngs: nnx.Rngs):
        self.cfg = cfg
        self.ln1 = _layer_norm(cfg, rngs)
        self.attn = CausalSelfAttention(cfg, rngs)
        self.ln2 = _layer_norm(cfg, rngs)
        self.fc = _linear(cfg, cfg.n_embd, 4 * cfg.n_embd, rngs)
        self.out = _linear(cfg, 4 * cfg.n_embd, cfg.n_embd, rngs, 0.02 / (2 * cfg.n_layer) ** 0.5)

    def __call__(self, x: jax.Array, rngs: nnx.Rngs | None = None, n_query: int | None = None):
        """``[B, T, C] → [B, n_query, C]``: only the last ``n_query`` positions (all when None)
        are computed; earlier positions still serve as keys and values."""
        n_query = x.shape[1] if n_query is None else n_query
        x = x[:, x.shape[1] - n_query :] + self.attn(self.ln1(x), rngs, n_query)
        mlp = self.out(ACTIVATIONS[self.cfg.activation](self.fc(self.ln2(x))))
        return x + _dropout(mlp, self.cfg.dropout, rngs)


class GPT(nnx.Module):
    """Character transformer: int tokens ``[B, T]`` (T ≤ block_size) → float32 logits ``[B, T, V]``.

    With ``last_only=True`` the output is ``[B, 1, V]``, the logits at the last position only,
    and the final block skips every other position's query and MLP (the answer position is the
    only one with a loss, so training and prediction use this).

    Raises:
        ValueError: (at call) a sequence longer than ``block_size``.
    """

    def __init__(self, cfg: GPTConfig, rngs: nnx.Rngs):
        self.cfg = cfg
        kw = dict(dtype=cfg.compute_dtype, embedding_init=nnx.initializers.normal(0.02), rngs=rngs)
        self.wte = nnx.Embed(cfg.vocab_size, cfg.n_embd, **kw)
        self.wpe = nnx.Embed(cfg.block_size, cfg.n_embd, **kw)
        self.blocks = nnx.List([Block(cfg, rngs) for _ in range(cfg.n_layer)])
        self.ln_f = _layer_norm(cfg, rngs)

    def __call__(self, tokens: jax.Array, rngs: nnx.Rngs | None = None, last_only: bool = False):
        t = tokens.shape[-1]
        if t > self.cfg.block_size:
            raise ValueError(f"sequence length {t} exceeds block_size={self.cfg.block_size}")
        # One-hot matmul, not a gather: for these small vocabularies its gradient is one more
        # matmul, where a gather's is a scatter-add, slow on XLA:CPU.
        wte = self.wte.embedding[...]
        x = jax.nn.one_hot(tokens, wte.shape[0], dtype=wte.dtype) @ wte + self.wpe.embedding[:t]
        x = x.astype(self.cfg.compute_dtype)
        x = _dropout(x, self.cfg.dropout, rngs)
        for i, block in enumerate(self.blocks):
            x = block(x, rngs, 1 if last_only and i == len(self.blocks) - 1 else None)
        return self.wte.attend(self.ln_f(x)).astype(jnp.float32)  # weight tying


def n_params(model: nnx.Module, embeddings: bool = True) -> int:
    """Number of parameters; ``embeddings=False`` leaves out the positional table (nanoGPT)."""
    total = sum(x.size for x in jax.tree.leaves(nnx.state(model, nnx.Param)))
    return total if embeddings else total - model.wpe.embedding[...].size


def flops_per_token(cfg: GPTConfig, n_non_embedding: int, seq_len: int) -> float:
    """Training FLOPs per token (forward + backward), nanoGPT/PaLM estimate ``6N + 12·L·T·C``."""
    return 6.0 * n_non_embedding + 12.0 * cfg.n_layer * seq_len * cfg.n_embd
