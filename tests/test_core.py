"""Registry, spaces and wrappers (the env contract)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcollab
from jaxcollab.core import registry
from jaxcollab.core.spaces import Box, Discrete, MultiDiscrete, Tree
from jaxcollab.core.wrappers import AutoResetWrapper, EpisodeStatsWrapper
from jaxcollab.envs.parity import ParityEnv


def test_unknown_name_lists_valid_names():
    with pytest.raises(KeyError) as err:
        jaxcollab.make("parity/probabilty")
    message = str(err.value)
    assert "'parity/probabilty'" in message and "Did you mean 'parity/probability'" in message
    for name in jaxcollab.names():
        assert name in message


def test_make_and_resolve():
    assert {"parity/action", "parity/probability"} <= set(jaxcollab.names())
    assert jaxcollab.make("parity/action").protocol == "action"
    assert jaxcollab.resolve("parity/all") == ["parity/probability", "parity/action"]
    assert jaxcollab.resolve("parity/action") == ["parity/action"]
    with pytest.raises(KeyError, match="parity/all"):
        jaxcollab.resolve("parity/none")


def test_duplicate_registration_is_refused():
    with pytest.raises(ValueError, match="already registered"):
        registry.register("parity/action", ParityEnv)


def test_spaces():
    d = Discrete(5, (2,))
    x = d.sample(jax.random.key(0))
    assert x.shape == (2,) and bool(d.contains(x)) and not bool(d.contains(jnp.array([5, 0])))
    with pytest.raises(ValueError, match="n=0"):
        Discrete(0)
    b = Box(0.0, 1.0, (3,))
    assert bool(b.contains(b.sample(jax.random.key(1))))
    with pytest.raises(ValueError, match="low=1"):
        Box(1, 0, (1,))


def test_multi_discrete_and_pytree_spaces():
    m = MultiDiscrete([[2, 3], [4, 5]])
    x = m.sample(jax.random.key(2))
    assert x.shape == (2, 2) and bool(m.contains(x))
    assert not bool(m.contains(jnp.array([[1, 3], [0, 0]])))  # 3 is out of [0, 3)
    assert not bool(m.contains(jnp.zeros((2, 3), jnp.int32)))  # shape
    assert not bool(Discrete(5, (2,)).contains(jnp.array([1.0, 2.0])))  # floats, integer space
    samples = jax.vmap(m.sample)(jax.random.split(jax.random.key(3), 2000))
    assert np.asarray(samples).max(0).tolist() == [[1, 2], [3, 4]]  # every bound is reached
    with pytest.raises(ValueError, match="nvec"):
        MultiDiscrete([2, 0])
    tree = Tree({"act": Discrete(3, (2,)), "to": Box(-1, 1, (2,), jnp.int32)})
    a = tree.sample(jax.random.key(4))
    assert set(a) == {"act", "to"} and a["to"].dtype == jnp.int32
    assert bool(jax.jit(tree.contains)(a))
    assert not bool(tree.contains({"act": a["act"]}))  # another structure
    assert not bool(tree.contains({**a, "to": a["to"] + 3}))
    again = Tree({"act": Discrete(3, (2,)), "to": Box(-1, 1, (2,), jnp.int32)})
    assert again == tree and hash(again) == hash(tree)
    with pytest.raises(ValueError, match="leaves are spaces"):
        Tree({"act": 3})


def test_families_own_actions_are_in_their_spaces():
    bomb = jaxcollab.make("bomb/base-1")
    space = bomb.action_space()
    assert bool(space.contains(bomb.noop()))
    act = bomb.action("deaf", "wait", speak_to="blind", text="cut wire 2", symbols=("question",))
    assert bool(space.contains(act))
    assert not bool(space.contains(act.replace(act=jnp.asarray(act.act).at[0].set(7))))
    ktane = jaxcollab.make("ktane/wires")
    row = jnp.zeros((2, ktane.action_space().shape[1]), jnp.int32)
    assert bool(ktane.action_space().contains(row))
    assert not bool(ktane.action_space().contains(row.at[0, 0].set(99)))  # no verb 99
    parity = jaxcollab.make("parity/probability")
    assert bool(parity.action_space().contains(jnp.array([99, 0])))
    assert not bool(parity.action_space().contains(jnp.array([100, 0])))


def test_episode_stats_over_auto_reset():
    env = EpisodeStatsWrapper(AutoResetWrapper(ParityEnv(n_rounds=2, protocol="action")))
    _, state = env.reset(jax.random.key(0))
    step = jax.jit(env.step)
    rewards = []
    for t in range(4):
        _, state, reward, term, _, info = step(jax.random.key(t + 1), state, jnp.array([1, 1]))
        rewards.append(float(reward[0]))
        if t == 1:
            assert bool(term) and int(info["episode_length"]) == 2
            assert float(info["episode_return"][0]) == pytest.approx(sum(rewards))
    assert int(state.episode_length) == 0  # the second episode just ended too


def test_vmap_over_episodes():
    env = ParityEnv()
    keys = jax.random.split(jax.random.key(0), 8)
    obs, states = jax.vmap(env.reset)(keys)
    obs2, *_ = jax.vmap(env.step)(keys, states, jnp.zeros((8, 2), jnp.int32))
    assert obs.shape == (8, 2, 45) and obs2.shape == (8, 2, 45)
    assert len({tuple(np.asarray(o[0, :30])) for o in obs}) == 8


def test_a_parity_run_loads_no_other_family():
    """Registry without back-edges: make("parity/...") and a rollout import parity only."""
    import subprocess
    import sys

    code = (
        "import sys, jaxcollab\n"
        "env = jaxcollab.make('parity/action')\n"
        "pol = jaxcollab.stateless(lambda k, o: o[:, 0] * 0, 'zeros')\n"
        "jaxcollab.rollout(env, pol, jaxcollab.episode_keys(0, 2), max_steps=5)\n"
        "print(sorted(m for m in sys.modules if m.startswith('jaxcollab.envs.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "['jaxcollab.envs.parity']"
