"""Calibration metrics of probability messages (Narrowing the Collaboration Gap, Probably,
Definition 2.3).

Both metrics score an *event probability* ``p`` against the event's outcome ``y``:

* two classes — the event is ``Y = 1`` and ``p = r[..., 1]``;
* more classes (top-label) — the event is "the arg-max class of ``r_k`` is the label" and
  ``p = r_k[ĉ]``; the conversation metric reads the previous report at the same class,
  ``r_{k−1}[ĉ]``.

**Self-calibration error** (binned ECE): equal-width bins on ``p`` in [0, 1];
``ECE = Σ_bins |Σ_{i∈bin} w_i (y_i − p_i)| / Σ_i w_i``.
**Conversation-calibration error**: the same sum over the ``n_bins × n_bins`` cells of the joint
bins of ``(r_k, r_{k−1})``. A conversation-calibrated forecaster (``E[Y | r_k, r_{k−1}] = r_k``)
is self-calibrated (``E[Y | r_k] = r_k``) by the tower rule, and with bins the error can only
grow when bins are split: ``ECE ≤ CCE``.

Outcomes may be soft (``y = E[Y | …]`` in [0, 1]) and examples weighted, so exact expectations
over an enumerated population are the same computation as sample means. All functions are
jittable with ``n_bins`` static.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp


def event_probs(probs: jax.Array, labels: jax.Array, probs_prev: jax.Array | None = None):
    """Event probabilities and outcomes of probability vectors (see the module docstring).

    Args:
        probs: ``[N, C]`` round-k messages (probabilities), C ≥ 2.
        labels: ``[N]`` int class labels, or ``[N, C]`` soft targets (rows sum to 1).
        probs_prev: optional ``[N, C]`` round-(k−1) messages.

    Returns:
        ``(p, y, p_prev)`` float ``[N]`` each (``p_prev`` is ``None`` without ``probs_prev``).
    """
    n_classes = probs.shape[-1]
    targets = labels if labels.ndim == 2 else jax.nn.one_hot(labels, n_classes)
    cls = jnp.ones(probs.shape[0], jnp.int32) if n_classes == 2 else jnp.argmax(probs, -1)
    pick = partial(jnp.take_along_axis, indices=cls[:, None], axis=-1)
    p_prev = None if probs_prev is None else pick(probs_prev)[:, 0]
    return pick(probs)[:, 0], pick(targets)[:, 0], p_prev


def bin_index(p: jax.Array, n_bins: int) -> jax.Array:
    """Equal-width bin of each probability in [0, 1]: int32 ``[N]`` in ``0..n_bins−1``."""
    return jnp.clip(jnp.floor(p * n_bins), 0, n_bins - 1).astype(jnp.int32)


def _binned_gap(cells, p, y, weight, n_cells):
    weight = jnp.ones_like(p) if weight is None else weight
    gap = jax.ops.segment_sum(weight * (y - p), cells, num_segments=n_cells)
    return jnp.sum(jnp.abs(gap)) / jnp.sum(weight)


@partial(jax.jit, static_argnames=("n_bins",))
def self_calibration_error(p, y, weight=None, n_bins: int = 10) -> jax.Array:
    """Binned ECE (float ``[]``) of probabilities ``p`` ``[N]`` against outcomes ``y`` ``[N]``.

    ``weight`` ``[N]`` are example weights (``None``: equal).
    """
    return _binned_gap(bin_index(p, n_bins), p, y, weight, n_bins)


@partial(jax.jit, static_argnames=("n_bins",))
def conversation_calibration_error(p, p_prev, y, weight=None, n_bins: int = 10) -> jax.Array:
    """Binned conversation-calibration error (float ``[]``), cells over ``(p, p_prev)``.

    Args:
        p: ``[N]`` round-k event probabilities; p_prev: ``[N]`` round-(k−1) ones at the same
            event; y: ``[N]`` outcomes; weight: ``[N]`` or ``None``.
    """
    cells = bin_index(p, n_bins) * n_bins + bin_index(p_prev, n_bins)
    return _binned_gap(cells, p, y, weight, n_bins * n_bins)


@partial(jax.jit, static_argnames=("n_bins",))
def reliability_bins(p, y, weight=None, n_bins: int = 10):
    """Per-bin reliability data for a diagram.

    Returns:
        ``(mean_p, mean_y, mass)`` float ``[n_bins]`` each: the weighted mean forecast and
        outcome in each bin (NaN for an empty bin) and the bin's share of the total weight.
    """
    weight = jnp.ones_like(p) if weight is None else weight
    cells = bin_index(p, n_bins)
    total = jax.ops.segment_sum(weight, cells, num_segments=n_bins)
    mean = lambda v: jax.ops.segment_sum(weight * v, cells, num_segments=n_bins) / total  # noqa: E731
    return mean(p), mean(y), total / jnp.sum(weight)


@partial(jax.jit, static_argnames=("n_bins",))
def conversation_cells(p, p_prev, y, weight=None, n_bins: int = 10) -> jax.Array:
    """Calibration gap per joint cell: float ``[n_bins, n_bins]`` indexed ``[bin(p), bin(p_prev)]``.

    Each entry is the weighted mean of ``y − p`` in the cell (NaN for an empty cell).
    """
    weight = jnp.ones_like(p) if weight is None else weight
    cells = bin_index(p, n_bins) * n_bins + bin_index(p_prev, n_bins)
    total = jax.ops.segment_sum(weight, cells, num_segments=n_bins * n_bins)
    gap = jax.ops.segment_sum(weight * (y - p), cells, num_segments=n_bins * n_bins) / total
    return gap.reshape(n_bins, n_bins)


def round_metrics(log_m: jax.Array, targets: jax.Array, weight=None, n_bins: int = 10) -> dict:
    """Per-round calibration metrics of a message stream.

    Args:
        log_m: ``[K, N, C]`` log messages of rounds 1..K (round 0 is taken as uniform).
        targets: ``[K, N, C]`` or ``[N, C]`` one-hot labels or soft targets.
        weight: ``[N]`` or ``None``.

    Returns:
        ``{"ece": [K], "cce": [K], "reliability": [K × (mean_p, mean_y, mass)],
        "cells": [K × [n_bins, n_bins]]}`` as host floats / numpy arrays; the conversation
        metrics read the stream's own previous message.
    """
    probs = jnp.exp(log_m)
    prev = jnp.concatenate([jnp.full_like(probs[:1], 1.0 / probs.shape[-1]), probs[:-1]], 0)
    targets = jnp.broadcast_to(targets, probs.shape)
    out = {"ece": [], "cce": [], "reliability": [], "cells": []}
    for k in range(probs.shape[0]):
        p, y, p_prev = event_probs(probs[k], targets[k], prev[k])
        out["ece"].append(float(self_calibration_error(p, y, weight, n_bins)))
        out["cce"].append(float(conversation_calibration_error(p, p_prev, y, weight, n_bins)))
        out["reliability"].append(jax.device_get(reliability_bins(p, y, weight, n_bins)))
        out["cells"].append(jax.device_get(conversation_cells(p, p_prev, y, weight, n_bins)))
    return out
