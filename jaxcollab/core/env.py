"""The environment contract shared by every jaxcollab task (DESIGN.md, "The environment contract").

Semantics follow gymnax 1.0, extended to teams:

* ``params`` is a pytree of *dynamic* values (anything that may change without recompiling);
  shapes and other compile-time constants live on the environment object.
* The PRNG key is always an argument and never part of the state an agent can observe.
* Teams use a leading agent axis: ``obs[n_agents, ...]``, ``actions[n_agents, ...]``,
  ``reward[n_agents]``.
* ``reset`` and ``step`` are pure, jit- and vmap-safe functions of arrays. Auto-reset lives in
  :class:`jaxcollab.core.wrappers.AutoResetWrapper`, not here.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import jax

from jaxcollab.core.spaces import Space

State = TypeVar("State")
Params = TypeVar("Params")

#: ``(obs, state, reward, terminated, truncated, info)`` as returned by :meth:`Environment.step`.
StepResult = tuple[jax.Array, Any, jax.Array, jax.Array, jax.Array, dict[str, Any]]


class Environment(Generic[State, Params]):
    """Base class of a team environment.

    Subclasses set ``name``, ``n_agents`` and ``role_names`` and implement
    :attr:`default_params`, :meth:`reset`, :meth:`step`, :meth:`observe`,
    :meth:`observation_space` and :meth:`action_space`. Host-side helpers
    (:meth:`render_text`) are plain Python and never run under ``jit``.
    """

    name: str = "env"
    n_agents: int = 1
    role_names: tuple[str, ...] = ("agent",)

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

        Returns:
            ``(obs, state, reward, terminated, truncated, info)``: ``reward`` is float32
            ``[n_agents]``; ``terminated`` (the task ended) and ``truncated`` (a time or round
            budget ran out) are boolean scalars; ``info`` is a dict of arrays with fixed keys.
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

    def render_text(self, state: State, role: int) -> str:
        """Host-side text rendering of role ``role``'s observation (what an LLM reads)."""
        raise NotImplementedError

    def _params(self, params: Params | None) -> Params:
        return self.default_params if params is None else params

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, n_agents={self.n_agents})"
