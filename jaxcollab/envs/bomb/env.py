"""The bomb environment under the team contract (``jaxcollab.core.env``):
``jaxcollab.make("bomb/base-1")``.

One :meth:`BombEnv.step` is one *turn*; a round is three turns (one per role, in the variant's
turn order). Variants differ only in :class:`~jaxcollab.envs.bomb.params.BombParams` (data), so
every variant with the same message caps shares one compiled ``reset``/``step``: environments
compare and hash by their caps (the static config), not by variant.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.core.env import Environment
from jaxcollab.core.spaces import Box, Discrete, Tree
from jaxcollab.envs.bomb import tables as T
from jaxcollab.envs.bomb.generate import generate
from jaxcollab.envs.bomb.observe import Layout, observe
from jaxcollab.envs.bomb.params import BombParams, make_params
from jaxcollab.envs.bomb.rules import BombAction, noop_action, turn
from jaxcollab.envs.bomb.state import BombState


@dataclasses.dataclass(frozen=True)
class BombEnv(Environment[BombState, BombParams]):
    """Deaf / Mute / Blind bomb defusal, one variant of the 24 (SANZARU, Table 9).

    Args:
        variant: a variant name (``"base-1"``, with or without the ``bomb/`` prefix).
        speech_bytes: speech cap S in bytes (default 256, our choice).
        gesture_symbols: gesture cap G in symbols (default 32, our choice).

    Equal by value over the caps: ``variant`` only sets :attr:`default_params` and the name,
    so every variant with the same caps is one compiled environment.

    Raises:
        KeyError: unknown variant (lists the valid ones).
        ValueError: a cap below 4, above 4096 or not a multiple of 4 (messages are packed
            four bytes / symbols per word).
    """

    variant: T.Variant = dataclasses.field(compare=False)
    speech_bytes: int = T.DEFAULT_SPEECH_BYTES
    gesture_symbols: int = T.DEFAULT_GESTURE_SYMBOLS

    n_agents = T.N_AGENTS
    role_names = T.ROLE_NAMES

    def __post_init__(self):
        for label in ("speech_bytes", "gesture_symbols"):
            cap = getattr(self, label)
            if not 4 <= int(cap) <= 4096 or int(cap) % 4:
                raise ValueError(f"{label}={cap!r} must be a multiple of 4 in 4..4096")
            object.__setattr__(self, label, int(cap))
        variant = T.variant(self.variant) if isinstance(self.variant, str) else self.variant
        object.__setattr__(self, "variant", variant)
        object.__setattr__(self, "layout", Layout(self.speech_bytes, self.gesture_symbols))
        object.__setattr__(self, "name", f"bomb/{variant.name}")

    @property
    def max_episode_steps(self) -> int:
        """Turns after which every episode has ended (three turns per round, at most
        :data:`~jaxcollab.envs.bomb.tables.MAX_ROUNDS` rounds)."""
        return T.N_AGENTS * T.MAX_ROUNDS

    @property
    def default_params(self) -> BombParams:
        return make_params(self.variant)

    def observation_space(self, params=None) -> Discrete:
        return Discrete(T.VOCAB_SIZE, (T.N_AGENTS, self.layout.length))

    def action_space(self, params=None) -> Tree:
        """A :class:`BombAction` of spaces, per role: an act id (``WAIT``/``CUT``/``PRESS``)
        and a position (0..6), a speech recipient (a role or ``NO_TARGET``) and S bytes, a
        gesture recipient and G symbol ids (0 = empty); a recipient may be ``EVERYONE``."""
        n, s, g = T.N_AGENTS, self.speech_bytes, self.gesture_symbols
        return Tree(BombAction(
            act=Discrete(len(T.ACT_NAMES), (n,)), arg=Discrete(T.MAX_WIRES, (n,)),
            speak_to=Box(T.NO_TARGET, T.EVERYONE, (n,), jnp.int32),
            speech=Box(0, 255, (n, s), jnp.uint8),
            gesture_to=Box(T.NO_TARGET, T.EVERYONE, (n,), jnp.int32),
            gesture=Discrete(T.N_SYMBOLS + 1, (n, g), jnp.uint8)))

    def noop(self) -> BombAction:
        """A joint action where everyone waits and sends nothing (NumPy arrays)."""
        return noop_action(self.speech_bytes, self.gesture_symbols)

    def action(self, role: int | str, act: str = "wait", arg: int = 0,
               speak_to: int | str | None = None, text: str = "",
               gesture_to: int | str | None = None, symbols: tuple[str, ...] = ()) -> BombAction:
        """Host side: a joint action where ``role`` does the given turn and the others wait.

        ``text`` is UTF-8 encoded and cut to the speech cap; ``symbols`` are gesture names from
        :data:`~jaxcollab.envs.bomb.tables.GESTURES`, cut to the gesture cap. Roles may be
        given by index or name; a recipient may also be ``"everyone"`` (``EVERYONE``).

        Raises:
            ValueError: unknown role, act or symbol name (lists the valid ones).
        """
        row = _role(role)
        if act not in T.ACT_NAMES:
            raise ValueError(f"unknown act {act!r}; valid: {', '.join(T.ACT_NAMES)}")
        bad = [s for s in symbols if s not in T.SYMBOL_IDS]
        if bad:
            raise ValueError(f"unknown gesture symbol(s) {bad}; valid: {', '.join(T.SYMBOL_IDS)}")
        a = {k: np.array(v) for k, v in self.noop().items()}  # NumPy only (no dispatch)
        a["act"][row], a["arg"][row] = T.ACT_NAMES.index(act), arg
        data = text.encode("utf-8")[: self.speech_bytes]
        a["speech"][row, : len(data)] = np.frombuffer(data, np.uint8)
        ids = [T.SYMBOL_IDS[s] for s in symbols][: self.gesture_symbols]
        a["gesture"][row, : len(ids)] = ids
        a["speak_to"][row] = T.NO_TARGET if speak_to is None else _target(speak_to)
        a["gesture_to"][row] = T.NO_TARGET if gesture_to is None else _target(gesture_to)
        return BombAction(**a)

    def reset(self, key, params=None):
        params = self._params(params)
        state = generate(key, params, self.speech_bytes, self.gesture_symbols)
        return observe(state, params), state

    def step_env(self, key, state: BombState, actions: BombAction, params):
        """One turn. ``key`` is unused (all randomness is drawn at reset); kept for the contract.

        ``info`` holds int32 ``ending``, ``round``, ``progress``, ``bounces`` (dead-channel calls
        so far), ``rejected``, ``acts`` and bool ``wrong_round``.
        """
        state, reward, _, _ = turn(state, actions, params)
        info = {k: getattr(state, k) for k in ("ending", "round", "progress", "bounces",
                                               "rejected", "acts", "wrong_round")}
        return state, reward, info

    def end_flags(self, state: BombState, params=None):
        """``terminated``: defused or a wrong action; ``truncated``: the round budget ran out."""
        return ((state.ending == T.DEFUSED) | (state.ending == T.WRONG_ACTION),
                state.ending == T.TIMED_OUT)

    def observe(self, state: BombState, params=None) -> jax.Array:
        return observe(state, self._params(params))

    def render_observation(self, obs_row, role: int) -> str:
        """Host-side text of ``role``'s observation row (what an LLM reads); see
        :func:`jaxcollab.envs.bomb.render.render_tokens` (the row names its role too).

        Raises:
            ValueError: ``role`` not in 0..2, or a token outside its section's vocabulary.
        """
        from jaxcollab.envs.bomb.render import render_tokens

        self._check_role(role)
        return render_tokens(np.asarray(obs_row), self.layout)

    def solution(self, state: BombState, params=None) -> list[int]:
        """Host side: the required positions (cuts) or keys (code) in order, 0-based, for an
        episode at its start (flashing: cutting each named wire while its light shows)."""
        from jaxcollab.envs.bomb.solve import solve

        return solve(jax.device_get(state), jax.device_get(self._params(params)))


def _role(role: int | str) -> int:
    """A role index from an index or a name. Raises ValueError naming the valid roles."""
    if isinstance(role, str) and role in T.ROLE_NAMES:
        return T.ROLE_NAMES.index(role)
    if not isinstance(role, str) and int(role) in range(T.N_AGENTS):
        return int(role)
    raise ValueError(f"unknown role {role!r}; valid: 0..2 or {', '.join(T.ROLE_NAMES)}")


def _target(to: int | str) -> int:
    """A recipient: a role (index or name) or ``"everyone"`` / ``EVERYONE``."""
    return T.EVERYONE if to in ("everyone", T.EVERYONE) else _role(to)


def is_done(state: BombState) -> jax.Array:
    """Whether the episode has ended (any ending but ``RUNNING``)."""
    return state.ending != T.RUNNING


def ending_counts(endings: np.ndarray) -> dict[str, int]:
    """Host side: ``{ending name: count}`` over an int array of endings."""
    endings = np.asarray(endings).reshape(-1)
    return {name: int((endings == i).sum()) for i, name in enumerate(T.ENDING_NAMES) if i}



#: Jitted pure functions shared by every variant with the same caps (params are arguments), so
#: hosts that step single episodes (tests, LLM drivers) compile each once per process.
reset_jit = jax.jit(generate, static_argnames=("speech_bytes", "gesture_symbols"))
turn_jit = jax.jit(turn, static_argnames=("messages",))
observe_jit = jax.jit(observe)


__all__ = ["BombEnv", "BombAction", "ending_counts", "is_done", "observe_jit", "reset_jit",
           "turn_jit"]
