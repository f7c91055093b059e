"""The RL view of a Keep-Talking bomb (GPTNT, §4): per-agent observation vectors and a discrete
joint action, built on the environment's own ``observe`` / ``step`` (no rule repeated).

An agent's **observation vector** is its whole observation row (int32 word tokens below
``len(VOCAB)``, for an embedding): the Defuser's row shows the timer, strikes, face, zoomed
module and the Expert's last phrase; the Expert's only the Defuser's last phrase (GPTNT
§4.2.1). An agent's **discrete action** is int32 ``[n_heads]``: ``verb`` (wait, message,
select, back, rotate, flip, press, cut, hold, release), ``target`` (a face slot, a rotation or
a module's labelled target) and ``symbols`` words from an alphabet of ``alphabet`` serial
characters (``0``-``9``, then ``A``-``Z``), sent when the verb is ``message``. The Expert may
only wait or message (its other verbs are masked; the environment would read them as wait).
Turns alternate Defuser, Expert from reset (the environment's sync mode), so the actor is the
turn count's parity, which a policy carries itself.

Under ``rulesets="episode"`` every episode draws its own random ruleset (a runtime param,
:mod:`jaxcollab.agents.ktane.rulesets`), and the view's environment is
:class:`~jaxcollab.agents.ktane.rulesets.ManualExpert`: the Expert's vector ends with that
episode's manual, the Defuser's with padding.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.agents.ktane.rulesets import MANUAL_TOKENS, ManualExpert, ruleset_pool
from jaxcollab.agents.ktane.view import defuser_view
from jaxcollab.envs.ktane import tables as KT
from jaxcollab.envs.ktane import vocab as V
from jaxcollab.envs.ktane.env import KtaneEnv
from jaxcollab.envs.ktane.mission import DEFUSER, EXPERT
from jaxcollab.envs.ktane.modules.base import (
    ACTION_LEN,
    BACK,
    FLIP,
    MESSAGE,
    ROTATE,
    SELECT,
    VERBS,
    WAIT,
)
from jaxcollab.envs.ktane.observe import OBS_LEN

VERB, TARGET = 0, 1
#: Verbs whose target the environment reads (the others ignore it).
TARGETED = ("select", "rotate", "press", "cut", "hold", "release")


@dataclasses.dataclass(frozen=True)
class KtaneView:
    """The RL view of ``env``.

    Args:
        env: a :class:`~jaxcollab.envs.ktane.env.KtaneEnv` (e.g. ``ktane/wires``).
        symbols: words per message, 1..8; alphabet: distinct words, 2..36.
        rulesets: ``"vanilla"`` (every episode the vanilla manual) or ``"episode"`` (a random
            ruleset per episode, the Expert's manual in its observation; the view's ``env`` is
            then ``ManualExpert(env)``).

    Raises:
        ValueError: ``symbols``, ``alphabet`` or ``rulesets`` out of range, or a module
            without a manual block under ``"episode"``.
    """

    env: KtaneEnv
    symbols: int = 1
    alphabet: int = 8
    rulesets: str = "vanilla"

    n_agents = 2
    inbox = None  # no symbol channel: words travel in the message heads only (no dial)

    def __post_init__(self):
        if not 1 <= self.symbols <= 8:
            raise ValueError(f"symbols={self.symbols!r} must be in 1..8")
        if not 2 <= self.alphabet <= len(V.SERIAL_CHAR):
            raise ValueError(f"alphabet={self.alphabet!r} must be in 2..{len(V.SERIAL_CHAR)}")
        if self.rulesets not in ("vanilla", "episode"):
            raise ValueError(f"rulesets={self.rulesets!r} must be 'vanilla' or 'episode'")
        if self.rulesets == "episode" and not isinstance(self.env, ManualExpert):
            object.__setattr__(self, "env", ManualExpert(self.env))

    @property
    def obs_size(self) -> int:
        return OBS_LEN + (self.env.manual_len if self.rulesets == "episode" else 0)

    @property
    def vocab_size(self) -> int:
        return len(V.VOCAB) + (MANUAL_TOKENS if self.rulesets == "episode" else 0)

    def encode(self, obs: jax.Array) -> jax.Array:
        """Observation tokens int32 ``[..., 2, OBS_LEN]`` → observation vectors (the same)."""
        return obs

    @staticmethod
    def actor(obs: jax.Array, turn: jax.Array) -> jax.Array:
        """The role whose turn it is after ``turn`` turns of the episode (Defuser first; the
        observation does not say, so every caller counts turns)."""
        return jnp.where(turn % 2 == 0, DEFUSER, EXPERT).astype(jnp.int32)

    # ---- episodes ------------------------------------------------------------------------

    def episode_table(self, turn_order: str = "cycle", heldout: bool = False):
        """The params of the episodes to train on (``heldout``: to evaluate on), stacked
        ``[n]``: the mission's defaults, ``[1]``; under ``rulesets="episode"`` one per ruleset
        of the training (held-out) pool (:func:`~jaxcollab.agents.ktane.rulesets.
        ruleset_pool`). Keep-Talking turns always alternate from the Defuser, its one order:
        ``"cycle"`` or ``"defuser,expert"``.

        Raises:
            ValueError: any other ``turn_order``."""
        if turn_order not in ("cycle", "defuser,expert"):
            raise ValueError(f"turn_order={turn_order!r}: Keep-Talking turns alternate "
                             "defuser,expert")
        params = jax.tree.map(np.asarray, self.env.default_params)
        if self.rulesets == "vanilla":
            return jax.tree.map(lambda x: x[None], params)
        rules = ruleset_pool(heldout)
        n = len(rules.seed)
        return jax.tree.map(lambda x: np.broadcast_to(x, (n,) + x.shape),
                            params).replace(rules=rules)

    @property
    def max_turns(self) -> int:
        return int(self.env.max_turns)

    @staticmethod
    def success(state) -> jax.Array:
        """Whether the bomb was solved."""
        return state.outcome == KT.SOLVED

    @staticmethod
    def progress(state) -> jax.Array:
        """int32: modules solved so far."""
        return state.solved.sum().astype(jnp.int32)

    @property
    def answer_sizes(self) -> tuple[int, ...]:
        """Sizes of the :meth:`answer` parts: a verb and a target."""
        return self.head_sizes[:2]

    def answer(self, state, params) -> jax.Array:
        """The zoomed module's next correct ``(verb, target)``, int32 ``[2]`` (privileged, for
        training losses only): :meth:`~jaxcollab.envs.ktane.env.KtaneEnv.module_oracle`."""
        return jnp.stack(self.env.module_oracle(state, params)).astype(jnp.int32)

    @property
    def head_sizes(self) -> tuple[int, ...]:
        """Sizes of the action heads: verb, target, then ``symbols`` words."""
        targets = max(KT.SLOTS_PER_FACE, 4, int(self.env.board.n_targets.max()))
        return (len(VERBS), targets) + (self.alphabet,) * self.symbols

    @property
    def n_logits(self) -> int:
        return sum(self.head_sizes)

    @functools.cached_property
    def logit_mask(self) -> np.ndarray:
        """bool ``[2, n_logits]``: the Expert may only wait or message (GPTNT §4); under
        ``rulesets="episode"`` it always messages. Holding the only copy of the episode's
        manual, a waiting Expert tells the Defuser nothing, and with words not yet meaning
        anything, waiting is where PPO settles (measured: ``ppo.symbols=8``, 40 updates, the
        greedy Expert waited at all 1,406 of its held-out turns); its words then only carry
        what they carry (all-random words carry no information)."""
        mask = np.ones((self.n_agents, self.n_logits), bool)
        mask[EXPERT, :len(VERBS)] = False
        mask[EXPERT, [MESSAGE] if self.rulesets == "episode" else [WAIT, MESSAGE]] = True
        return mask

    @functools.cached_property
    def _verb_masks(self) -> tuple[np.ndarray, np.ndarray]:
        """bool (``[len(VERBS)]`` with no module in hand: look around and pick one up;
        ``[n_kinds, len(VERBS)]`` at work on a module of each type: its own verbs, or put it
        down)."""
        idle = np.isin(np.arange(len(VERBS)), [WAIT, MESSAGE, SELECT, ROTATE, FLIP])
        work = np.stack([np.isin(np.arange(len(VERBS)), (WAIT, MESSAGE, BACK) + tuple(k.verbs))
                         for k in self.env.board.kinds])
        return idle, work

    def action_mask(self, enc: jax.Array, actor: jax.Array) -> jax.Array:
        """bool ``[n_logits]``: what role ``actor`` may pick, given the observation vectors
        ``enc`` int32 ``[2, OBS_LEN]``. Besides :attr:`logit_mask`, the Defuser's verbs and
        targets are those its view offers (invalid-action masking, as the bomb view's; the
        environment reads any other choice as changing nothing): at work on an unsolved
        zoomed module, that module type's verbs (and back) on its targets; otherwise select,
        rotate or flip; waiting and messaging always."""
        idle, work = (jnp.asarray(m) for m in self._verb_masks)
        _, zoom, solved = defuser_view(self.env, enc[DEFUSER])
        slot = jnp.maximum(zoom, 0)
        kind = jnp.asarray(self.env.board.slot_kind)[slot]
        working = (zoom >= 0) & ~solved[slot]
        verbs = jnp.where(working, work[kind], idle)
        n_targets = jnp.where(working, jnp.asarray(self.env.board.n_targets)[kind],
                              self.head_sizes[1])
        targets = jnp.arange(self.head_sizes[1]) < n_targets
        words = jnp.ones(sum(self.head_sizes[2:]), bool)
        mine = jnp.concatenate([verbs, targets, words])
        return jnp.asarray(self.logit_mask)[actor] & ((actor != DEFUSER) | mine)

    def relevant(self, action: jax.Array) -> jax.Array:
        """bool ``[..., n_heads]``: the target only for a verb that reads it, the words only
        when messaging (the factors of the action's probability)."""
        verb = action[..., VERB]
        targeted = jnp.isin(verb, jnp.asarray([VERBS.index(v) for v in TARGETED]))
        words = [verb == MESSAGE] * self.symbols
        return jnp.stack([jnp.ones_like(targeted), targeted, *words], -1)

    def to_env(self, action: jax.Array) -> jax.Array:
        """int32 ``[2, n_heads]`` → the environment's int32 ``[2, ACTION_LEN]`` (words as
        serial-character tokens, padded with 0)."""
        words = jnp.asarray(V.SERIAL_CHAR[:self.alphabet])[action[:, 2:]]
        words = jnp.where((action[:, VERB] == MESSAGE)[:, None], words, V.PAD)
        out = jnp.concatenate([action[:, :2], words], 1)
        return jnp.pad(out, ((0, 0), (0, ACTION_LEN - out.shape[1]))).astype(jnp.int32)


    def recipient_head(self, channel: int) -> int:
        """Never called: a view without an inbox has no recipient heads.

        Raises:
            ValueError: always (``dial`` needs an inbox; the trainer refuses it first)."""
        raise ValueError("the Keep-Talking view has no symbol channel (no recipient head)")

    def on(self, env) -> KtaneView:
        """This view, on ``env`` if it is this view's environment.

        Raises:
            ValueError: ``env`` is another environment, or a plain one under
                ``rulesets="episode"`` (its Expert would not see the manual)."""
        if env.name != self.env.name:
            raise ValueError(f"{env.name!r} is not this view's {self.env.name!r}")
        if type(env) is not type(self.env):
            raise ValueError(f"{env!r}: a team trained with rulesets={self.rulesets!r} plays "
                             f"{type(self.env).__name__} of {env.name!r}")
        return self


def make_ktane_view(name: str, symbols: int = 1, alphabet: int = 8,
                    rulesets: str = "vanilla") -> KtaneView:
    """The RL view of Keep-Talking environment ``name`` (``ktane/wires``, a mission name).

    Raises:
        KeyError: unknown environment; ValueError: see :class:`KtaneView`.
    """
    import jaxcollab

    env = jaxcollab.make(name)
    if not isinstance(env, KtaneEnv):
        raise KeyError(f"{name!r} is not a Keep-Talking environment (ktane/<module>)")
    return KtaneView(env, symbols, alphabet, rulesets)
