"""Cheap random draws from one vector of uniforms.

Every ``jax.random`` call compiles its own counter-based hash, so generators draw one float32
vector per call site (:func:`uniforms`) and derive integers, coin flips and permutations from
its entries. Each entry is used once, so draws stay independent.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def uniforms(key: jax.Array, n: int) -> jax.Array:
    """float32 ``[n]`` uniforms in [0, 1)."""
    return jax.random.uniform(key, (n,))


def randint(u: jax.Array, low, high) -> jax.Array:
    """Integers uniform in ``[low, high)`` (int32, the shape of ``u``)."""
    span = jnp.asarray(high) - jnp.asarray(low)
    return (low + jnp.minimum(jnp.floor(u * span), span - 1)).astype(jnp.int32)


def permutation(u: jax.Array) -> jax.Array:
    """A uniform permutation of ``range(len(u))`` (int32)."""
    return jnp.argsort(u).astype(jnp.int32)
