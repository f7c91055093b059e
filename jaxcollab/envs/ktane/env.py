"""The Keep-Talking environment under the team contract (GPTNT, §4).

The package is split like the bomb families: :mod:`.mission` (missions, params), :mod:`.state`
(state, a fresh bomb), :mod:`.dispatch` (module types), :mod:`.navigation`, :mod:`.rules`
(turns), :mod:`.observe` (tokens) and :mod:`.render` (text).

Sync mode: turns alternate Defuser, Expert, Defuser, … (``state.turn`` even = Defuser). Each
Defuser turn, whatever it does, costs ``3 s × rate(strikes)`` of bomb time, with the rate read
*before* the turn's action (×1, ×1.25, ×1.5, ×1.75, ×2 at 0, 1, 2, 3, ≥4 strikes); Expert
turns are free. Time is int32 centiseconds. A module action is evaluated on the timer display
shown at the start of the turn. Outcomes, in order of precedence after a turn: solved (every module
solved), strikeout (strikes reach the limit), timeout (time left ≤ 0). Once an episode has an
outcome, :meth:`KtaneEnv.step` leaves the state unchanged (the base class freezes it).

Continuous time (GPTNT C.4.2's asynchronous mode): a Defuser turn may instead last any game
time, given with the action as a :class:`~jaxcollab.envs.ktane.rules.TimedAction` ``(actions,
elapsed_cs)``: its action lands at the turn's start, then ``elapsed × rate`` comes off the
timer (the rate read before the action). A host playing a reply of latency ``L`` plays a wait
of ``L`` (the bomb runs while the Defuser thinks), then the action with its poll sleep. The
bare ``[2, ACTION_LEN]`` array is a turn of Δ (every scripted and learned team);
:attr:`KtaneEnv.max_episode_steps` bounds episodes of Δ turns only.

Actions are int32 ``[2, ACTION_LEN]``: ``(verb, target, w_1 … w_L)`` per role, ``L =
MESSAGE_WORDS`` (see :data:`~jaxcollab.envs.ktane.modules.base.VERBS`). Only the role whose turn
it is acts. The Defuser may ``wait``, ``message`` (send the phrase ``w_1 … w_L`` of vocabulary
tokens, 0 = padding), ``select`` a module slot on the
face it sees (zoom in), go ``back`` (zoom out), ``rotate`` (target 0–3: up, down, left, right),
``flip``, or ``press`` / ``cut`` / ``hold`` / ``release`` a labelled target of the zoomed
module. The Expert may ``wait`` or ``message``; its other verbs count as ``wait``.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.core.env import Environment
from jaxcollab.core.spaces import Discrete, MultiDiscrete
from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane import vocab as V
from jaxcollab.envs.ktane.board import Board
from jaxcollab.envs.ktane.dispatch import context, module_oracle
from jaxcollab.envs.ktane.mission import DEFUSER, ROLE_NAMES, KtaneParams, Mission
from jaxcollab.envs.ktane.modules import module_type
from jaxcollab.envs.ktane.modules.base import ACTION_LEN, VERBS, Ctx
from jaxcollab.envs.ktane.observe import OBS_LEN, observe
from jaxcollab.envs.ktane.rules import transition
from jaxcollab.envs.ktane.ruleset import Ruleset, vanilla_ruleset
from jaxcollab.envs.ktane.state import BombState, init_state


@dataclasses.dataclass(frozen=True)
class KtaneEnv(Environment[BombState, KtaneParams]):
    """A bomb with the modules of a :class:`Mission`, played by a Defuser and an Expert.

    Observations are int32 ``[2, OBS_LEN]`` word tokens (:mod:`~jaxcollab.envs.ktane.vocab`):
    the Defuser's row holds the timer, strikes, face, zoom and last result, then what is on the
    visible face, then the zoomed module's view, then the Expert's last phrase; the Expert's row
    holds only the Defuser's last phrase. Rewards are float32 ``[2]`` (shared): +1 on the turn
    the bomb is solved, -1 on strikeout or timeout, else 0.

    Equal by value over the mission without its seed (:attr:`static_mission`): the seed and the
    name only set :attr:`default_params` and labels, so seeded missions of one module set share
    one compiled environment.
    """

    mission: Mission = dataclasses.field(compare=False)
    name: str = dataclasses.field(default="ktane", compare=False)
    #: The mission without its seed (a runtime param): the static config compared and hashed.
    static_mission: Mission = dataclasses.field(init=False, repr=False)
    #: The module type of each slot and its tables (:class:`Board`), what the rules read.
    board: Board = dataclasses.field(init=False, repr=False, compare=False)

    n_agents = 2
    role_names = ROLE_NAMES

    def __post_init__(self):
        mission = self.mission
        derived = dict(
            static_mission=dataclasses.replace(mission, seed=None),
            board=Board(tuple(module_type(m) for m in mission.modules)),
            # Upper bound on turns per episode (each Defuser turn costs at least 3 s).
            max_turns=2 * math.ceil(mission.time_limit_s / T.TURN_S) + 2,
        )
        for k, v in derived.items():
            object.__setattr__(self, k, v)

    @property
    def max_episode_steps(self) -> int:
        """:attr:`max_turns`: the timer ends every episode within it."""
        return self.max_turns

    @property
    def default_params(self) -> KtaneParams:
        m = self.mission
        return KtaneParams(
            time_limit_cs=jnp.int32(round(m.time_limit_s * 100)),
            max_strikes=jnp.int32(m.max_strikes),
            n_widgets=jnp.int32(m.n_widgets),
            bomb_seed=jnp.int32(-1 if m.seed is None else m.seed),
            rules=vanilla_ruleset(),
        )

    def ruleset_params(self, rules: Ruleset) -> KtaneParams:
        """:attr:`default_params` with another :class:`Ruleset` (e.g. ``random_ruleset(3)``);
        the same compiled functions run it, since rulesets differ only in array values."""
        return self.default_params.replace(rules=rules)

    def observation_space(self, params=None) -> Discrete:
        return Discrete(len(V.VOCAB), (2, OBS_LEN))

    def action_space(self, params=None) -> MultiDiscrete:
        """``(verb, target, w_1 … w_L)`` per role, int32 ``[2, ACTION_LEN]``: a verb id, a
        target (a face slot label, a rotation 0–3 or a module's labelled target) and
        vocabulary tokens."""
        targets = max(T.SLOTS_PER_FACE, 4, int(self.board.n_targets.max()))
        row = [len(VERBS), targets] + [len(V.VOCAB)] * (ACTION_LEN - 2)
        return MultiDiscrete([row, row])

    # --- reset ----------------------------------------------------------------------------

    def reset(self, key, params=None):
        params = self._params(params)
        state = self.init_state(key, params)
        return self.observe(state, params), state

    def init_state(self, key, params=None) -> BombState:
        """:meth:`reset` without the observation: a fresh bomb (edgework, then each module)."""
        return init_state(self.board, key, self._params(params))

    def context(self, state: BombState, params=None) -> Ctx:
        """What module rules read: edgework facts, strikes, the displayed timer digits and the
        params' rule tables."""
        return context(state, self._params(params).rules)

    def module_oracle(self, state: BombState, params=None) -> tuple[jax.Array, jax.Array]:
        """The zoomed module's next correct ``(verb, target)`` under the params' rules (reads
        hidden state; for agents)."""
        return module_oracle(self.board, state, self._params(params).rules)

    # --- step -----------------------------------------------------------------------------

    def step_env(self, key, state: BombState, actions, params):
        """One turn: ``(state, reward, info)`` (see :func:`jaxcollab.envs.ktane.rules.
        transition`)."""
        return transition(self.board, key, state, actions, params)

    def end_flags(self, state: BombState, params=None):
        """Terminated once the bomb has an outcome (solved, strikeout, timeout: the timer is
        part of the task); never truncated."""
        return state.outcome != T.RUNNING, jnp.bool_(False)

    def observe(self, state: BombState, params=None):
        return observe(self.board, state, self._params(params))

    # --- host side --------------------------------------------------------------------------

    def render_observation(self, obs_row, role: int, rules: Ruleset | None = None) -> str:
        """Text of role ``role``'s observation row; the Expert's starts with the manual of
        ``rules`` (default: vanilla).

        Raises:
            ValueError: ``role`` is not 0 (defuser) or 1 (expert).
        """
        from jaxcollab.envs.ktane.render import manual_text, tokens_to_text

        self._check_role(role)
        text = tokens_to_text(np.asarray(obs_row))
        if role == DEFUSER:
            return text
        return manual_text(vanilla_ruleset() if rules is None else rules) + "\n\n" + text

    def render_text(self, state: BombState, role: int, params=None) -> str:
        """Role ``role``'s observation of ``state`` as text; the Expert's manual is that of
        ``params.rules``.

        Raises:
            ValueError: ``role`` is not 0 (defuser) or 1 (expert).
        """
        self._check_role(role)
        params = self._params(params)
        return self.render_observation(self.observe_host(state, params)[role], role, params.rules)
