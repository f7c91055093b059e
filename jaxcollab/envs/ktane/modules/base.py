"""What every module type provides, and the fixed-shape packing of module state.

The bomb stores each module slot as one int32 vector of :data:`MOD_WORDS` words, so module
types with different fields share one array and ``lax.switch`` can dispatch on the type. A
module type declares its named fields and their shapes (:class:`Layout`); its rule functions
work on the unpacked dict of arrays.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from math import prod

import chex
import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.envs.ktane.edgework import Facts
from jaxcollab.envs.ktane.ruleset import Ruleset

#: Words of int32 state per module slot (every layout must fit).
MOD_WORDS = 32
#: Tokens of a zoomed module's view in the Defuser's observation.
VIEW_LEN = 40

#: Words of a message phrase: a zoomed module's view plus a short header fits (GPTNT §4.2.1:
#: messages describe what the Defuser sees and what the Expert instructs).
MESSAGE_WORDS = 48
#: Entries of one role's action row: ``(verb, target, w_1 … w_MESSAGE_WORDS)``.
ACTION_LEN = 2 + MESSAGE_WORDS

#: Defuser / Expert verbs (``actions[role] = (verb, target, w_1 … w_L)``).
VERBS = (
    "wait",
    "message",
    "select",
    "back",
    "rotate",
    "flip",
    "press",
    "cut",
    "hold",
    "release",
)
WAIT, MESSAGE, SELECT, BACK, ROTATE, FLIP, PRESS, CUT, HOLD, RELEASE = range(len(VERBS))
MODULE_VERBS = (PRESS, CUT, HOLD, RELEASE)


@chex.dataclass(frozen=True)
class Ctx:
    """What a module's rules may read besides its own state.

    Attributes:
        facts: edgework predicates; strikes: int32 ``[]`` bomb strikes before this action;
        display: int32 ``[4]`` timer digits shown when the action is taken; rules: the
        episode's rule tables (``KtaneParams.rules``).
    """

    facts: Facts
    strikes: jax.Array
    display: jax.Array
    rules: Ruleset


class Layout:
    """Named int32 fields packed into one ``[MOD_WORDS]`` vector.

    Args:
        fields: name → shape, e.g. ``{"colors": (6,), "answer": ()}``.

    Raises:
        ValueError: the fields need more than :data:`MOD_WORDS` words.
    """

    def __init__(self, fields: dict[str, tuple[int, ...]]):
        self.fields = dict(fields)
        sizes = [prod(shape) for shape in self.fields.values()]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
        if self.offsets[-1] > MOD_WORDS:
            raise ValueError(f"layout needs {self.offsets[-1]} words > MOD_WORDS={MOD_WORDS}")

    def pack(self, m: dict[str, jax.Array]) -> jax.Array:
        """Dict of arrays → int32 ``[MOD_WORDS]`` (zero padded)."""
        flat = [jnp.asarray(m[k], jnp.int32).reshape(-1) for k in self.fields]
        vec = jnp.concatenate(flat)
        return jnp.pad(vec, (0, MOD_WORDS - vec.shape[0]))

    def unpack(self, vec: jax.Array) -> dict[str, jax.Array]:
        """int32 ``[MOD_WORDS]`` → dict of int32 arrays with the declared shapes."""
        return {
            k: vec[self.offsets[i] : self.offsets[i + 1]].reshape(shape)
            for i, (k, shape) in enumerate(self.fields.items())
        }


#: ``act(key, m, verb, target, ctx) -> (m, strike, solved, valid)``: all bools are ``[]``.
ActFn = Callable[
    [jax.Array, dict, jax.Array, jax.Array, Ctx], tuple[dict, jax.Array, jax.Array, jax.Array]
]


@dataclasses.dataclass(frozen=True)
class ModuleType:
    """One module type: its state layout and pure rule functions.

    Attributes:
        name: registry name (``wires`` …); title: name shown to players.
        layout: packed state fields.
        n_targets: number of labelled targets (target ids ``0 … n_targets - 1``).
        verbs: the module verbs it accepts (others are invalid and change nothing).
        generate: ``(key, facts, rules) -> m``, a fresh module under the :class:`Ruleset`.
        act: see :data:`ActFn`; ``valid`` is False for an action with no effect.
        oracle: ``(m, ctx) -> (verb, target)`` the next correct action (``WAIT`` if none).
        view: ``(m, rules) -> int32 [VIEW_LEN]`` Defuser tokens of the zoomed module.
        describe: host-side ``(m as numpy dict, rules as numpy) -> dict`` for export.
        manual: host-side ``(rules as numpy) -> str``, the Expert's manual page.
    """

    name: str
    title: str
    layout: Layout
    n_targets: int
    verbs: tuple[int, ...]
    generate: Callable
    act: ActFn
    oracle: Callable
    view: Callable
    describe: Callable
    manual: Callable


def view_tokens(parts: list) -> jax.Array:
    """Concatenate token pieces (ints or int arrays) and pad to ``[VIEW_LEN]``.

    Raises:
        ValueError: the pieces hold more than :data:`VIEW_LEN` tokens.
    """
    flat = jnp.concatenate([jnp.atleast_1d(jnp.asarray(p, jnp.int32)) for p in parts])
    if flat.shape[0] > VIEW_LEN:
        raise ValueError(f"module view has {flat.shape[0]} tokens > VIEW_LEN={VIEW_LEN}")
    return jnp.pad(flat, (0, VIEW_LEN - flat.shape[0]))


def first_true(mask: jax.Array) -> jax.Array:
    """Index of the first True entry of a bool vector (0 if none), int32 ``[]``."""
    return jnp.argmax(mask).astype(jnp.int32)
