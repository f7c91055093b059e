"""Parity benchmarks: jitted JAX generator vs a straightforward NumPy one; dataset build time."""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np

from eval.benchmarks._timing import best_time
from jaxcollab.envs.parity import MASK, build_dataset, make_alphas, sample_parity, split_masks


def numpy_parity(rng: np.random.Generator, alphas: np.ndarray, masks: np.ndarray, batch: int):
    """Reference NumPy implementation of :func:`jaxcollab.envs.parity.sample_parity`."""
    bits = rng.integers(0, 2, (batch, len(alphas)), dtype=np.int32)
    pstar = 0.5 + np.cumprod(2 * bits - 1, axis=1).astype(np.float32) @ alphas.astype(np.float32)
    label = (rng.random(batch, dtype=np.float32) < pstar).astype(np.int32)
    views = np.where(masks, bits[:, None, :], MASK).astype(np.int32)
    return bits, pstar, label, views


def run(quick: bool) -> list[dict]:
    batch = 4_096 if quick else 65_536
    alphas = make_alphas()
    masks = split_masks(len(alphas))
    alphas_j, masks_j = jnp.asarray(alphas, jnp.float32), jnp.asarray(masks)
    key = jax.random.key(0)
    t_jax = best_time(lambda: sample_parity(key, alphas_j, masks_j, batch))
    rng = np.random.default_rng(0)
    t_np = best_time(lambda: numpy_parity(rng, alphas, masks, batch))
    n_data = 200_000 if quick else 2_000_000
    build_dataset(key, 65_536, alphas)  # compile once
    start = time.perf_counter()
    build_dataset(key, n_data, alphas)
    t_build = time.perf_counter() - start
    return [
        {
            "name": f"parity examples/s, JAX jit, batch {batch}",
            "value": batch / t_jax,
            "unit": "examples/s",
        },
        {
            "name": f"parity examples/s, NumPy, batch {batch}",
            "value": batch / t_np,
            "unit": "examples/s",
        },
        {
            "name": "parity JAX / NumPy speed ratio",
            "value": t_np / t_jax,
            "unit": "x",
            "notes": "same run, best of 5",
        },
        {
            "name": f"parity dataset build, {n_data:,} examples (90/10)",
            "value": t_build,
            "unit": "s",
        },
    ]
