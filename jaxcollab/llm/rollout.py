"""The rollout an LLM team plays: ``vmap`` over episodes, a ``lax.while_loop`` over steps.

Same contract as every policy (DESIGN.md "One rollout"): ``reset`` / ``step`` only, the policy
gets its own key (never one the environment consumes), ended episodes are frozen by the
environment, and the loop stops once every episode has ended so no agent is queried after the
game. The only LLM-specific part is that ``policy_state["done"]`` carries each episode's ended
flag, so the host skips ended episodes inside the batched callback.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp


def play(env, policy, keys, params, policy_state, max_steps: int, states=None):
    """Play a batch of episodes to the end (or ``max_steps``).

    Args:
        env: a jaxcollab environment.
        policy: ``policy(key, obs, policy_state) -> (actions, policy_state)`` for one episode.
        keys: PRNG keys ``[B]`` (each split into reset, environment and policy streams).
        params: the environment's params (shared by the batch).
        policy_state: the batch's policy state (leading axis ``B``), with a bool ``done``
            (episodes already marked done are padding: never queried, never stepped on).
        max_steps: step cap (static).
        states: optional start states ``[B]`` (e.g. fixed held-out mazes) instead of ``reset``.

    Returns:
        ``(state, done, returns, steps)``: final states, bool ``[B]`` ended flags, float32
        ``[B, n_agents]`` summed rewards and int32 ``[B]`` steps each episode ran.
    """

    return _compiled(env, policy, int(max_steps))(keys, params, policy_state, states)


@functools.lru_cache(maxsize=16)
def _compiled(env, policy, max_steps: int):
    """The jitted rollout of one (environment, policy, step cap): compiled once per batch shape,
    so a run that plays its episodes in chunks compiles once."""

    def run(keys, params, policy_state, states):
        k_reset, k_env, k_pol = (jax.vmap(lambda k, i=i: jax.random.fold_in(k, i))(keys)
                                 for i in range(3))
        if states is None:
            obs, states = jax.vmap(env.reset, (0, None))(k_reset, params)
        else:
            obs = jax.vmap(env.observe, (0, None))(states, params)
        n = keys.shape[0]
        carry = (jnp.int32(0), states, obs, policy_state, policy_state["done"],
                 jnp.zeros((n, env.n_agents), jnp.float32), jnp.zeros(n, jnp.int32))

        def cond(c):
            return (c[0] < max_steps) & ~jnp.all(c[4])

        def body(c):
            t, state, obs, ps, done, ret, steps = c
            fold = jax.vmap(lambda k: jax.random.fold_in(k, t))
            actions, ps = jax.vmap(policy)(fold(k_pol), obs, {**ps, "done": done})
            obs, state, reward, term, trunc, _ = jax.vmap(env.step, (0, 0, 0, None))(
                fold(k_env), state, actions, params)
            steps = steps + ~done
            return t + 1, state, obs, ps, done | term | trunc, ret + reward, steps

        _, state, _, _, done, ret, steps = jax.lax.while_loop(cond, body, carry)
        return state, done, ret, steps

    return jax.jit(run)
