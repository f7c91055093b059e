"""Fitting one round's fresh model: optimiser, jitted multi-step training, validation, prediction.

Optimisation follows the paper (issue 3): ``optax.chain(clip_by_global_norm(1.0), adamw)`` with
β = (0.9, 0.99), weight decay 0.1 on matrices and embeddings only (nanoGPT), a linear warmup from
0 to ``lr`` over ``warmup_steps`` then cosine decay to ``min_lr`` at ``steps``. Batches are drawn
with replacement on device inside the jitted step (nanoGPT ``get_batch``), sharded over a
``data`` mesh axis; parameters are replicated. One compiled call runs the ``eval_every`` steps
between validation passes (:func:`make_train_chunk`), so the host waits once per chunk. The
loss is the cross-entropy of the label character at the answer position only (the last prefix
position).
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from jaxcollab.models.gpt import GPT, GPTConfig
from jaxcollab.scale import preempt
from jaxcollab.scale.mesh import data_sharding, replicate, replicated


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Per-round optimisation settings (defaults: the paper's parity set-up).

    Attributes:
        steps: optimiser steps per round. batch_size: examples per step.
        lr, min_lr: peak and final learning rate. warmup_steps: linear warmup length.
        weight_decay, beta1, beta2, grad_clip: AdamW and global-norm clipping.
        eval_every: steps between validation passes (best-validation params are kept), each
            run as one compiled call.
        val_examples: held-out examples per round (taken from the round's own chunk).
        eval_batch: examples per forward pass when validating or predicting.

    Raises:
        ValueError: a non-positive count or rate, ``min_lr > lr``, or warmup beyond ``steps``.
    """

    steps: int = 2000
    batch_size: int = 1024
    lr: float = 1e-4
    min_lr: float = 1e-5
    warmup_steps: int = 100
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.99
    grad_clip: float = 1.0
    eval_every: int = 100
    val_examples: int = 4096
    eval_batch: int = 4096

    def __post_init__(self):
        counts = ("steps", "batch_size", "eval_every", "val_examples", "eval_batch")
        bad = {k: getattr(self, k) for k in counts if getattr(self, k) < 1}
        if bad or not 0 < self.min_lr <= self.lr or not 0 <= self.warmup_steps <= self.steps:
            raise ValueError(
                f"bad train config: need positive {counts} (bad: {bad}), 0 < min_lr={self.min_lr} "
                f"<= lr={self.lr}, 0 <= warmup_steps={self.warmup_steps} <= steps={self.steps}"
            )


def make_optimizer(tc: TrainConfig) -> optax.GradientTransformation:
    """Clip → AdamW with warmup + cosine schedule; decay only on parameters with ndim ≥ 2."""
    schedule = optax.warmup_cosine_decay_schedule(
        0.0, tc.lr, tc.warmup_steps, tc.steps, end_value=tc.min_lr
    )
    return optax.chain(
        optax.clip_by_global_norm(tc.grad_clip),
        optax.adamw(
            schedule,
            b1=tc.beta1,
            b2=tc.beta2,
            weight_decay=tc.weight_decay,
            mask=lambda params: jax.tree.map(lambda p: p.ndim >= 2, params),
        ),
    )


def answer_logits(graphdef, params, tokens: jax.Array, rngs: nnx.Rngs | None = None) -> jax.Array:
    """Logits float32 ``[B, V]`` at the answer position (the last of ``tokens [B, T]``)."""
    return nnx.merge(graphdef, params)(tokens, rngs, last_only=True)[:, -1]


def _train_step(graphdef, tx: optax.GradientTransformation, batch_size: int, dropout: bool):
    """One optimiser step ``(params, opt_state, key, tokens, targets) → (params, opt_state,
    loss)`` (traced inside :func:`make_train_chunk`)."""
    batch_sharding = data_sharding()

    def loss_fn(params, key, tokens, targets):
        rngs = nnx.Rngs(dropout=key) if dropout else None
        logits = answer_logits(graphdef, params, tokens, rngs)
        return optax.softmax_cross_entropy_with_integer_labels(logits, targets).mean()

    def step(params, opt_state, key, tokens, targets):
        k_batch, k_drop = jax.random.split(key)
        idx = jax.random.randint(k_batch, (batch_size,), 0, tokens.shape[0])
        batch = jax.lax.with_sharding_constraint(tokens[idx], batch_sharding)
        loss, grads = jax.value_and_grad(loss_fn)(params, k_drop, batch, targets[idx])
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return step


def make_train_chunk(graphdef, tx: optax.GradientTransformation, batch_size: int, dropout: bool):
    """Jitted ``(params, opt_state, key, first, tokens, targets, n_steps) → (params, opt_state,
    losses)``: steps ``first … first + n_steps − 1`` in one compiled ``lax.scan``.

    Step ``i`` draws ``batch_size`` rows of ``tokens`` int32 ``[N, T]`` / ``targets`` int32
    ``[N]`` (label token ids, on device) with replacement using ``fold_in(key, i)``; ``losses``
    float32 ``[n_steps]`` are the minibatch losses (nats). ``n_steps`` is static (one compile
    per chunk length). ``params`` and ``opt_state`` are donated: the caller's buffers are reused
    for the results and must not be read after the call.
    """
    step = _train_step(graphdef, tx, batch_size, dropout)

    @partial(jax.jit, static_argnames="n_steps", donate_argnums=(0, 1))
    def chunk(params, opt_state, key, first, tokens, targets, n_steps: int):
        def body(carry, i):
            params, opt_state, loss = step(*carry, jax.random.fold_in(key, i), tokens, targets)
            return (params, opt_state), loss

        (params, opt_state), losses = jax.lax.scan(
            body, (params, opt_state), first + jnp.arange(n_steps)
        )
        return params, opt_state, losses

    return chunk


def _batched(fn: Callable, tokens: np.ndarray, batch: int) -> np.ndarray:
    """Apply jitted ``fn`` to row batches of ``min(batch, N)`` rows (last one padded, so one
    compile per call site)."""
    batch = min(batch, len(tokens))
    out = []
    for start in range(0, len(tokens), batch):
        chunk = tokens[start : start + batch]
        pad = batch - len(chunk)
        if pad:
            chunk = np.concatenate([chunk, np.repeat(chunk[-1:], pad, axis=0)])
        out.append(np.asarray(fn(jnp.asarray(chunk)))[: batch - pad])
    return np.concatenate(out)


@partial(jax.jit, static_argnums=0)
def _class_probs(graphdef, params, tokens, class_tokens):
    return jax.nn.softmax(answer_logits(graphdef, params, tokens)[:, class_tokens], axis=-1)


@partial(jax.jit, static_argnums=0)
def _log_probs(graphdef, params, tokens):
    return jax.nn.log_softmax(answer_logits(graphdef, params, tokens), axis=-1)


def predict_probs(graphdef, params, tokens: np.ndarray, class_tokens, batch: int) -> np.ndarray:
    """Class probabilities float32 ``[N, C]``: softmax at the answer position over the class
    characters only (mass on other characters is dropped and the rest renormalised)."""
    cls = jnp.asarray(class_tokens)
    return _batched(lambda t: _class_probs(graphdef, params, t, cls), tokens, batch)


def mean_loss(graphdef, params, tokens: np.ndarray, targets: np.ndarray, batch: int) -> float:
    """Mean answer-position cross-entropy (nats, over the full vocabulary) on ``tokens``."""
    logp = _batched(lambda t: _log_probs(graphdef, params, t), tokens, batch)
    return float(-logp[np.arange(len(targets)), targets].mean())


@dataclasses.dataclass
class FitResult:
    """The best-validation parameters of one round and how training went.

    Attributes:
        graphdef, params: the model (``nnx.merge(graphdef, params)``).
        best_val_loss: answer cross-entropy (nats) on the validation rows; best_step: its step.
        final_train_loss: last minibatch loss (nats). seconds: wall time of the step loop.
    """

    graphdef: object
    params: object
    best_val_loss: float
    best_step: int
    final_train_loss: float
    seconds: float


def fit(
    model_cfg: GPTConfig,
    tc: TrainConfig,
    tokens: np.ndarray,
    targets: np.ndarray,
    val_tokens: np.ndarray,
    val_targets: np.ndarray,
    key: jax.Array,
    on_step: Callable[[int, float], None] = lambda step, loss: None,
    checkpoint_dir: str | Path | None = None,
) -> FitResult:
    """Train a **fresh** model (initialised from ``key``) and keep its best-validation params.

    Args:
        tokens: int ``[N, T]`` prefixes; targets: int ``[N]`` label token ids.
        val_tokens, val_targets: held-out rows of the same form.
        on_step: called for every step with (1-based step, minibatch loss in nats), a chunk of
            ``eval_every`` steps at a time (after that chunk has run).
        checkpoint_dir: where a SIGTERM / SIGINT between chunks saves the training state
            (:class:`jaxcollab.scale.preempt.TrainState`) before exiting; a state found there
            is resumed, so an interrupted fit ends with the same parameters as an uninterrupted
            one. None: signals are not intercepted.

    Raises:
        jaxcollab.scale.preempt.Preempted: a signal arrived (state saved to ``checkpoint_dir``).
    """
    k_init, k_steps = jax.random.split(key)
    graphdef, params = nnx.split(GPT(model_cfg, nnx.Rngs(k_init)))
    tx = make_optimizer(tc)
    # Replicated from the start: the step returns them replicated, and a changed input
    # sharding on step 2 would compile the whole step a second time.
    params, opt_state = jax.device_put((params, tx.init(params)), replicated())
    chunk_fn = make_train_chunk(graphdef, tx, tc.batch_size, model_cfg.dropout > 0)
    tokens_d, targets_d = replicate((np.asarray(tokens, np.int32), np.asarray(targets, np.int32)))
    # best-validation params, their loss and step, steps done, last minibatch loss
    loop = dict(params=params, opt_state=opt_state, best=jax.tree.map(jnp.copy, params),
                best_val=np.float64(np.inf), best_step=np.int32(0), done=np.int32(0),
                last_loss=np.float32(np.nan))
    saved = None if checkpoint_dir is None else preempt.TrainState(checkpoint_dir)
    if saved is not None and saved.exists():
        loop = saved.restore(loop)
    start = time.perf_counter()
    with preempt.guard() if saved is not None else contextlib.nullcontext():
        while (done := int(loop["done"])) < tc.steps:  # the host syncs once per chunk
            n = min(tc.eval_every, tc.steps - done)
            loop["params"], loop["opt_state"], losses = chunk_fn(
                loop["params"], loop["opt_state"], k_steps, done + 1, tokens_d, targets_d,
                n_steps=n)
            losses = np.asarray(losses)
            for j, loss in enumerate(losses, done + 1):
                on_step(j, float(loss))
            val = mean_loss(graphdef, loop["params"], val_tokens, val_targets, tc.eval_batch)
            if int(loop["best_step"]) == 0 or val < loop["best_val"]:
                # copied: the next chunk donates these buffers
                loop.update(best=jax.tree.map(jnp.copy, loop["params"]), best_val=np.float64(val),
                            best_step=np.int32(done + n))
            loop.update(done=np.int32(done + n), last_loss=np.float32(losses[-1]))
            if saved is not None and (signum := preempt.requested()):
                saved.save(loop)
                preempt.stop(signum, f"training state after step {done + n} in {saved.path}")
    if saved is not None:
        saved.remove()
    seconds = time.perf_counter() - start
    return FitResult(graphdef, loop["best"], float(loop["best_val"]), int(loop["best_step"]),
                     float(loop["last_loss"]), seconds)
