"""Biased probability reports (Narrowing the Collaboration Gap, Probably, Equation 1;
the log-linear form is our choice).

A speaker whose true posterior is ``q_k`` sends the report ``r_k`` with

    log r_k = β · log q_k + γ · log r_{k−1} − log Z          (vector form, Z normalises)
    logit r_k = β · logit q_k + γ · logit r_{k−1}              (binary form, the same for C = 2)

β ≠ 1 is *global miscalibration* (β > 1 over-confident, β < 1 under-confident) and γ > 0 is
*sycophantic anchoring* toward the previous report. ``r_0`` is uniform, so round 1 is only
miscalibrated. The model is applied to each probability message before it is appended to the
next agent's prefix; β = 1, γ = 0 is the identity.

All functions are pure, jit- and vmap-safe; β and γ are dynamic (changing them never
recompiles). Probabilities are floored at ``eps`` before the log so that a quantised ``0``
entry (a two-digit message ``00``) stays finite.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax.scipy.special import logit

#: Floor applied to probabilities before taking logs (a report of 0 becomes ``eps``).
EPS = 1e-4


def validate_bias(beta: float, gamma: float) -> tuple[float, float]:
    """Check a bias configuration and return ``(beta, gamma)`` as floats.

    Raises:
        ValueError: naming the bad value if β is not a finite number > 0 or γ is not finite.
    """
    beta, gamma = float(beta), float(gamma)
    if not math.isfinite(beta) or beta <= 0:
        raise ValueError(f"bias.beta={beta} is invalid; expected a finite number > 0")
    if not math.isfinite(gamma):
        raise ValueError(f"bias.gamma={gamma} is invalid; expected a finite number")
    return beta, gamma


def safe_log(probs: jax.Array, eps: float = EPS) -> jax.Array:
    """Log-probabilities ``[..., C]`` of probability vectors ``[..., C]``, floored at ``eps``.

    Entries are clipped to ``[eps, 1]`` and the result is renormalised, so it is a valid
    log-probability vector even when ``probs`` has exact zeros.
    """
    logp = jnp.log(jnp.clip(probs, eps, 1.0))
    return jax.nn.log_softmax(logp, axis=-1)


def binary_log_probs(q: jax.Array, eps: float = EPS) -> jax.Array:
    """Probability of class 1 ``[...]`` → log-probability vectors ``[..., 2]`` (order 0, 1)."""
    return safe_log(jnp.stack([1.0 - q, q], axis=-1), eps)


def bias_report(log_q: jax.Array, log_r_prev: jax.Array, beta, gamma) -> jax.Array:
    """One biased report in vector form: ``log r_k`` ``[..., C]`` (normalised log-probabilities).

    Args:
        log_q: log true posterior ``[..., C]``.
        log_r_prev: log of the previous report ``[..., C]`` (uniform for round 1).
        beta, gamma: scalars (floats or 0-d arrays), see the module docstring.
    """
    return jax.nn.log_softmax(beta * log_q + gamma * log_r_prev, axis=-1)


def bias_report_binary(q: jax.Array, r_prev: jax.Array, beta, gamma) -> jax.Array:
    """One biased report in binary logit form: ``r_k = σ(β logit q_k + γ logit r_{k−1})``.

    Args:
        q: true posterior P(Y = 1), float ``[...]`` in (0, 1).
        r_prev: previous report P(Y = 1), float ``[...]`` (``0.5`` for round 1).

    Returns:
        The report P(Y = 1), float ``[...]``. Equals ``exp(bias_report(...))[..., 1]``.
    """
    return jax.nn.sigmoid(beta * logit(q) + gamma * logit(r_prev))


def bias_conversation(log_q: jax.Array, beta, gamma) -> jax.Array:
    """Biased reports of a whole conversation, starting from a uniform ``r_0``.

    Args:
        log_q: log true posteriors of rounds 1..K, float ``[K, ..., C]`` (round axis first).

    Returns:
        ``log r`` float ``[K, ..., C]``; round k anchors on the *report* of round k − 1.
    """
    n_classes = log_q.shape[-1]
    log_r0 = jnp.full(log_q.shape[1:], -jnp.log(n_classes), log_q.dtype)

    def one_round(log_r_prev, log_q_k):
        log_r = bias_report(log_q_k, log_r_prev, beta, gamma)
        return log_r, log_r

    _, log_r = jax.lax.scan(one_round, log_r0, log_q)
    return log_r
