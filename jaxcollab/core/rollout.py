"""The one episode path (the environment contract, ``core/env.py``): every rollout of every family,
scripted team, privileged oracle, trained model or LLM, goes through :func:`rollout`.

A **policy** acts for the whole team of ONE episode::

    actions, policy_state = policy.act(key, obs, policy_state)

``obs`` is that episode's joint observation ``[n_agents, ...]`` (int32 tokens, as returned by
``env.observe``), ``actions`` the joint action the environment's ``step`` takes, and
``policy_state`` any pytree the policy carries between steps (memory, message history, an RNN
state; ``()`` when it needs none). A **privileged** policy (the oracles: solvers, not players)
also reads the environment state and params, ``act(key, obs, policy_state, env_state,
params)``; it is built with :func:`privileged_policy`, its class is :class:`PrivilegedPolicy`
and its name must say ``oracle`` or ``privileged``, so no result can pass one off as a player.

Each step the policy's ``obs`` is ``env.observe(state, params)`` (equal to the ``obs`` that
``reset`` / ``step`` return, by the contract), computed inside the step so that XLA drops it for
policies that never read it.

:func:`rollout` vmaps the policy and ``env.reset`` / ``env.step`` over episodes and loops over
steps (``lax.scan``, or a ``lax.while_loop`` that stops once every episode has ended), with the
episode axis sharded over the ``data`` mesh axis. Key discipline: each episode key is split into
disjoint streams, so **a policy never receives a key the environment also consumes**::

    reset_key, init_key, play_key = split_episode_key(episode_key)
    step t:   env_key, policy_key = split(fold_in(play_key, t))

Ended episodes are frozen by the environment (pgx semantics, :class:`~jaxcollab.core.env.
Environment`), so stepping every episode for the same number of steps is exact: an episode's
return, length and final state stop changing once it ends.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import partial
from typing import Any

import chex
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from jaxcollab.core.devices import compute_devices
from jaxcollab.core.env import Environment

#: The mesh axis episodes are sharded over (the ``data`` axis of
#: :func:`jaxcollab.scale.mesh.data_mesh`, whose meshes callers may pass).
DATA = "data"


def _no_state(key: jax.Array) -> tuple:
    return ()


@dataclasses.dataclass(frozen=True)
class Policy:
    """A team policy for one episode (hashable, so it can be a static jit argument).

    Attributes:
        act: ``act(key, obs, policy_state) -> (actions, policy_state)``; ``key`` a PRNG key the
            environment never sees, ``obs`` int32 ``[n_agents, ...]`` (one episode), ``actions``
            the environment's joint action for one episode. Must be jit/vmap-safe.
        init: ``init(key) -> policy_state``, the policy state at the start of an episode (a
            pytree for one episode; default ``()``). Its key is also private to the policy.
        name: a label for results and errors.
    """

    act: Callable
    init: Callable[[jax.Array], Any] = _no_state
    name: str = "policy"

    #: Whether ``act`` also receives the environment state (see :class:`PrivilegedPolicy`).
    privileged = False


@dataclasses.dataclass(frozen=True)
class PrivilegedPolicy(Policy):
    """A policy that also reads the hidden environment state: a solver, not a player.

    ``act(key, obs, policy_state, env_state, params) -> (actions, policy_state)``, with
    ``env_state`` and ``params`` of the same single episode. Build it with
    :func:`privileged_policy`, which checks that its name says ``oracle`` or ``privileged``.
    """

    privileged = True


def policy(act: Callable, init: Callable[[jax.Array], Any] = _no_state,
           name: str | None = None) -> Policy:
    """Wrap ``act(key, obs, policy_state) -> (actions, policy_state)`` as a :class:`Policy`."""
    return Policy(act=act, init=init, name=name or getattr(act, "__name__", "policy"))


def stateless(fn: Callable, name: str | None = None) -> Policy:
    """A :class:`Policy` from ``fn(key, obs) -> actions`` (no policy state)."""
    return Policy(act=_Stateless(fn), name=name or getattr(fn, "__name__", "policy"))


def privileged_policy(act: Callable, init: Callable[[jax.Array], Any] = _no_state,
                      name: str | None = None) -> PrivilegedPolicy:
    """Wrap ``act(key, obs, policy_state, env_state, params) -> (actions, policy_state)``.

    Raises:
        ValueError: the name (default ``act.__name__``) contains neither ``oracle`` nor
            ``privileged``.
    """
    name = name or getattr(act, "__name__", "")
    if "oracle" not in name and "privileged" not in name:
        raise ValueError(f"privileged policy name {name!r} must contain 'oracle' or 'privileged'")
    return PrivilegedPolicy(act=act, init=init, name=name)


@dataclasses.dataclass(frozen=True)
class _Stateless:
    fn: Callable

    def __call__(self, key, obs, policy_state):
        return self.fn(key, obs), policy_state


def split_episode_key(key: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(reset_key, init_key, play_key)`` of one episode key: disjoint streams for the
    environment's reset, the policy's initial state, and the steps (see module docstring)."""
    k = jax.random.split(key, 3)
    return k[0], k[1], k[2]


def step_keys(play_key: jax.Array, t: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(env_key, policy_key)`` for step ``t`` of an episode: never the same key."""
    k = jax.random.split(jax.random.fold_in(play_key, t))
    return k[0], k[1]


def episode_keys(seed: int, n_episodes: int) -> jax.Array:
    """``n_episodes`` episode keys ``[n_episodes, 2]``: ``split(PRNGKey(seed), n_episodes)``."""
    return jax.random.split(jax.random.PRNGKey(int(seed)), int(n_episodes))


@chex.dataclass(frozen=True)
class Rollout:
    """The result of :func:`rollout`; every array has a leading episode axis ``[B]``.

    Attributes:
        state: final environment state (frozen at the end of each episode); its observation is
            ``vmap(env.observe)(state)`` (not computed here: observations can cost more than
            the steps, and only policies that read them pay for them).
        policy_state: final policy state.
        episode_return: float32 ``[B, n_agents]`` summed rewards.
        length: int32 ``[B]`` steps up to and including the ending step (``max_steps`` if the
            episode never ended).
        terminated, truncated: bool ``[B]`` flags at the end of the loop.
        trajectory: ``None``, or (with ``trajectory=True``) a dict of per-step arrays with a
            leading step axis ``[T, B, ...]``: ``state`` and ``obs`` (the state and observation
            the policy acted on), ``actions``, ``reward``, ``terminated``, ``truncated``, and
            the step ``info`` keys.
    """

    state: Any
    policy_state: Any
    episode_return: jax.Array
    length: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    trajectory: Any = None


def rollout(env: Environment, policy: Policy, keys: jax.Array, params: Any = None, *,
            max_steps: int, batched_params: bool = False, until_done: bool = False,
            trajectory: bool = False, mesh: Mesh | None = None) -> Rollout:
    """Play one episode per key with ``policy`` on ``env``, using only ``reset`` / ``step`` /
    ``observe`` (jitted; one compile per env, policy, batch size and options).

    Args:
        env: an environment from :func:`jaxcollab.make` (or any :class:`Environment`).
        policy: a :class:`Policy` (or :class:`PrivilegedPolicy`).
        keys: episode keys ``[B]`` (e.g. :func:`episode_keys`); see :func:`split_episode_key`.
        params: environment params; ``None`` means ``env.default_params``.
        max_steps: steps to play (static). Episodes still running then have ``length ==
            max_steps`` and their flags unset unless the environment truncated them.
        batched_params: ``params`` has a leading episode axis ``[B]`` (e.g. mixed variants).
        until_done: loop with ``lax.while_loop`` and stop as soon as every episode has ended
            (cheaper when episodes end early; results are identical to the full loop because
            ended episodes are frozen). Not combinable with ``trajectory``.
        trajectory: also return per-step arrays (``lax.scan`` over all ``max_steps`` steps).
        mesh: shard the episode axis over this mesh's ``data`` axis (default: a 1-D ``data``
            mesh of every device of every process (:func:`~jaxcollab.core.devices.
            compute_devices`), as :func:`jaxcollab.scale.mesh.data_mesh`
            builds with a model axis of 1). In a multi-process job the result is replicated,
            so every process can read it on the host.

    Returns:
        A :class:`Rollout`.

    Raises:
        ValueError: ``max_steps < 1``, ``until_done`` with ``trajectory``, or ``B`` not a
            multiple of the number of devices in the mesh.
    """
    if max_steps < 1:
        raise ValueError(f"max_steps must be positive, got {max_steps!r}")
    if until_done and trajectory:
        raise ValueError("until_done=True cannot record a trajectory; pick one")
    mesh = mesh if mesh is not None else Mesh(np.asarray(compute_devices()), (DATA,))
    n, n_dev = keys.shape[0], mesh.shape[DATA]
    if n % n_dev:
        raise ValueError(f"{n} episodes do not divide over {n_dev} devices of the data mesh")
    params = env.default_params if params is None else params
    episodes = NamedSharding(mesh, PartitionSpec(DATA))
    keys = jax.device_put(keys, episodes)
    if batched_params:
        params = jax.device_put(params, episodes)
    out = _rollout(env, policy, keys, params, max_steps, batched_params, until_done, trajectory)
    if jax.process_count() > 1:  # a process cannot read shards held by another's devices
        out = jax.device_put(out, NamedSharding(mesh, PartitionSpec()))
    return out


@partial(jax.jit, static_argnums=(0, 1, 4, 5, 6, 7))
def _rollout(env, policy, keys, params, max_steps, batched_params, until_done, trajectory):
    p_axis = 0 if batched_params else None
    reset_k, init_k, play_k = jax.vmap(split_episode_key)(keys)
    _, state = jax.vmap(env.reset, (0, p_axis))(reset_k, params)
    pstate = jax.vmap(policy.init)(init_k)
    n = keys.shape[0]
    # Observations are recomputed from the state (the contract makes obs == observe(state))
    # instead of carried, so XLA drops them for policies that never read them (the oracles).
    carry = dict(state=state, pstate=pstate,
                 ret=jnp.zeros((n, env.n_agents), jnp.float32), length=jnp.zeros((n,), jnp.int32),
                 terminated=jnp.zeros((n,), bool), truncated=jnp.zeros((n,), bool))

    def one(t, play_key, state, pstate, params):
        env_key, policy_key = step_keys(play_key, t)
        obs = env.observe(state, params)
        extra = (state, params) if policy.privileged else ()
        actions, pstate = policy.act(policy_key, obs, pstate, *extra)
        _, new, reward, term, trunc, info = env.step(env_key, state, actions, params)
        return obs, actions, new, pstate, reward, term, trunc, info

    def body(t, c):
        obs, actions, state, pstate, reward, term, trunc, info = jax.vmap(
            one, (None, 0, 0, 0, p_axis))(t, play_k, c["state"], c["pstate"], params)
        done = c["terminated"] | c["truncated"]
        new = dict(state=state, pstate=pstate, ret=c["ret"] + reward,
                   length=c["length"] + ~done, terminated=term, truncated=trunc)
        record = dict(info, state=c["state"], obs=obs, actions=actions, reward=reward,
                      terminated=term, truncated=trunc)
        return new, record

    if until_done:
        def cond(tc):
            t, c = tc
            return (t < max_steps) & ~jnp.all(c["terminated"] | c["truncated"])

        _, carry = jax.lax.while_loop(cond, lambda tc: (tc[0] + 1, body(*tc)[0]),
                                      (jnp.int32(0), carry))
        traj = None
    else:
        carry, traj = jax.lax.scan(lambda c, t: body(t, c), carry, jnp.arange(max_steps))
        traj = traj if trajectory else None
    return Rollout(state=carry["state"], policy_state=carry["pstate"],
                   episode_return=carry["ret"], length=carry["length"],
                   terminated=carry["terminated"], truncated=carry["truncated"], trajectory=traj)


__all__ = ["Policy", "PrivilegedPolicy", "Rollout", "episode_keys", "policy", "privileged_policy",
           "rollout", "split_episode_key", "stateless", "step_keys"]
