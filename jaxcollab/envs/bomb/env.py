"""The bomb environment under the team contract (DESIGN.md): ``jaxcollab.make("bomb/base-1")``.

One :meth:`BombEnv.step` is one *turn*; a round is three turns (one per role, in the variant's
turn order). Variants differ only in :class:`~jaxcollab.envs.bomb.params.BombParams` (data), so
every variant with the same message caps shares one compiled ``reset``/``step``.
"""

from __future__ import annotations

import jax
import numpy as np

from jaxcollab.core.env import Environment
from jaxcollab.core.spaces import Discrete
from jaxcollab.envs.bomb import tables as T
from jaxcollab.envs.bomb.generate import generate
from jaxcollab.envs.bomb.observe import Layout, observe
from jaxcollab.envs.bomb.params import BombParams, make_params
from jaxcollab.envs.bomb.rules import BombAction, noop_action, turn
from jaxcollab.envs.bomb.state import BombState


class BombEnv(Environment[BombState, BombParams]):
    """Deaf / Mute / Blind bomb defusal, one variant of the 24 (spec ``bomb-families.md``).

    Args:
        variant: a variant name (``"base-1"``, with or without the ``bomb/`` prefix).
        speech_bytes: speech cap S in bytes (spec default 256).
        gesture_symbols: gesture cap G in symbols (spec default 32).

    Raises:
        KeyError: unknown variant (lists the valid ones).
        ValueError: a cap below 4, above 4096 or not a multiple of 4 (messages are packed
            four bytes / symbols per word).
    """

    n_agents = T.N_AGENTS
    role_names = T.ROLE_NAMES

    def __init__(self, variant: str, speech_bytes: int = T.DEFAULT_SPEECH_BYTES,
                 gesture_symbols: int = T.DEFAULT_GESTURE_SYMBOLS):
        self.variant = T.variant(variant)
        for label, cap in (("speech_bytes", speech_bytes), ("gesture_symbols", gesture_symbols)):
            if not 4 <= int(cap) <= 4096 or int(cap) % 4:
                raise ValueError(f"{label}={cap!r} must be a multiple of 4 in 4..4096")
        self.speech_bytes, self.gesture_symbols = int(speech_bytes), int(gesture_symbols)
        self.layout = Layout(self.speech_bytes, self.gesture_symbols)
        self.name = f"bomb/{self.variant.name}"

    @property
    def default_params(self) -> BombParams:
        return make_params(self.variant)

    def observation_space(self, params=None) -> Discrete:
        return Discrete(T.VOCAB_SIZE, (T.N_AGENTS, self.layout.length))

    def action_space(self, params=None) -> Discrete:
        """Act ids per agent (``WAIT``/``CUT``/``PRESS``); messages ride in :class:`BombAction`."""
        return Discrete(len(T.ACT_NAMES), (T.N_AGENTS,))

    def noop(self) -> BombAction:
        """A joint action where everyone waits and sends nothing."""
        return noop_action(self.speech_bytes, self.gesture_symbols)

    def reset(self, key, params=None):
        params = self._params(params)
        state = generate(key, params, self.speech_bytes, self.gesture_symbols)
        return observe(state, params), state

    def step(self, key, state: BombState, actions: BombAction, params=None):
        """One turn. ``key`` is unused (all randomness is drawn at reset); kept for the contract.

        Returns ``(obs, state, reward, terminated, truncated, info)``; ``info`` holds int32
        ``ending``, ``round``, ``progress``, ``bounces``, ``rejected``, ``acts`` and bool
        ``wrong_round``.
        """
        params = self._params(params)
        state, reward, terminated, truncated = turn(state, actions, params)
        info = {k: getattr(state, k) for k in ("ending", "round", "progress", "bounces",
                                               "rejected", "acts", "wrong_round")}
        return observe(state, params), state, reward, terminated, truncated, info

    def observe(self, state: BombState, params=None) -> jax.Array:
        return observe(state, self._params(params))

    def render_text(self, state: BombState, role: int, params=None) -> str:
        """Host-side text of ``role``'s observation (what an LLM reads); see
        :func:`jaxcollab.envs.bomb.render.render_tokens`.

        Raises:
            ValueError: ``role`` not in 0..2.
        """
        from jaxcollab.envs.bomb.render import render_tokens

        if role not in range(T.N_AGENTS):
            raise ValueError(f"role must be 0 (deaf), 1 (mute) or 2 (blind), got {role!r}")
        tokens = np.asarray(jax.device_get(self.observe(state, params)))[role]
        return render_tokens(tokens, self.layout)

    def solution(self, state: BombState, params=None) -> list[int]:
        """Host side: the required positions (cuts) or keys (code) in order, 0-based, for an
        episode at its start (flashing: cutting each named wire while its light shows)."""
        from jaxcollab.envs.bomb.solve import solve

        return solve(jax.device_get(state), jax.device_get(self._params(params)))


def is_done(state: BombState) -> jax.Array:
    """Whether the episode has ended (any ending but ``RUNNING``)."""
    return state.ending != T.RUNNING


def ending_counts(endings: np.ndarray) -> dict[str, int]:
    """Host side: ``{ending name: count}`` over an int array of endings."""
    endings = np.asarray(endings).reshape(-1)
    return {name: int((endings == i).sum()) for i, name in enumerate(T.ENDING_NAMES) if i}


__all__ = ["BombEnv", "BombAction", "ending_counts", "is_done"]
