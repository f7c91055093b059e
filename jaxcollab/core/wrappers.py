"""Environment wrappers: auto-reset and episode statistics."""

from __future__ import annotations

from typing import Any

import chex
import jax
import jax.numpy as jnp

from jaxcollab.core.env import Environment, StepResult


class Wrapper(Environment):
    """Forwards everything to the wrapped environment unless overridden.

    Wrappers compare and hash by their type and the wrapped environment (equal by value, as
    environments are); a subclass with more static config extends ``__eq__`` / ``__hash__``.
    """

    def __init__(self, env: Environment):
        self.env = env
        self.name = env.name
        self.n_agents = env.n_agents
        self.role_names = env.role_names

    def __getattr__(self, attr: str) -> Any:
        if attr == "env":  # not set yet (e.g. while unpickling): no recursion
            raise AttributeError(attr)
        return getattr(self.env, attr)

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and other.env == self.env

    def __hash__(self) -> int:
        return hash((type(self), self.env))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.env!r})"

    @property
    def default_params(self):
        return self.env.default_params

    @property
    def max_episode_steps(self) -> int:
        return self.env.max_episode_steps

    def reset(self, key, params=None):
        return self.env.reset(key, params)

    def step(self, key, state, actions, params=None) -> StepResult:
        return self.env.step(key, state, actions, params)

    def end_flags(self, state, params=None):
        return self.env.end_flags(state, params)

    def observe(self, state, params=None):
        return self.env.observe(state, params)

    def observation_space(self, params=None):
        return self.env.observation_space(params)

    def action_space(self, params=None):
        return self.env.action_space(params)

    def render_observation(self, obs_row, role):
        return self.env.render_observation(obs_row, role)

    def render_text(self, state, role, params=None):
        return self.env.render_text(state, role, params)


class AutoResetWrapper(Wrapper):
    """Starts a new episode whenever one ends, inside ``step``.

    The returned observation and state belong to the new episode; the observation that ended the
    old episode is kept in ``info["final_obs"]`` (same shape and dtype as ``obs``). Both branches
    are computed and selected with ``jnp.where`` so the step stays a fixed-shape, vmap-safe
    function.
    """

    def step(self, key, state, actions, params=None) -> StepResult:
        key_step, key_reset = jax.random.split(key)
        obs, state, reward, terminated, truncated, info = self.env.step(
            key_step, state, actions, params
        )
        reset_obs, reset_state = self.env.reset(key_reset, params)
        done = jnp.logical_or(terminated, truncated)
        pick = lambda new, old: jnp.where(done, new, old)  # noqa: E731
        info = dict(info, final_obs=obs)
        next_state = jax.tree.map(pick, reset_state, state)
        return pick(reset_obs, obs), next_state, reward, terminated, truncated, info


@chex.dataclass(frozen=True)
class EpisodeStats:
    """Running and completed episode statistics kept by :class:`EpisodeStatsWrapper`.

    ``*_return`` are float32 ``[n_agents]`` summed rewards; lengths are int32 step counts.
    """

    env_state: Any
    episode_return: jax.Array
    episode_length: jax.Array
    last_return: jax.Array
    last_length: jax.Array


class EpisodeStatsWrapper(Wrapper):
    """Tracks per-episode return and length; put it *outside* :class:`AutoResetWrapper`.

    ``info["episode_return"]`` and ``info["episode_length"]`` hold the statistics of the most
    recently completed episode (zeros before the first one ends).
    """

    def reset(self, key, params=None):
        obs, state = self.env.reset(key, params)
        zeros = jnp.zeros((self.n_agents,), jnp.float32)
        return obs, EpisodeStats(
            env_state=state,
            episode_return=zeros,
            episode_length=jnp.int32(0),
            last_return=zeros,
            last_length=jnp.int32(0),
        )

    def step(self, key, state: EpisodeStats, actions, params=None) -> StepResult:
        obs, env_state, reward, terminated, truncated, info = self.env.step(
            key, state.env_state, actions, params
        )
        done = jnp.logical_or(terminated, truncated)
        ret = state.episode_return + reward
        length = state.episode_length + 1
        stats = EpisodeStats(
            env_state=env_state,
            episode_return=jnp.where(done, 0.0, ret),
            episode_length=jnp.where(done, 0, length),
            last_return=jnp.where(done, ret, state.last_return),
            last_length=jnp.where(done, length, state.last_length),
        )
        info = dict(info, episode_return=stats.last_return, episode_length=stats.last_length)
        return obs, stats, reward, terminated, truncated, info

    def end_flags(self, state: EpisodeStats, params=None):
        return self.env.end_flags(state.env_state, params)

    def observe(self, state: EpisodeStats, params=None):
        return self.env.observe(state.env_state, params)

    def render_text(self, state: EpisodeStats, role, params=None):
        return self.env.render_text(state.env_state, role, params)
