"""The environment contract shared by every jaxcollab task.

Semantics follow gymnax 1.0, extended to teams:

* ``params`` is a pytree of *dynamic* values (anything that may change without recompiling);
  shapes and other compile-time constants live on the environment object.
* The PRNG key is always an argument and never part of the state an agent can observe.
* Teams use a leading agent axis: ``obs[n_agents, ...]``, ``actions[n_agents, ...]``,
  ``reward[n_agents]``.
* ``reset`` and ``step`` are pure, jit- and vmap-safe functions of arrays. Auto-reset lives in
  :class:`jaxcollab.core.wrappers.AutoResetWrapper`, not here.
* **Ended episodes are frozen** (pgx semantics), here in the base class: ``terminated`` means
  the task reached an ending (solved, failed, exploded), ``truncated`` that a step/round budget
  ran out without one. Both are functions of the state (:meth:`Environment.end_flags`). Once
  either is set, :meth:`Environment.step` is a no-op: it returns the same state, zero reward,
  the same flags and an all-zero ``info``, whatever the actions. Families implement only their
  transition (:meth:`Environment.step_env`, the step of a running episode) and never freeze
  themselves.
* **Environments are equal by value**: a family is a frozen dataclass whose compared fields are
  its static config (what the compiled ``reset`` / ``step`` / ``observe`` depend on), so two
  ``jaxcollab.make(name)`` calls give equal, equally hashed environments and a function jitted
  with the environment as a static argument compiles once. Names and default params are not
  static config: two bomb variants with the same message caps are equal and share one compile,
  so code jitted with an environment as a static argument takes ``params`` as an argument.
* Every rollout goes through :func:`jaxcollab.core.rollout.rollout`, which gives policies keys
  the environment never consumes.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Generic, TypeVar

import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.core.spaces import Space

State = TypeVar("State")
Params = TypeVar("Params")

#: ``(obs, state, reward, terminated, truncated, info)`` as returned by :meth:`Environment.step`.
StepResult = tuple[jax.Array, Any, jax.Array, jax.Array, jax.Array, dict[str, Any]]


class Environment(Generic[State, Params]):
    """Base class of a team environment.

    Subclasses are frozen dataclasses of their static config (module docstring); they set
    ``name``, ``n_agents`` and ``role_names`` and implement :attr:`default_params`,
    :meth:`reset`, :meth:`step_env`, :meth:`end_flags`, :meth:`observe`,
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
        self, key: jax.Array, state: State, actions: Any, params: Params | None = None
    ) -> StepResult:
        """Advance one step with the joint action ``actions`` (leading agent axis, an element
        of :meth:`action_space`); ended episodes are frozen here, for every family.

        Args:
            key: a PRNG key for the environment's own randomness (never one a policy sees).
            state: the current state; actions: the joint action; params: ``None`` = default.

        Returns:
            ``(obs, state, reward, terminated, truncated, info)``: ``obs`` is ``observe(state)``
            of the new state; ``reward`` is float32 ``[n_agents]``; ``terminated`` (the task
            reached an ending) and ``truncated`` (a step or round budget ran out first) are
            boolean scalars (:meth:`end_flags` of the new state); ``info`` is a dict of arrays
            with fixed keys. If the episode had already ended, the returned state is ``state``,
            the reward zero, the flags those of the ending step and every ``info`` entry zero
            (nothing happened; pgx semantics).
        """
        params = self._params(params)
        done = jnp.logical_or(*self.end_flags(state, params))
        new, reward, info = self.step_env(key, state, actions, params)
        state = jax.tree.map(lambda old, x: jnp.where(done, old, x), state, new)
        reward = jnp.where(done, jnp.zeros_like(reward), reward)
        info = jax.tree.map(lambda x: jnp.where(done, jnp.zeros_like(x), x), info)
        terminated, truncated = self.end_flags(state, params)
        return self.observe(state, params), state, reward, terminated, truncated, info

    def step_env(
        self, key: jax.Array, state: State, actions: Any, params: Params
    ) -> tuple[State, jax.Array, dict[str, Any]]:
        """The family's transition of a running episode: ``(state, reward, info)``.

        Only called through :meth:`step`, which discards its result once the episode has
        ended, so it need not guard against ended states (it must stay shape-safe on them).
        """
        raise NotImplementedError

    def end_flags(self, state: State, params: Params | None = None) -> tuple[jax.Array, jax.Array]:
        """``(terminated, truncated)`` of ``state``: boolean scalars, at most one of them set."""
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
        """The space of the joint action (leading agent axis): its ``sample(key)`` is a joint
        action :meth:`step` accepts (a pytree space where the action is a pytree)."""
        raise NotImplementedError

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
        return self.render_observation(self.observe_host(state, params)[role], role)

    def observe_host(self, state: State, params: Params | None = None) -> np.ndarray:
        """Host side: ``observe(state, params)`` as a NumPy array, through one compiled
        ``observe`` per static config (equal environments share it)."""
        return np.asarray(jax.device_get(_observe(self, state, self._params(params))))

    def _check_role(self, role: int) -> None:
        if isinstance(role, bool) or role not in range(self.n_agents):
            names = ", ".join(f"{i} ({n})" for i, n in enumerate(self.role_names))
            raise ValueError(f"role must be one of {names}; got {role!r}")

    def _params(self, params: Params | None) -> Params:
        return self.default_params if params is None else params


@partial(jax.jit, static_argnums=0)
def _observe(env: Environment, state, params):
    return env.observe(state, params)
