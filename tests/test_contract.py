"""The environment contract over every registered environment (``jaxcollab.core.env``):
ended episodes are frozen (pgx), auto-reset at the boundary, rendering agrees with the tokens.

Compiles are shared: every bomb variant runs through one compiled function (variants differ only
in params), and each other environment compiles once per test function.
"""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxcollab
from jaxcollab.core.wrappers import AutoResetWrapper

# Fixed ktane missions are ktane bombs with a seed param: two stand for the 120 of them.
MISSION_EXAMPLES = ["ktane/missions/single/maze/0", "ktane/missions/multi/9"]
NAMES = [n for n in jaxcollab.names() if not n.startswith("ktane/missions/")] + MISSION_EXAMPLES
FAMILY_EXAMPLES = ["bomb/base-1", "ktane/wires", "maze/split-6x6", "parity/action"]
N_EPISODES = 4
AFTER_END = 4  # extra steps every episode plays after its bound
_COMPILED: dict = {}


def _compiled(kind: str, env, fn):
    """One jitted ``fn`` per (kind, compile group): bomb variants share their caps' group."""
    group = getattr(env, "layout", None) or env.name
    if (kind, group) not in _COMPILED:
        _COMPILED[kind, group] = jax.jit(partial(fn, env), static_argnums=(1,))
    return _COMPILED[kind, group]


def _same(a, b) -> jax.Array:
    return jnp.all(jnp.stack([jnp.all(x == y) for x, y in
                              zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)]))


def _frozen_trace(env, key, n_steps, params):
    """Random joint actions for ``n_steps``; per step: ended before, unchanged, reward, flags."""

    def episode(key):
        _, state = env.reset(jax.random.fold_in(key, 0), params)

        def body(carry, t):
            state, ended, flags = carry
            k_act, k_env = jax.random.split(jax.random.fold_in(key, t + 1))
            actions = env.sample_action(k_act, params)
            _, new, reward, term, trunc, _ = env.step(k_env, state, actions, params)
            out = {"ended": ended, "same": _same(new, state), "reward": reward, "term": term,
                   "trunc": trunc, "prev_term": flags[0], "prev_trunc": flags[1]}
            return (new, ended | term | trunc, (term, trunc)), out

        init = (state, jnp.bool_(False), (jnp.bool_(False), jnp.bool_(False)))
        return jax.lax.scan(body, init, jnp.arange(n_steps))[1]

    return jax.vmap(episode)(jax.random.split(key, N_EPISODES))


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=2, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31 - 1))
def test_ended_episodes_are_frozen(name, seed):
    env = jaxcollab.make(name)
    run = _compiled("frozen", env, _frozen_trace)
    out = jax.device_get(run(jax.random.PRNGKey(seed), env.max_episode_steps + AFTER_END,
                             env.default_params))
    ended = out["ended"]
    assert ended[:, -1].all(), f"{name}: an episode outlived max_episode_steps"
    assert ended.any(axis=0)[-AFTER_END:].all()  # the last steps are all after the end
    assert out["same"][ended].all(), f"{name}: a step after the end changed the state"
    assert (out["reward"][ended] == 0).all(), f"{name}: reward after the end"
    np.testing.assert_array_equal(out["term"][ended], out["prev_term"][ended])
    np.testing.assert_array_equal(out["trunc"][ended], out["prev_trunc"][ended])
    assert not (out["term"] & out["trunc"]).any()


def _boundary_trace(env, key, n_steps, params):
    """Auto-reset steps next to plain steps from the same state and keys."""
    wrapped = AutoResetWrapper(env)

    def episode(key):
        _, state = env.reset(jax.random.fold_in(key, 0), params)

        def body(state, t):
            k_act, k = jax.random.split(jax.random.fold_in(key, t + 1))
            actions = env.sample_action(k_act, params)
            k_step, k_reset = jax.random.split(k)
            obs, new, reward, term, trunc, info = wrapped.step(k, state, actions, params)
            p_obs, p_state, p_reward, p_term, p_trunc, _ = env.step(k_step, state, actions, params)
            r_obs, r_state = env.reset(k_reset, params)
            done = p_term | p_trunc
            out = {
                "done": done,
                "final_obs": jnp.all(info["final_obs"] == p_obs),
                "reward": jnp.all(reward == p_reward),
                "flags": (term == p_term) & (trunc == p_trunc),
                "obs": jnp.all(obs == jnp.where(done, r_obs, p_obs)),
                "state": jnp.where(done, _same(new, r_state), _same(new, p_state)),
                "reward_at_end": jnp.where(done, jnp.abs(p_reward).sum(), 0.0),
            }
            return new, out

        return jax.lax.scan(body, state, jnp.arange(n_steps))[1]

    return jax.vmap(episode)(jax.random.split(key, N_EPISODES))


@pytest.mark.parametrize("name", FAMILY_EXAMPLES)
def test_auto_reset_at_the_boundary(name):
    env = jaxcollab.make(name)
    run = _compiled("boundary", env, _boundary_trace)
    out = jax.device_get(run(jax.random.PRNGKey(1), 2 * env.max_episode_steps,
                             env.default_params))
    assert out["done"].any(axis=1).all(), f"{name}: no episode ended"
    for k in ("final_obs", "reward", "flags", "obs", "state"):
        assert out[k].all(), f"{name}: auto-reset {k} differs from the plain step / fresh reset"


@pytest.mark.parametrize("name", FAMILY_EXAMPLES)
def test_render_text_is_render_observation_of_observe(name):
    env = jaxcollab.make(name)
    obs, state = jax.jit(env.reset)(jax.random.PRNGKey(2))
    for role in range(env.n_agents):
        text = env.render_text(state, role)
        assert text and text == env.render_observation(np.asarray(obs)[role], role)
    with pytest.raises(ValueError, match="role must be"):
        env.render_observation(np.asarray(obs)[0], env.n_agents)
