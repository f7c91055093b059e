"""Cheap random draws for the simulator, derived from a JAX key by an integer hash.

``jax.random``'s threefry hash costs seconds of XLA compile time per call site on a CPU, and a
bomb draws at many sites (edgework, each module, every redraw). Here a key's raw bits are mixed
with the draw index by the murmur3 32-bit finaliser, a counter-based hash: every draw is a pure
function of (key, salt, index), so results are deterministic, vmap-safe and independent of
batch size. It is not cryptographic; its outputs pass as uniform for puzzle generation.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

_GOLDEN = 0x9E3779B9


def _fmix(x: jax.Array) -> jax.Array:
    """murmur3 finaliser on uint32."""
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x85EBCA6B)
    x = x ^ (x >> 13)
    x = x * jnp.uint32(0xC2B2AE35)
    return x ^ (x >> 16)


def _key_bits(key: jax.Array) -> jax.Array:
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.key_data(key)
    return jnp.asarray(key).astype(jnp.uint32).reshape(-1)


def _seed(key: jax.Array, salt: int | jax.Array) -> jax.Array:
    h = _fmix(jnp.asarray(salt).astype(jnp.uint32) * jnp.uint32(_GOLDEN) + jnp.uint32(1))
    for word in _key_bits(key):
        h = _fmix(h ^ word) + jnp.uint32(_GOLDEN)
    return h


def bits(key: jax.Array, n: int, salt: int | jax.Array = 0) -> jax.Array:
    """uint32 ``[n]`` hashed bits of ``(key, salt, index)``."""
    idx = jnp.arange(n, dtype=jnp.uint32) * jnp.uint32(_GOLDEN)
    return _fmix(_fmix(_seed(key, salt) ^ idx) + idx)


def uniforms(key: jax.Array, n: int, salt: int | jax.Array = 0) -> jax.Array:
    """float32 ``[n]`` uniforms in [0, 1) (24-bit resolution)."""
    return (bits(key, n, salt) >> 8).astype(jnp.float32) * jnp.float32(2.0**-24)


def fold_in(key: jax.Array, data: int | jax.Array) -> jax.Array:
    """A new key of the same kind derived from ``key`` and ``data`` (cf. ``jax.random.fold_in``)."""
    raw = jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else key
    new = bits(key, raw.size, salt=jnp.asarray(data).astype(jnp.uint32) + jnp.uint32(1))
    new = new.reshape(raw.shape).astype(raw.dtype)
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        return jax.random.wrap_key_data(new, impl=jax.random.key_impl(key))
    return new


def randint(u: jax.Array, low, high) -> jax.Array:
    """Integers uniform in ``[low, high)`` from uniforms ``u`` (int32, the shape of ``u``)."""
    span = jnp.asarray(high) - jnp.asarray(low)
    return (low + jnp.minimum(jnp.floor(u * span), span - 1)).astype(jnp.int32)


def permutation(u: jax.Array) -> jax.Array:
    """A uniform permutation of ``range(len(u))`` from uniforms ``u`` (int32)."""
    return jnp.argsort(u).astype(jnp.int32)
