"""Calibration benchmarks: bias model (JAX vs NumPy), per-round calibrator fits, binned ECE."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from eval.benchmarks._timing import best_time
from jaxcollab.collab.bias import bias_conversation
from jaxcollab.collab.calibration import fit_rounds
from jaxcollab.collab.metrics import self_calibration_error

N_ROUNDS = 5


def numpy_bias(log_q: np.ndarray, beta: float, gamma: float) -> np.ndarray:
    """Reference NumPy implementation of :func:`jaxcollab.collab.bias.bias_conversation`."""
    log_r = np.empty_like(log_q)
    prev = np.full(log_q.shape[1:], -np.log(log_q.shape[-1]), log_q.dtype)
    for k in range(log_q.shape[0]):
        z = beta * log_q[k] + gamma * prev
        prev = log_r[k] = z - np.logaddexp.reduce(z, axis=-1, keepdims=True)
    return log_r


def run(quick: bool) -> list[dict]:
    n_bias, n_fit = (65_536, 16_384) if quick else (1_048_576, 131_072)
    key_q, key_y = jax.random.split(jax.random.key(0))
    q = jax.random.uniform(key_q, (N_ROUNDS, n_bias), minval=0.02, maxval=0.98)
    log_q = jnp.log(jnp.stack([1 - q, q], -1))
    bias = jax.jit(bias_conversation)
    t_jax = best_time(lambda: bias(log_q, 2.0, 0.5))
    log_q_np = np.asarray(log_q)
    t_np = best_time(lambda: numpy_bias(log_q_np, 2.0, 0.5), repeats=3)
    log_r = bias(log_q, 2.0, 0.5)[:, :n_fit]
    onehot = jax.nn.one_hot(jax.random.bernoulli(key_y, q[:, :n_fit]).astype(jnp.int32), 2)
    t_fit = best_time(lambda: fit_rounds("conversation", log_r, onehot).weights, repeats=3)
    p, y = q[0], jax.random.bernoulli(key_y, q[0]).astype(jnp.float32)
    t_ece = best_time(lambda: self_calibration_error(p, y))
    reports = N_ROUNDS * n_bias
    return [
        {"name": f"bias model reports/s, JAX jit, {N_ROUNDS} rounds × {n_bias:,}",
         "value": reports / t_jax, "unit": "reports/s"},
        {"name": f"bias model reports/s, NumPy, {N_ROUNDS} rounds × {n_bias:,}",
         "value": reports / t_np, "unit": "reports/s"},
        {"name": "bias model JAX / NumPy speed ratio", "value": t_np / t_jax, "unit": "x",
         "notes": "same run, best of 5 / 3"},
        {"name": f"conversation calibrators, {N_ROUNDS} rounds × {n_fit:,} examples",
         "value": t_fit, "unit": "s", "notes": "30 Newton steps, after compilation"},
        {"name": f"binned ECE, {n_bias:,} forecasts", "value": n_bias / t_ece,
         "unit": "forecasts/s"},
    ]
