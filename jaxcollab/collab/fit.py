"""Fitting one round's fresh model: optimiser, jitted multi-step training, validation, prediction.

Optimisation follows the paper (issue 3): ``optax.chain(clip_by_global_norm(1.0), adamw)`` with
β = (0.9, 0.99), weight decay 0.1 on matrices and embeddings only (nanoGPT), a linear warmup from
0 to ``lr`` over ``warmup_steps`` then cosine decay to ``min_lr`` at ``steps``. Batches are drawn
with replacement on device inside the jitted step (nanoGPT ``get_batch``), sharded over a
``data`` mesh axis, as are the validation and prediction batches; parameters are replicated.
One compiled call runs the ``eval_every`` steps
between validation passes (:func:`make_train_chunk`), so the host waits once per chunk. The
loss is the cross-entropy of the label character at the answer position only (the last prefix
position).

Seeds train together with ``fit(..., seeds=True)``: every input gains a leading seed axis
``[S]`` and the same compiled chunk, validation and prediction run under ``jax.vmap``, so the S
models step in lockstep inside one compiled call (seed s equals a fit of that seed alone to
float tolerance).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx
from jax.sharding import NamedSharding, PartitionSpec

from jaxcollab.io.phases import phase
from jaxcollab.models.gpt import GPT, GPTConfig
from jaxcollab.scale import preempt
from jaxcollab.scale.mesh import (
    DATA,
    data_mesh,
    data_sharding,
    data_size,
    replicate,
    replicated,
    to_host,
)


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


def over_seeds(fn: Callable, seeds: bool, in_axes=0) -> Callable:
    """``fn`` mapped over a leading seed axis of its arguments (``jax.vmap``) when ``seeds``,
    else ``fn`` itself."""
    return jax.vmap(fn, in_axes=in_axes) if seeds else fn


def make_train_chunk(graphdef, tx: optax.GradientTransformation, batch_size: int, dropout: bool,
                     seeds: bool = False):
    """Jitted ``(params, opt_state, key, first, tokens, targets, n_steps) → (params, opt_state,
    losses)``: steps ``first … first + n_steps − 1`` in one compiled ``lax.scan``.

    Step ``i`` draws ``batch_size`` rows of ``tokens`` int32 ``[N, T]`` / ``targets`` int32
    ``[N]`` (label token ids, on device) with replacement using ``fold_in(key, i)``; ``losses``
    float32 ``[n_steps]`` are the minibatch losses (nats). ``n_steps`` is static (one compile
    per chunk length). ``params`` and ``opt_state`` are donated: the caller's buffers are reused
    for the results and must not be read after the call. ``seeds``: the chunk is vmapped over a
    leading seed axis of every argument but ``first`` and ``n_steps`` (losses ``[S, n_steps]``).
    """
    step = _train_step(graphdef, tx, batch_size, dropout)

    def run(params, opt_state, key, first, tokens, targets, n_steps: int):
        def body(carry, i):
            params, opt_state, loss = step(*carry, jax.random.fold_in(key, i), tokens, targets)
            return (params, opt_state), loss

        (params, opt_state), losses = jax.lax.scan(
            body, (params, opt_state), first + jnp.arange(n_steps)
        )
        return params, opt_state, losses

    @partial(jax.jit, static_argnames="n_steps", donate_argnums=(0, 1))
    def chunk(params, opt_state, key, first, tokens, targets, n_steps: int):
        run_n = over_seeds(partial(run, n_steps=n_steps), seeds, (0, 0, 0, None, 0, 0))
        return run_n(params, opt_state, key, first, tokens, targets)

    return chunk


@functools.lru_cache(maxsize=64)
def _train_chunk(graphdef, tc: TrainConfig, dropout: bool, seeds: bool, sharding):
    """:func:`make_train_chunk` for :func:`fit`, one per model structure, optimisation and data
    sharding: every later fit with the same shapes (the same round of another protocol or
    trainer) reuses its compiled code instead of compiling it again."""
    del sharding  # a key only: make_train_chunk shards batches over the current data mesh
    return make_train_chunk(graphdef, make_optimizer(tc), tc.batch_size, dropout, seeds)


def eval_rows(batch: int, n: int) -> int:
    """Rows per forward-pass batch over ``n`` rows: ``min(batch, n)``, rounded up to a multiple
    of the data axis (:func:`~jaxcollab.scale.mesh.data_size`) so every device gets a share."""
    d = data_size()
    return -(-min(batch, n) // d) * d


def rows_sharding(ndim: int) -> NamedSharding:
    """The rows axis (−2) of a ``[..., rows, T]`` token batch split over the data axis."""
    return NamedSharding(data_mesh(), PartitionSpec(*(None,) * (ndim - 2), DATA))


def _batched(fn: Callable, tokens: np.ndarray, batch: int) -> np.ndarray:
    """Apply jitted ``fn`` to row batches of :func:`eval_rows` rows of ``tokens [..., N, T]``,
    each split over the data axis (the last one padded, so one compile per call site); the
    outputs' rows are axis −2 too."""
    n = tokens.shape[-2]
    batch = eval_rows(batch, n)
    sharding = rows_sharding(tokens.ndim)
    out = []
    for start in range(0, n, batch):
        chunk = tokens[..., start : start + batch, :]
        pad = batch - chunk.shape[-2]
        if pad:
            chunk = np.concatenate([chunk, np.repeat(chunk[..., -1:, :], pad, axis=-2)], axis=-2)
        rows = jax.make_array_from_callback(chunk.shape, sharding, lambda i, c=chunk: c[i])
        out.append(to_host(fn(rows))[..., : batch - pad, :])
    return np.concatenate(out, axis=-2)


@partial(jax.jit, static_argnums=(0, 1))
def _answer_outputs(graphdef, seeds: bool, params, tokens, class_tokens):
    """``(log_probs [.., B, V], class_probs [.., B, C])`` at the answer position: one program
    for validation and prediction, so each round compiles one forward pass, not two."""
    def outputs(params, tokens):
        logits = answer_logits(graphdef, params, tokens)
        return (jax.nn.log_softmax(logits, axis=-1),
                jax.nn.softmax(logits[:, class_tokens], axis=-1))

    return over_seeds(outputs, seeds)(params, tokens)


def predict_probs(graphdef, params, tokens: np.ndarray, class_tokens, batch: int,
                  seeds: bool = False) -> np.ndarray:
    """Class probabilities float32 ``[N, C]``: softmax at the answer position over the class
    characters only (mass on other characters is dropped and the rest renormalised).
    ``seeds``: params and ``tokens`` have a leading seed axis; the result is ``[S, N, C]``."""
    cls = jnp.asarray(class_tokens)
    return _batched(lambda t: _answer_outputs(graphdef, seeds, params, t, cls)[1], tokens, batch)


def mean_loss(graphdef, params, tokens: np.ndarray, targets: np.ndarray, batch: int,
              seeds: bool = False, class_tokens=(0,)) -> float | np.ndarray:
    """Mean answer-position cross-entropy (nats, over the full vocabulary) on ``tokens``;
    ``seeds``: per seed, float ``[S]`` (params, ``tokens`` and ``targets`` lead with ``S``).
    ``class_tokens``: those :func:`predict_probs` is given, so both share one compiled program
    (the loss does not depend on them)."""
    cls = jnp.asarray(class_tokens)
    logp = _batched(lambda t: _answer_outputs(graphdef, seeds, params, t, cls)[0], tokens, batch)
    picked = np.take_along_axis(logp, np.asarray(targets)[..., None], axis=-1)[..., 0]
    loss = -picked.mean(axis=-1)
    return loss if seeds else float(loss)


@jax.jit
def _keep_best(improved: jax.Array, params, best):
    """``params`` where ``improved`` (bool, one per leading seed entry or a scalar), else
    ``best``; always fresh buffers (the next chunk donates ``params``)."""
    def pick(new, old):
        return jnp.where(improved.reshape(improved.shape + (1,) * (new.ndim - improved.ndim)),
                         new, old)

    return jax.tree.map(pick, params, best)


@dataclasses.dataclass
class FitResult:
    """The best-validation parameters of one round and how training went.

    Attributes:
        graphdef, params: the model (``nnx.merge(graphdef, params)``).
        best_val_loss: answer cross-entropy (nats) on the validation rows; best_step: its step.
        final_train_loss: last minibatch loss (nats). seconds: wall time of the step loop.
        With ``fit(..., seeds=True)`` the params lead with the seed axis and the three numbers
        are arrays ``[S]``.
    """

    graphdef: object
    params: object
    best_val_loss: float | np.ndarray
    best_step: int | np.ndarray
    final_train_loss: float | np.ndarray
    seconds: float


def _fresh(model_cfg: GPTConfig, tx: optax.GradientTransformation, key: jax.Array, seeds: bool):
    """``(graphdef, params, opt_state)`` of a new model initialised from ``key`` (one per seed
    when ``seeds``, initialised together under ``jax.vmap``)."""
    def init(key):
        return nnx.split(GPT(model_cfg, nnx.Rngs(key)))

    if seeds:  # initialised together; the structure from an abstract model
        graphdef = nnx.graphdef(nnx.eval_shape(lambda: GPT(model_cfg, nnx.Rngs(0))))
        params = jax.vmap(lambda key: init(key)[1])(key)
    else:
        graphdef, params = init(key)
    return graphdef, params, over_seeds(tx.init, seeds)(params)


def _compile_or_stop(chunk_fn, args: tuple, n: int, loop: dict,
                     checkpoint: preempt.TrainState, done: int, resumed: int) -> None:
    """Compile the training chunk ahead of its call, so that a SIGTERM / SIGINT need not wait
    for XLA (minutes for a large model): on a signal the compile is abandoned
    (:func:`jaxcollab.scale.preempt.interruptible`) and the loop's state, which no step of the
    chunk has touched yet (its buffers are donated only when the chunk runs), is saved unless
    no step ran since it was restored (``resumed``: the step it was at) or the fit started.
    The call that follows reuses the compiled executable."""
    saved = (f"training state after step {done} in {checkpoint.path}" if done else
             "nothing yet (step 0 of the round)")
    try:
        preempt.interruptible(lambda: chunk_fn.lower(*args, n_steps=n).compile(), saved=saved)
    except preempt.Preempted:
        if done != resumed:
            checkpoint.save(loop)
        raise


def precompile(model_cfg: GPTConfig, tc: TrainConfig, n_fit: int, seq_len: int,
               predict_rows: Sequence[int], seeds: int = 0, class_tokens=(0,)) -> None:
    """Compile the programs of a :func:`fit` and its :func:`predict_probs` before they are
    needed (e.g. on a worker thread while an earlier round trains): the training chunk of each
    chunk length, the kept-best select, and the forward pass of each prediction batch. Their
    later calls with arrays of these shapes and shardings reuse the compiled code, so the
    results are those of compiling at the call.

    Args:
        n_fit: training rows (``tokens [n_fit, seq_len]`` of the fit; the validation rows are
            among ``predict_rows``). seq_len: prefix tokens per row.
        predict_rows: the row counts the forward pass will see (validation, prediction sets);
            each gives a batch of :func:`eval_rows` rows.
        seeds: S > 0 for a fit with ``seeds=True`` over S seeds, else 0.
        class_tokens: as in :func:`fit`.
    """
    graphdef, abstract = nnx.split(nnx.eval_shape(lambda: GPT(model_cfg, nnx.Rngs(0))))
    lead = (seeds,) if seeds else ()
    rep = replicated()

    def shaped(shape, dtype, sharding=rep) -> jax.ShapeDtypeStruct:
        return jax.ShapeDtypeStruct(lead + tuple(shape), dtype, sharding=sharding)

    tx = make_optimizer(tc)
    params, opt_state = jax.tree.map(lambda x: shaped(x.shape, x.dtype),
                                     (abstract, jax.eval_shape(tx.init, abstract)))
    key = jnp.zeros(lead + jax.random.PRNGKey(0).shape, jnp.uint32)
    tokens, targets = shaped((n_fit, seq_len), jnp.int32), shaped((n_fit,), jnp.int32)
    chunk_fn = _train_chunk(graphdef, tc, model_cfg.dropout > 0, bool(seeds), data_sharding())
    for n in sorted({min(tc.eval_every, tc.steps - done)
                     for done in range(0, tc.steps, tc.eval_every)}):
        chunk_fn.lower(params, opt_state, key, 1, tokens, targets, n_steps=n).compile()
    _keep_best.lower(jnp.zeros(lead, bool), params, params).compile()
    cls = jnp.asarray(class_tokens)
    for rows in sorted({eval_rows(tc.eval_batch, n) for n in predict_rows}):
        _answer_outputs.lower(graphdef, bool(seeds), params,
                              shaped((rows, seq_len), jnp.int32, rows_sharding(len(lead) + 2)),
                              cls).compile()


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
    seeds: bool = False,
    class_tokens=(0,),
) -> FitResult:
    """Train a **fresh** model (initialised from ``key``) and keep its best-validation params.

    Args:
        tokens: int ``[N, T]`` prefixes; targets: int ``[N]`` label token ids.
        val_tokens, val_targets: held-out rows of the same form.
        on_step: called for every step with (1-based step, minibatch loss in nats; with seeds,
            its mean over seeds), a chunk of ``eval_every`` steps at a time (after that chunk
            has run).
        checkpoint_dir: where a SIGTERM / SIGINT between chunks saves the training state
            (:class:`jaxcollab.scale.preempt.TrainState`) before exiting; a state found there
            is resumed, so an interrupted fit ends with the same parameters as an uninterrupted
            one; a signal while the model is built or a chunk compiles stops at once
            (:func:`jaxcollab.scale.preempt.interruptible`). None: signals are not intercepted
            here (an outer :func:`~jaxcollab.scale.preempt.guard` still stops the model build).
        seeds: train S models at once: ``key`` ``[S]`` and each data array gain a leading seed
            axis, every seed keeps its own best-validation params (see :class:`FitResult`).
        class_tokens: the class token ids the caller will :func:`predict_probs` with, so
            validation and prediction share one compiled forward pass (:func:`mean_loss`).

    Raises:
        jaxcollab.scale.preempt.Preempted: a signal arrived (state saved to ``checkpoint_dir``).
    """
    k_init, k_steps = (jax.vmap(jax.random.split, out_axes=1)(key) if seeds
                       else jax.random.split(key))
    tx = make_optimizer(tc)
    # many small compiles on a cold cache: on a worker thread under a guard, so a signal need
    # not wait for them (nothing to save yet)
    graphdef, params, opt_state = preempt.interruptible(_fresh, model_cfg, tx, k_init, seeds,
                                                        saved="nothing yet (a fresh model)")
    # Replicated from the start: the step returns them replicated, and a changed input
    # sharding on step 2 would compile the whole step a second time.
    params, opt_state = jax.device_put((params, opt_state), replicated())
    chunk_fn = _train_chunk(graphdef, tc, model_cfg.dropout > 0, seeds, data_sharding())
    tokens_d, targets_d = replicate((np.asarray(tokens, np.int32), np.asarray(targets, np.int32)))
    shape = np.shape(targets)[:-1]  # (S,) with seeds, else ()
    # best-validation params, their loss and step, steps done, last minibatch loss
    loop = dict(params=params, opt_state=opt_state, best=jax.tree.map(jnp.copy, params),
                best_val=np.full(shape, np.inf), best_step=np.zeros(shape, np.int32),
                done=np.int32(0), last_loss=np.full(shape, np.nan, np.float32))
    saved = None if checkpoint_dir is None else preempt.TrainState(checkpoint_dir)
    if saved is not None and saved.exists():
        loop = saved.restore(loop)
    resumed = int(loop["done"])  # the step the fit starts (or resumes) at
    start = time.perf_counter()
    compiled: set[int] = set()  # chunk lengths compiled in this fit
    with preempt.guard() if saved is not None else contextlib.nullcontext():
        while (done := int(loop["done"])) < tc.steps:  # the host syncs once per chunk
            n = min(tc.eval_every, tc.steps - done)
            args = (loop["params"], loop["opt_state"], k_steps, done + 1, tokens_d, targets_d)
            if saved is not None and n not in compiled:
                _compile_or_stop(chunk_fn, args, n, loop, saved, done, resumed)
                compiled.add(n)
            with phase("training steps"):
                loop["params"], loop["opt_state"], losses = chunk_fn(*args, n_steps=n)
                losses = np.asarray(losses)
            for j, loss in enumerate(losses.reshape(-1, n).mean(0), done + 1):
                on_step(j, float(loss))
            with phase("evaluation"):
                val = mean_loss(graphdef, loop["params"], val_tokens, val_targets, tc.eval_batch,
                                seeds, class_tokens)
            improved = (np.asarray(loop["best_step"]) == 0) | (val < loop["best_val"])
            loop.update(best=_keep_best(jnp.asarray(improved), loop["params"], loop["best"]),
                        best_val=np.where(improved, val, loop["best_val"]),
                        best_step=np.where(improved, done + n, loop["best_step"]).astype(np.int32),
                        done=np.int32(done + n), last_loss=losses[..., -1])
            if saved is not None and (signum := preempt.requested()):
                saved.save(loop)
                preempt.stop(signum, f"training state after step {done + n} in {saved.path}")
    if saved is not None:
        saved.remove()
    seconds = time.perf_counter() - start
    number = np.asarray if seeds else lambda x: np.asarray(x).item()
    return FitResult(graphdef, loop["best"], number(loop["best_val"]), number(loop["best_step"]),
                     number(loop["last_loss"]), seconds)
