"""Fixed-shape spaces of observations and actions (gymnax-style), hashable by value.

``sample(key)`` and ``contains(x)`` are jit-safe; ``contains`` checks the shape and dtype kind
statically (a wrong one gives ``False`` without looking at values) and the values with array
ops. :class:`Tree`
describes a pytree action (e.g. the bomb's ``BombAction``) as the same pytree of spaces.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


class Space:
    """Base class: a set of values that :meth:`sample` draws from and :meth:`contains` tests."""

    def sample(self, key: jax.Array) -> Any:
        """A uniformly random element (jit-safe)."""
        raise NotImplementedError

    def contains(self, x: Any) -> jax.Array:
        """Boolean scalar: whether ``x`` is an element."""
        raise NotImplementedError


def _fits(x: jax.Array, shape: tuple[int, ...], dtype) -> bool:
    """Static part of ``contains``: same shape, and an integer space holds integers."""
    integer = jnp.issubdtype(dtype, jnp.integer)
    return x.shape == shape and (not integer or jnp.issubdtype(x.dtype, jnp.integer))


@dataclasses.dataclass(frozen=True, init=False)
class Discrete(Space):
    """Integers in ``[0, n)`` of a fixed shape (e.g. one action id per agent).

    Args:
        n: number of values; must be positive.
        shape: array shape, e.g. ``(n_agents,)``; dtype: an integer dtype (default int32).

    Raises:
        ValueError: ``n`` < 1.
    """

    n: int
    shape: tuple[int, ...]
    dtype: Any

    def __init__(self, n: int, shape: tuple[int, ...] = (), dtype=jnp.int32):
        if n <= 0:
            raise ValueError(f"Discrete space needs n > 0, got n={n}")
        object.__setattr__(self, "n", int(n))
        object.__setattr__(self, "shape", tuple(shape))
        object.__setattr__(self, "dtype", jnp.dtype(dtype))

    def sample(self, key: jax.Array) -> jax.Array:
        return jax.random.randint(key, self.shape, 0, self.n, dtype=self.dtype)

    def contains(self, x: Any) -> jax.Array:
        x = jnp.asarray(x)
        if not _fits(x, self.shape, self.dtype):
            return jnp.bool_(False)
        return jnp.all((x >= 0) & (x < self.n))


@dataclasses.dataclass(frozen=True, init=False)
class MultiDiscrete(Space):
    """Integers with one bound per entry: ``x[i] in [0, nvec[i])``, shape ``nvec.shape``.

    Args:
        nvec: positive ints of any shape (nested sequences or an array), e.g. per role
            ``(n_verbs, n_targets, vocab, …)``; dtype: an integer dtype (default int32).

    Raises:
        ValueError: an entry of ``nvec`` < 1.
    """

    nvec: tuple  # nested tuples of ints, hashable
    shape: tuple[int, ...]
    dtype: Any

    def __init__(self, nvec, dtype=jnp.int32):
        arr = np.asarray(nvec, np.int64)
        if arr.size == 0 or arr.min() < 1:
            raise ValueError(f"MultiDiscrete needs every bound >= 1, got nvec={arr.tolist()}")
        object.__setattr__(self, "nvec", _nested_tuple(arr.tolist()))
        object.__setattr__(self, "shape", arr.shape)
        object.__setattr__(self, "dtype", jnp.dtype(dtype))

    def sample(self, key: jax.Array) -> jax.Array:
        high = jnp.asarray(self.nvec, self.dtype)
        return jax.random.randint(key, self.shape, 0, high, dtype=self.dtype)

    def contains(self, x: Any) -> jax.Array:
        x = jnp.asarray(x)
        if not _fits(x, self.shape, self.dtype):
            return jnp.bool_(False)
        return jnp.all((x >= 0) & (x < np.asarray(self.nvec)))


def _nested_tuple(x):
    return tuple(_nested_tuple(v) for v in x) if isinstance(x, list) else x


@dataclasses.dataclass(frozen=True, init=False)
class Box(Space):
    """Arrays with entries in ``[low, high]`` (inclusive) of a fixed shape; an integer dtype
    samples integers.

    Raises:
        ValueError: ``high < low``.
    """

    low: float
    high: float
    shape: tuple[int, ...]
    dtype: Any

    def __init__(self, low, high, shape: tuple[int, ...], dtype=jnp.float32):
        if high < low:
            raise ValueError(f"Box needs low <= high, got low={low}, high={high}")
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)
        object.__setattr__(self, "shape", tuple(shape))
        object.__setattr__(self, "dtype", jnp.dtype(dtype))

    def sample(self, key: jax.Array) -> jax.Array:
        if jnp.issubdtype(self.dtype, jnp.integer):
            return jax.random.randint(key, self.shape, self.low, self.high + 1, dtype=self.dtype)
        return jax.random.uniform(key, self.shape, self.dtype, self.low, self.high)

    def contains(self, x: Any) -> jax.Array:
        x = jnp.asarray(x)
        if not _fits(x, self.shape, self.dtype):
            return jnp.bool_(False)
        return jnp.all((x >= self.low) & (x <= self.high))


def _is_space(x) -> bool:
    return isinstance(x, Space)


@dataclasses.dataclass(frozen=True, init=False)
class Tree(Space):
    """A pytree of spaces, for pytree values: ``Tree(BombAction(act=Discrete(3, (3,)), …))``
    samples a ``BombAction`` of samples (one key per leaf) and contains a value of the same
    pytree structure whose every leaf its space contains.

    Args:
        spaces: any pytree (dict, chex dataclass, tuple) whose leaves are :class:`Space`\\ s.
    """

    treedef: Any
    leaves: tuple[Space, ...]

    def __init__(self, spaces: Any):
        leaves, treedef = jax.tree.flatten(spaces, is_leaf=_is_space)
        if not leaves or not all(map(_is_space, leaves)):
            raise ValueError(f"Tree needs a pytree whose leaves are spaces, got {spaces!r}")
        object.__setattr__(self, "treedef", treedef)
        object.__setattr__(self, "leaves", tuple(leaves))

    @property
    def spaces(self) -> Any:
        """The pytree of spaces."""
        return jax.tree.unflatten(self.treedef, self.leaves)

    def sample(self, key: jax.Array) -> Any:
        keys = jax.random.split(key, len(self.leaves))
        return jax.tree.unflatten(self.treedef, [s.sample(k) for s, k in zip(self.leaves, keys)])

    def contains(self, x: Any) -> jax.Array:
        leaves, treedef = jax.tree.flatten(x)
        if treedef != self.treedef:
            return jnp.bool_(False)
        return jnp.all(jnp.stack([s.contains(v) for s, v in zip(self.leaves, leaves)]))
