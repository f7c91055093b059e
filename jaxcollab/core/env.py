"""The environment contract shared by every jaxcollab task.

Semantics follow gymnax 1.0, extended to teams:

* ``params`` is a pytree of *dynamic* values (anything that may change without recompiling);
  shapes and other compile-time constants live on the environment object.
* The PRNG key is always an argument and never part of the state an agent can observe.
* Teams use a leading agent axis: ``obs[n_agents, ...]``, ``actions[n_agents, ...]``,
  ``reward[n_agents]``.
* ``reset`` and ``step`` are pure, jit- and vmap-safe functions of arrays. Auto-reset lives in
  :class:`jaxcollab.core.wrappers.AutoResetWrapper`, not here.
* **Ended episodes are frozen** (pgx semantics): ``terminated`` means the task reached an ending
  (solved, failed, exploded), ``truncated`` that a step/round budget ran out without one. Once
  either is set, ``step`` is a no-op: it returns the same state, zero reward and the same
  flags, whatever the actions. Both flags are functions of the state, so every family answers
  the same way after the end (tested over every registered environment).
* Every rollout goes through :func:`jaxcollab.core.rollout.rollout`, which gives policies keys
  the environment never consumes.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import jax
import numpy as np

from jaxcollab.core.spaces import Space

State = TypeVar("State")
Params = TypeVar("Params")

#: ``(obs, state, reward, terminated, truncated, info)`` as returned by :meth:`Environment.step`.
StepResult = tuple[jax.Array, Any, jax.Array, jax.Array, jax.Array, dict[str, Any]]


class Environment(Generic[State, Params]):
    """Base class of a team environment.

    Subclasses set ``name``, ``n_agents`` and ``role_names`` and implement
    :attr:`default_params`, :meth:`reset`, :meth:`step`, :meth:`observe`,
    :meth:`observation_space`, :meth:`action_space` and :meth:`render_observation`. Host-side
    helpers (:meth:`render_observation`, :meth:`render_text`) are plain Python and never run
    under ``jit``.
    """

    name: str = "env"
    n_agents: int = 1
    role_names: tuple[str, ...] = ("agent",)

    @property
    def max_episode_steps(self) -> int:
        """A static bound (host int): with the default params every episode has ended after
        this many steps (the ``max_steps`` a full rollout needs)."""
        raise NotImplementedError

    @property
    def default_params(self) -> Params:
        """The default dynamic parameters (a pytree)."""
        raise NotImplementedError

    def reset(self, key: jax.Array, params: Params | None = None) -> tuple[jax.Array, State]:
        """Start an episode.

        Args:
            key: a PRNG key.
            params: dynamic parameters; ``None`` means :attr:`default_params`.

        Returns:
            ``(obs, state)`` with ``obs`` of shape ``observation_space().shape`` (int32 tokens,
            leading agent axis).
        """
        raise NotImplementedError

    def step(
        self, key: jax.Array, state: State, actions: jax.Array, params: Params | None = None
    ) -> StepResult:
        """Advance one step with the joint action ``actions[n_agents, ...]``.

        Args:
            key: a PRNG key for the environment's own randomness (never one a policy sees).
            state: the current state; actions: the joint action; params: ``None`` = default.

        Returns:
            ``(obs, state, reward, terminated, truncated, info)``: ``reward`` is float32
            ``[n_agents]``; ``terminated`` (the task reached an ending) and ``truncated`` (a
            step or round budget ran out first) are boolean scalars; ``info`` is a dict of
            arrays with fixed keys. If the episode had already ended, the returned state is
            ``state``, the reward zero and the flags those of the ending step (frozen, pgx).
        """
        raise NotImplementedError

    def observe(self, state: State, params: Params | None = None) -> jax.Array:
        """Each role's observation, built only from what that role perceives.

        Returns:
            int32 tokens with a leading agent axis, ``observation_space().shape``.
        """
        raise NotImplementedError

    def observation_space(self, params: Params | None = None) -> Space:
        """The space of the joint observation (leading agent axis)."""
        raise NotImplementedError

    def action_space(self, params: Params | None = None) -> Space:
        """The space of the joint action (leading agent axis)."""
        raise NotImplementedError

    def sample_action(self, key: jax.Array, params: Params | None = None) -> Any:
        """A uniformly random joint action (for random teams and property tests; jit-safe).

        The default samples :meth:`action_space`; families whose actions are pytrees override.
        """
        return self.action_space(params).sample(key)

    def render_observation(self, obs_row, role: int) -> str:
        """Host side: the text of one role's observation row, decoded from its tokens only.

        Args:
            obs_row: int tokens of role ``role``'s observation (``observe(state)[role]``, any
                array-like of the row's shape).
            role: the role index (``0 .. n_agents - 1``); some families prefix a role's text
                with fixed material (e.g. the Keep-Talking Expert's manual).

        Returns:
            The text an LLM reads. ``render_text(state, role) ==
            render_observation(observe(state)[role], role)``.

        Raises:
            ValueError: ``role`` out of range, or a token that is not valid in its position.
        """
        raise NotImplementedError

    def render_text(self, state: State, role: int, params: Params | None = None) -> str:
        """Host side: role ``role``'s observation of ``state`` as text (what an LLM reads),
        i.e. :meth:`render_observation` of ``observe(state, params)[role]``.

        Raises:
            ValueError: ``role`` out of range.
        """
        self._check_role(role)
        if "_observe_jit" not in self.__dict__:
            self._observe_jit = jax.jit(self.observe)
        tokens = np.asarray(jax.device_get(self._observe_jit(state, self._params(params))))
        return self.render_observation(tokens[role], role)

    def _check_role(self, role: int) -> None:
        if isinstance(role, bool) or role not in range(self.n_agents):
            names = ", ".join(f"{i} ({n})" for i, n in enumerate(self.role_names))
            raise ValueError(f"role must be one of {names}; got {role!r}")

    def _params(self, params: Params | None) -> Params:
        return self.default_params if params is None else params

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, n_agents={self.n_agents})"
