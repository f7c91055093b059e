"""The environment contract (``jaxcollab.core.env``): ended episodes are frozen (pgx), action
spaces describe the actions ``step`` takes, auto-reset at the boundary, rendering agrees with the
tokens, environments are equal by value.

By default one environment per family runs (the auto-reset wrapper, generic, on parity's; the
other families' under ``-m full``); every registered name (fixed Keep-Talking missions
by two examples) runs under ``-m slow``. Compiles are shared through the environments' value
equality: each trace below is one module-level ``jax.jit`` with the environment static, so equal
environments (every bomb variant with the same caps, seeded missions of one module set) reuse
one compile.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxcollab
from jaxcollab.core.registry import family_names
from jaxcollab.core.wrappers import AutoResetWrapper

#: Every family by its example environment (:attr:`jaxcollab.core.family.Family.example`).
FAMILY_EXAMPLES = [e for f in family_names() if (e := jaxcollab.family(f).example)]
# Fixed ktane missions are ktane bombs with a seed param: two stand for the 120 of them.
MISSION_EXAMPLES = ["ktane/missions/single/maze/0", "ktane/missions/multi/9"]
NAMES = [n for n in jaxcollab.names() if not n.startswith("ktane/missions/")] + MISSION_EXAMPLES
#: Every family by its example; the other names under ``-m slow``.
MATRIX = FAMILY_EXAMPLES + [pytest.param(n, marks=pytest.mark.slow)
                            for n in NAMES if n not in FAMILY_EXAMPLES]
#: The wrapper is generic: parity's example (the cheapest compile) stands for it by default; each
#: other family's (a compile of two steps and a reset, 30-60 s cold on 2 cores) under ``-m full``.
RESET_MATRIX = [n if n.startswith("parity/") else pytest.param(n, marks=pytest.mark.full)
                for n in FAMILY_EXAMPLES]
N_EPISODES = 4
AFTER_END = 4  # extra steps every episode plays after its bound


def _same(a, b) -> jax.Array:
    return jnp.all(jnp.stack([jnp.all(x == y) for x, y in
                              zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)]))


def _zero(tree) -> jax.Array:
    return jnp.all(jnp.stack([jnp.all(x == 0) for x in jax.tree.leaves(tree)] + [True]))


def _frozen_trace(env, key, n_steps, params):
    """Joint actions sampled from the action space for ``n_steps``; per step: ended before,
    unchanged, reward, flags, info, and whether the space contains its sample."""
    space = env.action_space(params)

    def episode(key):
        _, state = env.reset(jax.random.fold_in(key, 0), params)

        def body(carry, t):
            state, ended, flags = carry
            k_act, k_env = jax.random.split(jax.random.fold_in(key, t + 1))
            actions = space.sample(k_act)
            _, new, reward, term, trunc, info = env.step(k_env, state, actions, params)
            out = {"ended": ended, "same": _same(new, state), "reward": reward, "term": term,
                   "trunc": trunc, "prev_term": flags[0], "prev_trunc": flags[1],
                   "info_zero": _zero(info), "contains": space.contains(actions)}
            return (new, ended | term | trunc, (term, trunc)), out

        init = (state, jnp.bool_(False), (jnp.bool_(False), jnp.bool_(False)))
        return jax.lax.scan(body, init, jnp.arange(n_steps))[1]

    return jax.vmap(episode)(jax.random.split(key, N_EPISODES))


frozen_trace = jax.jit(_frozen_trace, static_argnums=(0, 2))


@pytest.mark.parametrize("name", MATRIX)
@settings(max_examples=2, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31 - 1))
def test_ended_episodes_are_frozen_and_sampled_actions_step(name, seed):
    env = jaxcollab.make(name)
    out = jax.device_get(frozen_trace(env, jax.random.PRNGKey(seed),
                                      env.max_episode_steps + AFTER_END, env.default_params))
    assert out["contains"].all(), f"{name}: the action space does not contain its sample"
    ended = out["ended"]
    assert ended[:, -1].all(), f"{name}: an episode outlived max_episode_steps"
    assert ended.any(axis=0)[-AFTER_END:].all()  # the last steps are all after the end
    assert out["same"][ended].all(), f"{name}: a step after the end changed the state"
    assert (out["reward"][ended] == 0).all(), f"{name}: reward after the end"
    assert out["info_zero"][ended].all(), f"{name}: info reports an event after the end"
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
            actions = env.action_space(params).sample(k_act)
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


boundary_trace = jax.jit(_boundary_trace, static_argnums=(0, 2))


@pytest.mark.parametrize("name", RESET_MATRIX)
def test_auto_reset_at_the_boundary(name):
    env = jaxcollab.make(name)
    out = jax.device_get(boundary_trace(env, jax.random.PRNGKey(1), 2 * env.max_episode_steps,
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


# --- equality by value --------------------------------------------------------------------------


def _sample(env, key):
    return env.action_space().sample(key)


sample = jax.jit(_sample, static_argnums=0)


@pytest.mark.parametrize("name", FAMILY_EXAMPLES)
def test_environments_are_equal_by_value_and_share_compiles(name):
    a, b = jaxcollab.make(name), jaxcollab.make(name)
    assert a is not b and a == b and hash(a) == hash(b)
    assert AutoResetWrapper(a) == AutoResetWrapper(b) and AutoResetWrapper(a) != a
    before = sample._cache_size()
    x, y = sample(a, jax.random.PRNGKey(0)), sample(b, jax.random.PRNGKey(0))
    assert sample._cache_size() == before + 1  # b reused a's compile
    assert _same(x, y)


def test_static_config_decides_equality():
    names = ["parity/action", "parity/probability", "maze/split-6x6", "bomb/base-1",
             "ktane/wires", "ktane/keypad"]
    envs = [jaxcollab.make(n) for n in names]
    assert len(set(envs)) == len(envs)  # different static config: all different
    assert jaxcollab.make("bomb/base-1") == jaxcollab.make("bomb/flashing-2")  # params only
    assert jaxcollab.make("bomb/base-1") != type(envs[3])("base-1", speech_bytes=64)
    seeded = [jaxcollab.make(f"ktane/missions/single/maze/{s}") for s in (0, 1)]
    assert seeded[0] == seeded[1]
    assert len({int(e.default_params.bomb_seed) for e in seeded}) == 2  # seeds are params


def test_a_rollout_compiles_once_across_make_calls():
    from jaxcollab.core.rollout import _rollout

    policy = jaxcollab.stateless(_zeros, "zeros")
    keys = jaxcollab.episode_keys(0, 2)
    jaxcollab.rollout(jaxcollab.make("parity/action"), policy, keys, max_steps=2)
    before = _rollout._cache_size()
    r = jaxcollab.rollout(jaxcollab.make("parity/action"), policy, keys, max_steps=2)
    assert _rollout._cache_size() == before and r.length.tolist() == [2, 2]


def _zeros(key, obs):
    return jnp.zeros(obs.shape[0], jnp.int32)
