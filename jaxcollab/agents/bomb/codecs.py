"""Codecs that turn short lists of small integers into gesture symbols or speech bytes and back
(fixed shapes, jit/vmap-safe). A message that does not fit the channel cap is truncated, and
decoding then reports fewer values, which is how a verbose protocol fails on a narrow channel.

* ``symbol``: one symbol (or one character ``0-9a-z``) per value.
* ``count``: a value ``v`` is ``v + 1`` repeats of a mark (👏 / ``.``) closed by a separator
  (✊ / space); the receiver counts.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.envs.bomb import tables as T

MAX_VALUES = 12  # longest value list any scripted team sends
# numpy, not jnp: a module-level device array would start JAX's backend at import
_CHARS = np.array([ord(c) for c in "0123456789abcdefghijklmnopqrstuvwxyz"], np.uint8)
_CHAR_VALUE = np.full(256, -1, np.int32)
_CHAR_VALUE[_CHARS] = np.arange(36)


@dataclasses.dataclass(frozen=True)
class Codec:
    """Encodes ``values`` (int32 ``[MAX_VALUES]``, first ``n`` used, each in 0..35).

    ``mark``/``sep`` are the count codec's gesture symbols or bytes.
    """

    name: str
    counting: bool

    def encode(self, values: jax.Array, n: jax.Array, width: int, gesture: bool) -> jax.Array:
        """→ uint8 ``[width]`` (gesture symbol ids or UTF-8 bytes; 0 = empty)."""
        if not self.counting:
            j = jnp.arange(width)
            v = values[jnp.minimum(j, MAX_VALUES - 1)]
            char = jnp.asarray(_CHARS)[jnp.clip(v, 0, 35)].astype(jnp.int32)
            body = jnp.where(gesture, v + 1, char)
            return jnp.where(j < jnp.minimum(n, MAX_VALUES), body, 0).astype(jnp.uint8)
        mark, sep = _count_marks(gesture)
        lengths = jnp.where(jnp.arange(MAX_VALUES) < n, values + 2, 0)
        ends = jnp.cumsum(lengths)
        j = jnp.arange(width)
        seg = jnp.searchsorted(ends, j, side="right")
        start = jnp.where(seg > 0, ends[jnp.maximum(seg - 1, 0)], 0)
        within = j - start
        out = jnp.where(within < values[jnp.minimum(seg, MAX_VALUES - 1)] + 1, mark, sep)
        return jnp.where(seg < jnp.minimum(n, MAX_VALUES), out, 0).astype(jnp.uint8)

    def decode(self, body: jax.Array, gesture: bool) -> tuple[jax.Array, jax.Array]:
        """uint8-valued ``[width]`` → (values int32 ``[MAX_VALUES]``, count of whole values)."""
        body = body.astype(jnp.int32)
        if not self.counting:
            v = jnp.where(gesture, body - 1, jnp.asarray(_CHAR_VALUE)[jnp.clip(body, 0, 255)])
            v = jnp.pad(v, (0, max(0, MAX_VALUES - v.shape[0])), constant_values=-1)[:MAX_VALUES]
            n = jnp.argmin(jnp.concatenate([v >= 0, jnp.zeros(1, bool)]))
            return jnp.where(jnp.arange(MAX_VALUES) < n, v, 0), n
        mark, sep = _count_marks(gesture)
        is_sep = body == sep
        seg = jnp.cumsum(is_sep) - is_sep
        counts = jax.ops.segment_sum((body == mark).astype(jnp.int32), seg,
                                     num_segments=MAX_VALUES + 1)[:MAX_VALUES]
        return jnp.maximum(counts - 1, 0), jnp.minimum(is_sep.sum(), MAX_VALUES)


def _count_marks(gesture: bool) -> tuple[int, int]:
    if gesture:
        return T.SYMBOL_IDS["clap"], T.SYMBOL_IDS["fist"]
    return ord("."), ord(" ")


SYMBOL = Codec("symbol", counting=False)
COUNT = Codec("count", counting=True)
