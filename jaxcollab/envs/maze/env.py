"""The two-agent split-mask maze under the team env contract (Narrowing the
Collaboration Gap, Probably, §5 and App. E).

``maze/split-6x6``: the state holds the maze, both masks and the current position; each agent
observes its masked grid with ``@`` on the position (:func:`~.text.views`). A step applies the
team's joint move: the move of agent ``decider`` (the last speaker of the conversation; the
other agent's action is ignored). A move other than the next move of the unique path ends the
episode (failure); reaching the goal ends it with success and reward 1 for both agents;
running out of ``max_steps`` truncates it. Ended episodes are frozen (by the base class).
"""

from __future__ import annotations

import dataclasses

import chex
import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.core.env import Environment
from jaxcollab.core.spaces import Discrete
from jaxcollab.envs.maze.generator import (
    HEIGHT,
    MAX_WIDTH,
    MIN_SIDE,
    MOVE_DELTAS,
    WALL_PROB,
    WIDTH,
    draw_and_check,
    path_of,
)
from jaxcollab.envs.maze.text import N_AGENTS, VOCAB, decode, sample_masks, views

ROLE_NAMES = ("agent0", "agent1")
#: Episode endings (``MazeState.ending``).
RUNNING, SUCCESS, WRONG_MOVE, OUT_OF_STEPS = range(4)
#: Candidates per rejection round inside ``reset``; ``make_mazes(key, 1, chunk=DRAWS_PER_TRY)``
#: draws the same maze as ``reset(key)``.
DRAWS_PER_TRY = 512


@chex.dataclass(frozen=True)
class MazeParams:
    """Dynamic parameters: ``max_steps`` int32 ``[]``, moves before truncation."""

    max_steps: jax.Array


@chex.dataclass(frozen=True)
class MazeState:
    """Episode state (hidden from agents except through :meth:`MazeEnv.observe`).

    Attributes:
        open_: bool ``[C]`` open cells, row-major (``C = H·W``).
        masks: bool ``[2, C]`` cells each agent sees (complementary halves).
        moves: int32 ``[C − 1]`` the unique path's move ids (``d r u l``), −1 padded.
        n_moves: int32 ``[]`` path length; pos: int32 ``[]`` flat position;
        step: int32 ``[]`` moves made so far;
        ending: int32 ``[]`` one of :data:`RUNNING`, :data:`SUCCESS`, :data:`WRONG_MOVE`,
        :data:`OUT_OF_STEPS`.
    """

    open_: jax.Array
    masks: jax.Array
    moves: jax.Array
    n_moves: jax.Array
    pos: jax.Array
    step: jax.Array
    ending: jax.Array


def state_from_maze(open_flat, masks, moves, n_moves) -> MazeState:
    """A state at the start of a given maze (arrays as in :class:`MazeState`; vmappable)."""
    return MazeState(
        open_=jnp.asarray(open_flat, bool),
        masks=jnp.asarray(masks, bool),
        moves=jnp.asarray(moves, jnp.int32),
        n_moves=jnp.asarray(n_moves, jnp.int32),
        pos=jnp.int32(0),
        step=jnp.int32(0),
        ending=jnp.int32(RUNNING),
    )


@dataclasses.dataclass(frozen=True)
class MazeEnv(Environment[MazeState, MazeParams]):
    """Two agents with complementary half views walk the maze's unique path (module docstring).

    Equal by value over ``shape``, ``wall_prob`` and ``decider`` (its static config).
    ``info`` keys: ``move`` (the joint move), ``correct`` (it was the path's next move),
    ``success`` (the goal was reached).

    Raises:
        ValueError: ``decider`` not 0 or 1, or a bad ``shape`` / ``wall_prob``.
    """

    shape: tuple[int, int] = (HEIGHT, WIDTH)
    wall_prob: float = WALL_PROB
    decider: int = 1

    n_agents = N_AGENTS
    role_names = ROLE_NAMES

    def __post_init__(self):
        if self.decider not in range(N_AGENTS):
            raise ValueError(f"decider must be 0 or 1, got {self.decider!r}")
        h, w = self.shape
        if (h < MIN_SIDE or not MIN_SIDE <= w <= MAX_WIDTH or not 0 <= self.wall_prob < 1
                or (h * w) % 2):
            raise ValueError(f"bad maze shape {self.shape} or wall_prob {self.wall_prob}")
        object.__setattr__(self, "shape", (int(h), int(w)))
        object.__setattr__(self, "wall_prob", float(self.wall_prob))
        object.__setattr__(self, "n_cells", h * w)
        object.__setattr__(self, "name", f"maze/split-{h}x{w}")

    @property
    def max_episode_steps(self) -> int:
        """Steps after which every episode has ended at the default ``max_steps``."""
        return self.n_cells

    @property
    def default_params(self) -> MazeParams:
        return MazeParams(max_steps=jnp.int32(self.n_cells))

    def observation_space(self, params=None) -> Discrete:
        return Discrete(len(VOCAB), (N_AGENTS, self.n_cells))

    def action_space(self, params=None) -> Discrete:
        return Discrete(4, (N_AGENTS,))

    def _draw_maze(self, key: jax.Array) -> jax.Array:
        """One accepted maze, bool ``[H, W]``: the first accepted candidate of the rejection
        rounds ``draw_and_check(fold_in(key, i), DRAWS_PER_TRY)``, i = 0, 1, … (a
        ``lax.while_loop``), exactly as :func:`~.generator.sample_mazes` draws on the host."""

        def body(carry):
            i, _, _ = carry
            open_, accept = draw_and_check(jax.random.fold_in(key, i), DRAWS_PER_TRY,
                                           self.wall_prob, self.shape)
            return i + 1, jnp.any(accept), open_[jnp.argmax(accept)]

        init = (jnp.int32(0), jnp.bool_(False), jnp.zeros(self.shape, bool))
        return jax.lax.while_loop(lambda c: ~c[1], body, init)[2]

    def reset(self, key, params=None):
        params = self._params(params)
        k_maze, k_mask = jax.random.split(key)  # as make_mazes does
        open_ = self._draw_maze(k_maze)
        moves, n_moves = path_of(open_[None])
        masks = sample_masks(k_mask, 1, self.n_cells)[0]
        state = state_from_maze(open_.reshape(-1), masks, moves[0], n_moves[0])
        return self.observe(state, params), state

    def step_env(self, key, state: MazeState, actions, params):
        move = jnp.asarray(actions, jnp.int32)[self.decider]
        expected = state.moves[jnp.clip(state.step, 0, self.n_cells - 2)]
        correct = (move == expected) & (state.step < state.n_moves)
        delta = jnp.asarray(MOVE_DELTAS @ np.array([self.shape[1], 1]), jnp.int32)[expected]
        step = state.step + 1
        success = correct & (step == state.n_moves)
        ending = jnp.select([success, ~correct, step >= params.max_steps],
                            [SUCCESS, WRONG_MOVE, OUT_OF_STEPS], RUNNING)
        state = state.replace(pos=state.pos + jnp.where(correct, delta, 0), step=step,
                              ending=ending.astype(jnp.int32))
        reward = jnp.full((N_AGENTS,), success, jnp.float32)
        return state, reward, {"move": move, "correct": correct, "success": success}

    def end_flags(self, state: MazeState, params=None):
        """Terminated on success or a wrong move; truncated when ``max_steps`` ran out."""
        return ((state.ending == SUCCESS) | (state.ending == WRONG_MOVE),
                state.ending == OUT_OF_STEPS)

    def observe(self, state: MazeState, params=None):
        return views(state.open_, state.masks, state.pos)[:N_AGENTS]

    def render_observation(self, obs_row, role: int) -> str:
        """Role's masked grid, one line per row (``#`` wall, ``.`` open, ``?`` unseen, ``@``).

        Raises:
            ValueError: ``role`` not 0 or 1.
        """
        self._check_role(role)
        text = decode(obs_row)
        w = self.shape[1]
        return "\n".join(text[i : i + w] for i in range(0, len(text), w))
