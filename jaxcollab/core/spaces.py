"""Minimal fixed-shape spaces for observations and actions (gymnax-style)."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp


@dataclasses.dataclass(frozen=True)
class Space:
    """Base class: a set of arrays with a fixed ``shape`` and ``dtype``."""

    shape: tuple[int, ...]
    dtype: jnp.dtype

    def sample(self, key: jax.Array) -> jax.Array:
        raise NotImplementedError

    def contains(self, x: jax.Array) -> jax.Array:
        raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class Discrete(Space):
    """Integers in ``[0, n)`` of a fixed shape (e.g. one action id per agent).

    Args:
        n: number of values; must be positive.
        shape: array shape, e.g. ``(n_agents,)``.
    """

    n: int = 2

    def __init__(self, n: int, shape: tuple[int, ...] = (), dtype=jnp.int32):
        if n <= 0:
            raise ValueError(f"Discrete space needs n > 0, got n={n}")
        object.__setattr__(self, "n", int(n))
        object.__setattr__(self, "shape", tuple(shape))
        object.__setattr__(self, "dtype", dtype)

    def sample(self, key: jax.Array) -> jax.Array:
        return jax.random.randint(key, self.shape, 0, self.n, dtype=self.dtype)

    def contains(self, x: jax.Array) -> jax.Array:
        x = jnp.asarray(x)
        return jnp.logical_and(x.shape == self.shape, jnp.all((x >= 0) & (x < self.n)))


@dataclasses.dataclass(frozen=True)
class Box(Space):
    """Arrays with entries in ``[low, high]`` (inclusive) of a fixed shape."""

    low: float = 0.0
    high: float = 1.0

    def __init__(self, low, high, shape: tuple[int, ...], dtype=jnp.float32):
        if high < low:
            raise ValueError(f"Box needs low <= high, got low={low}, high={high}")
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)
        object.__setattr__(self, "shape", tuple(shape))
        object.__setattr__(self, "dtype", dtype)

    def sample(self, key: jax.Array) -> jax.Array:
        if jnp.issubdtype(self.dtype, jnp.integer):
            return jax.random.randint(key, self.shape, self.low, self.high + 1, dtype=self.dtype)
        return jax.random.uniform(key, self.shape, self.dtype, self.low, self.high)

    def contains(self, x: jax.Array) -> jax.Array:
        x = jnp.asarray(x)
        return jnp.logical_and(x.shape == self.shape, jnp.all((x >= self.low) & (x <= self.high)))
