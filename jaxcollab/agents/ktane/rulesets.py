"""Per-episode rulesets for learned teams (``ppo.rulesets=episode``): every episode plays its
own random ruleset, so a Defuser cannot learn the rules and the Expert, who holds that
episode's manual, has to tell it (GPTNT §4: only the Expert reads the manual; GPTNT §7 leaves
randomised rules to future work, the pools below are ours).

A ruleset is a runtime param (:class:`~jaxcollab.envs.ktane.ruleset.Ruleset`), so one compile
serves every ruleset: the training and held-out pools are rulesets stacked on a leading
episode axis, drawn from disjoint seeds (:data:`TRAIN_SEEDS`, :data:`HELDOUT_SEEDS`), and the
held-out success is measured on rulesets no team trained on.

The Expert's manual reaches its policy through its observation: :class:`ManualExpert` writes
the rule tables the mission's modules read (:data:`MANUAL_FIELDS`) into a block appended to
the Expert's row, as tokens above the word vocabulary (``len(VOCAB) + 1 + value``); the
Defuser's row gets padding there, so the Defuser sees exactly what it sees without the block.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.core.spaces import Discrete
from jaxcollab.core.wrappers import Wrapper
from jaxcollab.envs.ktane import vocab as V
from jaxcollab.envs.ktane.env import KtaneEnv
from jaxcollab.envs.ktane.mission import EXPERT
from jaxcollab.envs.ktane.observe import OBS_LEN
from jaxcollab.envs.ktane.ruleset import Ruleset, random_ruleset

#: The rule tables each module type reads (the modules' ``rules.<field>``), in manual order;
#: module types with larger manuals (Who's on First, Maze, Morse, Passwords) have none here.
MANUAL_FIELDS = {
    "wires": ("wire_rules",),
    "button": ("button_rules", "release_digit"),
    "keypad": ("keypad_columns",),
    "simon": ("simon_map",),
    "memory": ("memory_rules",),
    "complicated_wires": ("cw_rules",),
    "wire_sequence": ("ws_rules",),
}
#: Rule-table values span -1 (the Button's "any") to 26 (a keypad symbol id).
MIN_VALUE, MAX_VALUE = -1, 26
#: Tokens the manual block adds above the word vocabulary.
MANUAL_TOKENS = MAX_VALUE - MIN_VALUE + 1
#: Seeds of the training pool and of the held-out pool (disjoint).
TRAIN_SEEDS = range(512)
HELDOUT_SEEDS = range(1_000_000, 1_000_128)


@functools.cache
def ruleset_pool(heldout: bool = False) -> Ruleset:
    """The training (or held-out) pool: :func:`random_ruleset` of each seed of
    :data:`TRAIN_SEEDS` (:data:`HELDOUT_SEEDS`), NumPy leaves stacked ``[n, ...]``."""
    seeds = HELDOUT_SEEDS if heldout else TRAIN_SEEDS
    return jax.tree.map(lambda *x: np.stack([np.asarray(a) for a in x]),
                        *[random_ruleset(s) for s in seeds])


def manual_size(env: KtaneEnv) -> int:
    """Tokens of :class:`ManualExpert`'s manual block for ``env``'s module types.

    Raises:
        ValueError: a module type without a manual here (listing those with one)."""
    missing = [k.name for k in env.board.kinds if k.name not in MANUAL_FIELDS]
    if missing:
        raise ValueError(f"ppo.rulesets=episode: no manual block for {', '.join(missing)}; "
                         f"modules with one: {', '.join(MANUAL_FIELDS)}")
    like = random_ruleset(0)
    return sum(int(np.size(getattr(like, f))) for k in env.board.kinds
               for f in MANUAL_FIELDS[k.name])


class ManualExpert(Wrapper):
    """``env`` with the Expert's manual in its observation: int32 ``[2, OBS_LEN + M]``
    (``M = manual_size(env)``), the Expert's last ``M`` tokens the flattened rule tables of
    ``params.rules`` its modules read, the Defuser's padding. Everything else is ``env``'s.

    Raises:
        ValueError: see :func:`manual_size`.
    """

    def __init__(self, env: KtaneEnv):
        super().__init__(env)
        self.manual_len = manual_size(env)

    def observation_space(self, params=None) -> Discrete:
        return Discrete(len(V.VOCAB) + MANUAL_TOKENS, (2, OBS_LEN + self.manual_len))

    def manual(self, rules: Ruleset) -> jax.Array:
        """int32 ``[M]``: the manual block's tokens of ``rules``."""
        values = jnp.concatenate([jnp.ravel(getattr(rules, f)).astype(jnp.int32)
                                  for k in self.env.board.kinds for f in MANUAL_FIELDS[k.name]])
        return len(V.VOCAB) + jnp.clip(values, MIN_VALUE, MAX_VALUE) - MIN_VALUE

    def observe(self, state, params=None):
        params = self._params(params)
        block = jnp.zeros((2, self.manual_len), jnp.int32).at[EXPERT].set(
            self.manual(params.rules))
        return jnp.concatenate([self.env.observe(state, params), block], 1)

    def reset(self, key, params=None):
        params = self._params(params)
        _, state = self.env.reset(key, params)
        return self.observe(state, params), state

    def step(self, key, state, actions, params=None):
        params = self._params(params)
        _, state, reward, term, trunc, info = self.env.step(key, state, actions, params)
        return self.observe(state, params), state, reward, term, trunc, info
