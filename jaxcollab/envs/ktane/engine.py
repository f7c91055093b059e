"""The bomb: missions, state, sync-mode turns and observations (spec ``ktane-rules.md`` §1).

Sync mode: turns alternate Defuser, Expert, Defuser, … (``state.turn`` even = Defuser). Each
Defuser turn, whatever it does, costs ``3 s × rate(strikes)`` of bomb time, with the rate read
*before* the turn's action (×1, ×1.25, ×1.5, ×1.75, ×2 at 0, 1, 2, 3, ≥4 strikes); Expert turns are
free. Time is int32 centiseconds. A module action is evaluated on the timer display shown at
the start of the turn. Outcomes, in order of precedence after a turn: solved (every module
solved), strikeout (strikes reach the limit), timeout (time left ≤ 0). Once an episode has an
outcome, :meth:`KtaneEnv.step` leaves the state unchanged.

Actions are int32 ``[2, 3]``: ``(verb, target, word)`` per role (see
:data:`~jaxcollab.envs.ktane.modules.base.VERBS`). Only the role whose turn it is acts. The
Defuser may ``wait``, ``message`` (send one vocabulary word), ``select`` a module slot on the
face it sees (zoom in), go ``back`` (zoom out), ``rotate`` (target 0–3: up, down, left, right),
``flip``, or ``press`` / ``cut`` / ``hold`` / ``release`` a labelled target of the zoomed
module. The Expert may ``wait`` or ``message``; its other verbs count as ``wait``.
"""

from __future__ import annotations

import dataclasses
import math

import chex
import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.core.env import Environment
from jaxcollab.core.spaces import Discrete
from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane import vocab as V
from jaxcollab.envs.ktane.draw import fold_in
from jaxcollab.envs.ktane.edgework import Edgework, display_digits, facts, sample_edgework
from jaxcollab.envs.ktane.modules import module_type
from jaxcollab.envs.ktane.modules.base import (
    BACK,
    FLIP,
    MESSAGE,
    MODULE_VERBS,
    ROTATE,
    SELECT,
    VERBS,
    VIEW_LEN,
    WAIT,
    Ctx,
)

DEFUSER, EXPERT = 0, 1
ROLE_NAMES = ("defuser", "expert")

#: GPTNT single-module time limits in seconds (spec §"Roles, turns, time").
GPTNT_TIME_LIMIT_S = {
    "wires": 81,
    "keypad": 90,
    "whos_on_first": 93,
    "memory": 105,
    "simon": 135,
    "button": 144,
    "complicated_wires": 126,
    "wire_sequence": 135,
    "morse": 144,
    "maze": 183,
    "passwords": 231,
}


@dataclasses.dataclass(frozen=True)
class Mission:
    """A mission as data: which modules, how long, how many strikes, how many widgets.

    Attributes:
        modules: module type names, one per slot (front slots 0–5, then back 6–11).
        time_limit_s: bomb time in seconds (> 0).
        max_strikes: the strike that ends the episode (1–9; default 3).
        n_widgets: optional widgets on the casing (0–5).
        seed: the mission's own seed (fixed missions reuse it for their episodes' keys).

    Raises:
        ValueError / KeyError: a value out of range or an unknown module name (listing valid).
    """

    modules: tuple[str, ...]
    time_limit_s: float
    max_strikes: int = 3
    n_widgets: int = 5
    seed: int = 0

    def __post_init__(self):
        object.__setattr__(self, "modules", tuple(self.modules))
        if not 1 <= len(self.modules) <= T.MAX_SLOTS:
            raise ValueError(f"a mission needs 1-{T.MAX_SLOTS} modules, got {self.modules!r}")
        for name in self.modules:
            module_type(name)
        if not self.time_limit_s > 0:
            raise ValueError(f"time_limit_s must be positive, got {self.time_limit_s!r}")
        if not 1 <= self.max_strikes <= 9:
            raise ValueError(f"max_strikes must be in 1-9, got {self.max_strikes!r}")
        if not 0 <= self.n_widgets <= T.MAX_WIDGETS:
            raise ValueError(f"n_widgets must be in 0-{T.MAX_WIDGETS}, got {self.n_widgets!r}")


@chex.dataclass(frozen=True)
class KtaneParams:
    """Dynamic parameters (int32 scalars): ``time_limit_cs``, ``max_strikes``, ``n_widgets``."""

    time_limit_cs: jax.Array
    max_strikes: jax.Array
    n_widgets: jax.Array


@chex.dataclass(frozen=True)
class BombState:
    """Full episode state (the Defuser sees part of it, the Expert none).

    Attributes:
        edge: serial number and widgets.
        modules: int32 ``[n_slots, MOD_WORDS]`` packed module states; solved: bool ``[n_slots]``.
        strikes, time_left_cs, turn: int32 ``[]``; face: int32 ``[]`` index into ``FACES``;
        zoom: int32 ``[]`` zoomed slot or -1; feedback: int32 ``[]`` token of the Defuser's last
        turn result (none/ok/wait/strike/solved/invalid); messages: int32 ``[2]`` last word sent
        by each role (0 = none); outcome: int32 ``[]`` index into ``OUTCOMES``;
        n_actions: int32 ``[]`` Defuser turns that were not messages; n_messages: int32 ``[2]``.
    """

    edge: Edgework
    modules: jax.Array
    solved: jax.Array
    strikes: jax.Array
    time_left_cs: jax.Array
    turn: jax.Array
    face: jax.Array
    zoom: jax.Array
    feedback: jax.Array
    messages: jax.Array
    outcome: jax.Array
    n_actions: jax.Array
    n_messages: jax.Array


HEADER_LEN = 26
FACE_LEN = 48
OBS_LEN = HEADER_LEN + FACE_LEN + VIEW_LEN
_FEEDBACK = V.toks(("none", "ok", "wait", "strike", "solved", "invalid"))


def _pad(tokens: jax.Array, length: int) -> jax.Array:
    return jnp.pad(tokens, (0, length - tokens.shape[0]))


class KtaneEnv(Environment[BombState, KtaneParams]):
    """A bomb with the modules of a :class:`Mission`, played by a Defuser and an Expert.

    Observations are int32 ``[2, OBS_LEN]`` word tokens (:mod:`~jaxcollab.envs.ktane.vocab`):
    the Defuser's row holds the timer, strikes, face, zoom, last result and the Expert's last
    word, then what is on the visible face, then the zoomed module's view; the Expert's row
    holds only the Defuser's last word. Rewards are float32 ``[2]`` (shared): +1 on the turn
    the bomb is solved, -1 on strikeout or timeout, else 0.
    """

    n_agents = 2
    role_names = ROLE_NAMES

    def __init__(self, mission: Mission, name: str):
        self.mission, self.name = mission, name
        self.types = [module_type(m) for m in mission.modules]
        self.kinds = list(dict.fromkeys(self.types))  # distinct types, lax.switch branches
        self.slot_kind = np.array([self.kinds.index(t) for t in self.types], np.int32)
        self.n_slots = len(self.types)
        self.slot_face = np.arange(self.n_slots, dtype=np.int32) // T.SLOTS_PER_FACE
        self.n_targets = np.array([t.n_targets for t in self.kinds], np.int32)
        self.accepts = np.array([[v in t.verbs for v in range(len(VERBS))] for t in self.kinds])
        #: Upper bound on turns per episode (each Defuser turn costs at least 3 s).
        self.max_turns = 2 * math.ceil(mission.time_limit_s / T.TURN_S) + 2

    @property
    def default_params(self) -> KtaneParams:
        m = self.mission
        return KtaneParams(
            time_limit_cs=jnp.int32(round(m.time_limit_s * 100)),
            max_strikes=jnp.int32(m.max_strikes),
            n_widgets=jnp.int32(m.n_widgets),
        )

    def observation_space(self, params=None) -> Discrete:
        return Discrete(len(V.VOCAB), (2, OBS_LEN))

    def action_space(self, params=None) -> Discrete:
        """``(verb, target, word)`` per role; bounded by the vocabulary size (the largest)."""
        return Discrete(len(V.VOCAB), (2, 3))

    # --- reset ----------------------------------------------------------------------------

    def reset(self, key, params=None):
        params = self._params(params)
        state = self.init_state(key, params)
        return self.observe(state, params), state

    def init_state(self, key, params=None) -> BombState:
        """:meth:`reset` without the observation: a fresh bomb (edgework, then each module)."""
        params = self._params(params)
        edge = sample_edgework(fold_in(key, 0), params.n_widgets)
        f = facts(edge)
        modules = jnp.stack(
            [t.layout.pack(t.generate(fold_in(key, i + 1), f)) for i, t in enumerate(self.types)]
        )
        zero = jnp.int32(0)
        return BombState(
            edge=edge,
            modules=modules,
            solved=jnp.zeros(self.n_slots, bool),
            strikes=zero,
            time_left_cs=params.time_limit_cs,
            turn=zero,
            face=zero,
            zoom=jnp.int32(-1),
            feedback=jnp.int32(_FEEDBACK[0]),
            messages=jnp.zeros(2, jnp.int32),
            outcome=jnp.int32(T.RUNNING),
            n_actions=zero,
            n_messages=jnp.zeros(2, jnp.int32),
        )

    # --- module dispatch --------------------------------------------------------------------

    def _switch(self, kind, method: str, *args):
        """``lax.switch`` over the mission's module types, calling ``method`` on unpacked state."""

        def branch(t):
            def call(vec, *rest):
                return getattr(t, method)(t.layout.unpack(vec), *rest)

            return call

        return jax.lax.switch(kind, [branch(t) for t in self.kinds], *args)

    def _act(self, key, vec, kind, verb, target, ctx):
        def branch(t):
            def call(key, vec, verb, target, ctx):
                m, strike, solved, valid = t.act(key, t.layout.unpack(vec), verb, target, ctx)
                return t.layout.pack(m), strike, solved, valid

            return call

        return jax.lax.switch(kind, [branch(t) for t in self.kinds], key, vec, verb, target, ctx)

    def context(self, state: BombState) -> Ctx:
        """What module rules read: edgework facts, strikes and the displayed timer digits."""
        return Ctx(
            facts=facts(state.edge),
            strikes=state.strikes,
            display=display_digits(state.time_left_cs),
        )

    def module_oracle(self, state: BombState) -> tuple[jax.Array, jax.Array]:
        """The zoomed module's next correct ``(verb, target)`` (reads hidden state; for agents)."""
        z = jnp.maximum(state.zoom, 0)
        return self._switch(
            jnp.asarray(self.slot_kind)[z], "oracle", state.modules[z], self.context(state)
        )

    # --- step -----------------------------------------------------------------------------

    def step(self, key, state: BombState, actions, params=None):
        params = self._params(params)
        new, reward, info = self.transition(key, state, actions, params)
        terminated = new.outcome != T.RUNNING
        return self.observe(new, params), new, reward, terminated, jnp.bool_(False), info

    def transition(self, key, state: BombState, actions, params=None):
        """:meth:`step` without the observation: ``(state, reward, info)`` (for fast rollouts).

        ``info`` holds int32/bool scalars ``role`` (who acted), ``strike``, ``valid`` (the
        action had an effect or was a wait/message) and ``outcome``.
        """
        params = self._params(params)
        actions = jnp.asarray(actions, jnp.int32)
        role = state.turn % 2
        verb, target, word = actions[role, 0], actions[role, 1], actions[role, 2]
        word = jnp.clip(word, 0, len(V.VOCAB) - 1)
        defuser_state, strike, valid = self._defuser_turn(key, state, verb, target, word, params)
        expert_state = self._expert_turn(state, verb, word)
        running = state.outcome == T.RUNNING
        pick = lambda d, e, old: jnp.where(running, jnp.where(role == DEFUSER, d, e), old)  # noqa: E731
        new = jax.tree.map(pick, defuser_state, expert_state, state)
        ended = running & (new.outcome != T.RUNNING)
        won = new.outcome == T.SOLVED
        reward = jnp.full((2,), jnp.where(ended, jnp.where(won, 1.0, -1.0), 0.0), jnp.float32)
        info = {
            "role": role,
            "strike": running & (role == DEFUSER) & strike,
            "valid": running & jnp.where(role == DEFUSER, valid, True),
            "outcome": new.outcome,
        }
        return new, reward, info

    def _navigate(self, state, verb, target):
        """Face and zoom after a select / back / rotate / flip; returns (face, zoom, valid)."""
        slot = jnp.clip(target, 0, self.n_slots - 1)
        select = (
            (verb == SELECT) & (target == slot) & (jnp.asarray(self.slot_face)[slot] == state.face)
        )
        rotate = (verb == ROTATE) & (target >= 0) & (target < len(T.ROTATIONS))
        flip = verb == FLIP
        back = (verb == BACK) & (state.zoom >= 0)
        turned = jnp.asarray(T.NEXT_FACE)[state.face, jnp.clip(target, 0, 3)]
        face = jnp.where(
            rotate, turned, jnp.where(flip, jnp.asarray(T.FLIP_FACE)[state.face], state.face)
        )
        zoom = jnp.where(select, slot, jnp.where(rotate | flip | back, -1, state.zoom))
        return face, zoom, select | rotate | flip | back

    def _defuser_turn(self, key, state, verb, target, word, params):
        face, zoom, nav_ok = self._navigate(state, verb, target)
        z = jnp.maximum(state.zoom, 0)
        kind = jnp.asarray(self.slot_kind)[z]
        n_targets = jnp.asarray(self.n_targets)[kind]
        can_act = (
            jnp.isin(verb, jnp.asarray(MODULE_VERBS))
            & (state.zoom >= 0)
            & ~state.solved[z]
            & jnp.asarray(self.accepts)[kind, jnp.clip(verb, 0, len(VERBS) - 1)]
            & (target >= 0)
            & (target < n_targets)
        )
        vec, strike, solved_now, valid = self._act(
            key,
            state.modules[z],
            kind,
            verb,
            jnp.clip(target, 0, n_targets - 1),
            self.context(state),
        )
        acted = can_act & valid
        strike, solved_now = acted & strike, acted & solved_now
        solved = state.solved.at[z].set(state.solved[z] | solved_now)
        strikes = state.strikes + strike
        message = verb == MESSAGE
        ok = nav_ok | acted | message | (verb == WAIT)
        feedback = jnp.select(
            [strike, solved_now, ~ok, verb == WAIT],
            [_FEEDBACK[3], _FEEDBACK[4], _FEEDBACK[5], _FEEDBACK[2]],
            _FEEDBACK[1],
        )
        time_left = (
            state.time_left_cs
            - jnp.asarray(T.TURN_COST_CS)[jnp.minimum(state.strikes, len(T.TURN_COST_CS) - 1)]
        )
        outcome = jnp.select(
            [jnp.all(solved), strikes >= params.max_strikes, time_left <= 0],
            [T.SOLVED, T.STRIKEOUT, T.TIMEOUT],
            T.RUNNING,
        )
        new = state.replace(
            modules=state.modules.at[z].set(jnp.where(acted, vec, state.modules[z])),
            solved=solved,
            strikes=strikes,
            time_left_cs=time_left,
            turn=state.turn + 1,
            face=face,
            zoom=zoom,
            feedback=feedback.astype(jnp.int32),
            messages=state.messages.at[DEFUSER].set(
                jnp.where(message, word, state.messages[DEFUSER])
            ),
            outcome=outcome.astype(jnp.int32),
            n_actions=state.n_actions + ~message,
            n_messages=state.n_messages.at[DEFUSER].add(message),
        )
        return new, strike, ok

    def _expert_turn(self, state, verb, word):
        message = verb == MESSAGE
        return state.replace(
            turn=state.turn + 1,
            messages=state.messages.at[EXPERT].set(
                jnp.where(message, word, state.messages[EXPERT])
            ),
            n_messages=state.n_messages.at[EXPERT].add(message),
        )

    # --- observations ---------------------------------------------------------------------

    def observe(self, state: BombState, params=None):
        params = self._params(params)
        defuser = jnp.concatenate(
            [self._header(state, params), self._face_view(state), self._zoom_view(state)]
        )
        expert = _pad(
            jnp.stack([V.tok("defuser"), V.tok("says"), self._word(state.messages[DEFUSER])]),
            OBS_LEN,
        )
        return jnp.stack([defuser, expert]).astype(jnp.int32)

    @staticmethod
    def _word(token):
        return jnp.where(token == 0, V.tok("none"), token)

    def _header(self, state, params):
        d = jnp.asarray(V.DIGIT)[display_digits(state.time_left_cs)]
        sep = jnp.where(state.time_left_cs >= 6000, V.tok(":"), V.tok("."))
        zoom = jnp.where(
            state.zoom >= 0, jnp.asarray(V.LABEL)[jnp.maximum(state.zoom, 0)], V.tok("none")
        )
        bar = V.tok("|")
        digit = jnp.asarray(V.DIGIT)
        return jnp.stack(
            [
                V.tok("time"),
                d[0],
                d[1],
                sep,
                d[2],
                d[3],
                bar,
                V.tok("strikes"),
                digit[jnp.minimum(state.strikes, 9)],
                V.tok("of"),
                digit[params.max_strikes],
                bar,
                V.tok("face"),
                jnp.asarray(V.toks(T.FACES))[state.face],
                bar,
                V.tok("zoom"),
                zoom,
                bar,
                V.tok("last"),
                state.feedback,
                bar,
                V.tok("expert"),
                V.tok("says"),
                self._word(state.messages[EXPERT]),
                bar,
                bar,
            ]
        )

    def _face_view(self, state):
        """Tokens of the visible face: module slots on front/back, edgework on the sides."""
        titles = V.toks([t.title for t in self.types])
        status = jnp.where(state.solved, V.tok("solved"), V.tok("unsolved"))
        slots = jnp.stack(
            [
                jnp.full(self.n_slots, V.tok("module")),
                jnp.asarray(V.LABEL[: self.n_slots]),
                jnp.asarray(titles),
                status,
                jnp.full(self.n_slots, V.tok(";")),
            ],
            axis=1,
        )
        slots = jnp.where((jnp.asarray(self.slot_face) == state.face)[:, None], slots, 0)
        modules = _pad(slots.reshape(-1), FACE_LEN)
        return jnp.where(state.face < 2, modules, _side_view(state.edge, state.face))

    def _zoom_view(self, state):
        z = jnp.maximum(state.zoom, 0)
        view = self._switch(jnp.asarray(self.slot_kind)[z], "view", state.modules[z])
        return jnp.where(state.zoom >= 0, view, 0)

    # --- host side --------------------------------------------------------------------------

    def render_observation(self, obs_row, role: int) -> str:
        """Text of role ``role``'s observation row; the Expert's starts with the manual.

        Raises:
            ValueError: ``role`` is not 0 (defuser) or 1 (expert).
        """
        from jaxcollab.envs.ktane.render import manual_text, tokens_to_text

        self._check_role(role)
        text = tokens_to_text(np.asarray(obs_row))
        return text if role == DEFUSER else manual_text() + "\n\n" + text


def _side_view(edge: Edgework, face: jax.Array) -> jax.Array:
    """Tokens of a side face: the serial number (if here), then each widget here as
    ``kind detail… ;`` in 8 tokens (battery holder; indicator lit|unlit label; port names)."""
    w = T.MAX_WIDGETS
    port_tok = jnp.asarray(V.toks(T.PORT_NAMES))
    ports = jnp.where((edge.b[:, None] >> jnp.arange(6)) & 1 == 1, port_tok, 0)  # [w, 6]
    ports = ports.at[:, 0].set(jnp.where(jnp.all(ports == 0, 1), V.tok("empty"), ports[:, 0]))
    holder = jnp.asarray(V.toks(T.HOLDERS))[jnp.clip(edge.a - 1, 0, 1)]
    lit = jnp.where(edge.b == 1, V.tok("lit"), V.tok("unlit"))
    label = jnp.asarray(V.toks(T.INDICATOR_LABELS))[jnp.clip(edge.a, 0, 10)]
    zeros = jnp.zeros((w, 6), jnp.int32)
    details = jnp.stack(
        [
            zeros.at[:, 0].set(holder),
            zeros.at[:, 0].set(lit).at[:, 1].set(label),
            ports,
        ]
    )  # [3 kinds, w, 6]
    kind = jnp.clip(edge.kind, 0, 2)
    rows = jnp.concatenate(
        [
            jnp.asarray(V.toks(T.WIDGET_KINDS))[kind][:, None],
            details[kind, jnp.arange(w)],
            jnp.full((w, 1), V.tok(";")),
        ],
        axis=1,
    )
    rows = jnp.where(((edge.side == face) & (edge.kind >= 0))[:, None], rows, 0)
    serial = jnp.concatenate(
        [
            jnp.array([V.tok("serial")]),
            jnp.asarray(V.SERIAL_CHAR)[edge.serial],
            jnp.array([V.tok(";")]),
        ]
    )
    serial = jnp.where(edge.serial_side == face, serial, 0)
    return _pad(jnp.concatenate([serial, rows.reshape(-1)]), FACE_LEN)
