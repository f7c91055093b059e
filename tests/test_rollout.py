"""The generic rollout (jaxcollab.core.rollout): policy protocol, key streams, determinism."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcollab
from jaxcollab.core.rollout import split_episode_key, step_keys
from jaxcollab.envs.parity import ParityEnv


def _counting_policy(key, obs, count):
    """Speaks its step count (policy state) as the message: checks state threading."""
    return jnp.stack([count, count]).astype(jnp.int32), count + 1


def test_policy_state_threads_through_steps_and_episodes_end():
    env = ParityEnv(n_rounds=3, protocol="probability")
    pol = jaxcollab.policy(_counting_policy, init=lambda key: jnp.int32(7))
    r = jaxcollab.rollout(env, pol, jaxcollab.episode_keys(0, 4), max_steps=3, trajectory=True)
    np.testing.assert_array_equal(r.state.messages, np.tile([7, 8, 9], (4, 1)))
    np.testing.assert_array_equal(r.policy_state, [10] * 4)
    assert r.terminated.all() and not r.truncated.any()
    np.testing.assert_array_equal(r.length, [3] * 4)
    assert r.trajectory["obs"].shape == (3, 4, *env.observation_space().shape)
    np.testing.assert_allclose(r.episode_return, r.trajectory["reward"].sum(0))


def test_rollout_is_deterministic_and_until_done_agrees():
    env = ParityEnv(n_rounds=2, protocol="action")
    pol = jaxcollab.stateless(lambda key, obs: jax.random.randint(key, (2,), 0, 2), "random")
    keys = jaxcollab.episode_keys(3, 8)
    a = jaxcollab.rollout(env, pol, keys, max_steps=4)
    b = jaxcollab.rollout(env, pol, keys, max_steps=4, until_done=True)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(a.length, [2] * 8)


def test_policy_keys_are_disjoint_from_environment_keys():
    key = jax.random.PRNGKey(0)
    reset_k, init_k, play_k = split_episode_key(key)
    env_k, pol_k = step_keys(play_k, jnp.int32(0))
    keys = {tuple(np.asarray(k).tolist()) for k in (key, reset_k, init_k, play_k, env_k, pol_k)}
    assert len(keys) == 6


def test_privileged_policy_must_say_so_and_gets_the_state():
    with pytest.raises(ValueError, match="oracle"):
        jaxcollab.privileged_policy(lambda k, o, s, e, p: (o, s), name="cheat")
    env = ParityEnv(n_rounds=1, protocol="action")

    def oracle_label(key, obs, ps, state, params):
        return jnp.stack([state.label, state.label]), ps

    pol = jaxcollab.privileged_policy(oracle_label)
    r = jaxcollab.rollout(env, pol, jaxcollab.episode_keys(1, 16), max_steps=1)
    np.testing.assert_array_equal(r.state.messages[:, 0], r.state.label)
    np.testing.assert_allclose(r.episode_return, 0.0)


def test_bad_arguments():
    env = ParityEnv()
    pol = jaxcollab.stateless(lambda k, o: jnp.zeros(2, jnp.int32), "zeros")
    with pytest.raises(ValueError, match="max_steps"):
        jaxcollab.rollout(env, pol, jaxcollab.episode_keys(0, 2), max_steps=0)
    with pytest.raises(ValueError, match="until_done"):
        jaxcollab.rollout(env, pol, jaxcollab.episode_keys(0, 2), max_steps=2, until_done=True,
                          trajectory=True)
