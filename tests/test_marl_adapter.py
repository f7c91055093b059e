"""JaxMARL's own wrappers run over the bomb variants and Keep-Talking modules exposed as a JaxMARL
MultiAgentEnv."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jaxmarl.wrappers.baselines import LogWrapper

from jaxcollab.agents.bomb.rl_view import make_view
from jaxcollab.agents.ktane.rl_view import TARGETED, KtaneView
from jaxcollab.envs.bomb import tables as T
from jaxcollab.envs.bomb.params import TURN_ORDERS
from jaxcollab.envs.ktane import single_module_env
from jaxcollab.envs.ktane.modules.base import VERBS
from jaxcollab.marl.adapter import FactorisedCategorical, JaxMARLView

ENV = JaxMARLView(make_view("bomb/base-1"), turn_order="deaf,mute,blind")
AGENTS = ("deaf", "mute", "blind")
WIRES = JaxMARLView(KtaneView(single_module_env("wires")), actions="discrete")


def _idle(**rows):
    a = {n: jnp.zeros(len(ENV.view.head_sizes), jnp.int32) for n in AGENTS}
    return {**a, **rows}


@pytest.mark.full  # long for the default tier (measured idle)
def test_interface_is_jaxmarls():
    obs, _ = ENV.reset(jax.random.PRNGKey(0))
    assert ENV.agents == list(AGENTS) and ENV.num_agents == 3
    assert set(obs) == {*AGENTS, "world_state"}
    assert obs["deaf"].shape == ENV.observation_space("deaf").shape
    assert obs["world_state"].shape == (3 * ENV.view.obs_size,)
    assert ENV.action_space("blind").shape == (len(ENV.view.head_sizes),)
    avail = ENV.get_avail_actions(ENV.reset(jax.random.PRNGKey(0))[1])
    assert avail["mute"].sum() < avail["deaf"].sum()   # Mute cannot speak


@pytest.mark.full
def test_others_may_only_idle_on_a_turn_not_theirs():
    obs, state = ENV.reset(jax.random.PRNGKey(0))
    step, idle = jax.jit(ENV.step), np.isin(np.arange(ENV.view.n_logits),
                                           np.cumsum((0,) + ENV.view.head_sizes)[:-1])
    enc = ENV.view.encode(ENV.env.observe(state.env_state, state.env_params))
    for turn, actor in enumerate(AGENTS):  # the order deaf, mute, blind
        avail = ENV.get_avail_actions(state)
        for i, a in enumerate(AGENTS):
            want = ENV.view.action_mask(enc, i) if a == actor else idle
            np.testing.assert_array_equal(avail[a], want)
        obs, state, _, _, info = step(jax.random.PRNGKey(turn), state, _idle())
        enc = ENV.view.encode(ENV.env.observe(state.env_state, state.env_params))
        # every info leaf has the agent axis (JaxMARL's scripts reshape it per actor)
        assert all(x.shape[:1] == (3,) for x in jax.tree.leaves(info))
        assert info["actor"].tolist() == [turn] * 3


@pytest.mark.full  # long for the default tier (measured idle)
def test_turn_orders_drawn_per_episode():
    env = JaxMARLView(make_view("bomb/base-1"))  # "cycle": the six orders
    states = jax.vmap(env.reset)(jax.random.split(jax.random.PRNGKey(0), 200))[1]
    orders = {tuple(o) for o in np.asarray(states.env_params.turn_order).tolist()}
    assert orders == {tuple(o) for o in TURN_ORDERS.tolist()}


@pytest.mark.full
def test_flat_discrete_joint_mask():
    """Each distinct action of the acting Defuser is offered once: its verbs, times its
    targets for a targeted verb, times every word for a message."""
    sizes = WIRES.view.head_sizes
    assert WIRES.action_space("defuser").n == int(np.prod(sizes)) == 480
    obs, state = WIRES.reset(jax.random.PRNGKey(0))
    avail = WIRES.get_avail_actions(state)
    enc = WIRES.view.encode(WIRES.env.observe(state.env_state, state.env_params))
    verbs, targets, words = np.split(np.asarray(WIRES.view.action_mask(enc, 0)),
                                     np.cumsum(sizes)[:-1])[:3]
    targeted = {VERBS.index(v) for v in TARGETED}
    want = sum(targets.sum() if v in targeted else words.sum() if v == VERBS.index("message")
               else 1 for v in np.nonzero(verbs)[0])
    assert int(avail["defuser"].sum()) == want
    assert avail["expert"].tolist() == [True] + [False] * 479  # idle only on the Defuser's turn


@pytest.mark.full  # long: the default tier's time (issue 36)
def test_a_flat_action_plays_as_its_heads():
    obs, state = WIRES.reset(jax.random.PRNGKey(1))
    heads = np.array([VERBS.index("select"), 0, 0], np.int32)
    flat = int(np.ravel_multi_index(tuple(heads), WIRES.view.head_sizes))
    factorised = JaxMARLView(WIRES.view)
    got = WIRES.step_env(jax.random.PRNGKey(2), state, {"defuser": flat, "expert": 0})
    want = factorised.step_env(jax.random.PRNGKey(2), state,
                               {"defuser": heads, "expert": np.zeros(3, np.int32)})
    chex.assert_trees_all_equal(got, want)


def test_factorised_categorical():
    sizes = ENV.view.head_sizes
    pi = FactorisedCategorical(jnp.zeros((4, sum(sizes))), sizes)
    a = pi.sample(seed=jax.random.PRNGKey(0))
    assert a.shape == (4, len(sizes)) and (a < np.asarray(sizes)).all()
    np.testing.assert_allclose(pi.log_prob(a), -np.log(np.prod(sizes)), rtol=1e-6)
    np.testing.assert_allclose(pi.entropy(), np.log(np.prod(sizes)), rtol=1e-6)
    idle = np.isin(np.arange(sum(sizes)), np.cumsum((0,) + sizes)[:-1])
    pi = FactorisedCategorical(jnp.ones((4, sum(sizes))), sizes, jnp.asarray(idle))
    assert pi.sample(seed=jax.random.PRNGKey(1)).tolist() == [[0] * len(sizes)] * 4
    np.testing.assert_allclose(pi.entropy(), 0.0, atol=1e-6)
    np.testing.assert_allclose(pi.log_prob(pi.mode()), 0.0, atol=1e-6)
    through = jax.jit(lambda p: p)(pi)  # a pytree: it crosses jit (and scan) boundaries
    assert through.head_sizes == sizes and (through.mode() == 0).all()
    with pytest.raises(ValueError, match=rf"sum\(head_sizes\) = {sum(sizes)}"):
        FactorisedCategorical(jnp.zeros(3), sizes)


def _random_play(env, agents, steps):
    env = LogWrapper(env)

    def episode(key):
        obs, state = env.reset(key)

        def step(carry, k):
            state = carry
            ks = jax.random.split(k, len(agents) + 1)
            actions = {a: env.action_space(a).sample(ks[i]) for i, a in enumerate(agents)}
            obs, state, reward, dones, info = env.step(ks[-1], state, actions)
            return state, (reward[agents[-1]], dones["__all__"], info["returned_episode_returns"])

        return jax.lax.scan(step, state, jax.random.split(key, steps))[1]

    out = jax.jit(jax.vmap(episode))(jax.random.split(jax.random.PRNGKey(1), 64))
    return map(np.asarray, out)


def _check_logged_returns(reward, done, returned):
    assert done.any()
    # at each episode end the logged return is that episode's summed team reward
    for b, t in zip(*np.nonzero(done), strict=True):
        start = np.nonzero(done[b, :t])[0]
        first = start[-1] + 1 if len(start) else 0
        assert returned[b, t, 0] == reward[b, first:t + 1].sum()
    assert set(np.unique(reward)) <= {-1.0, 0.0, 1.0}


@pytest.mark.full  # long: the default tier's time (issue 36)
def test_log_wrapper_over_random_play():
    _check_logged_returns(*_random_play(ENV, AGENTS, 30))


def test_log_wrapper_over_a_keep_talking_module():
    env = JaxMARLView(KtaneView(single_module_env("wires")))
    assert env.agents == ["defuser", "expert"]
    avail = env.get_avail_actions(env.reset(jax.random.PRNGKey(0))[1])
    assert avail["expert"].sum() < avail["defuser"].sum()   # the Expert only waits or talks
    assert not avail["defuser"][VERBS.index("cut")]          # no module in hand yet: select
    reward, done, returned = _random_play(env, ("defuser", "expert"), env.env.max_turns + 2)
    _check_logged_returns(reward, done, returned)


def test_a_right_cut_defuses_and_resets():
    obs, state = ENV.reset(jax.random.PRNGKey(3))
    right = ENV.env.solution(state.env_state)[0]
    step = jax.jit(ENV.step)
    for _ in range(2):  # Deaf and Mute wait
        obs, state, reward, dones, info = step(jax.random.PRNGKey(0), state, _idle())
    cut = jnp.zeros(len(ENV.view.head_sizes), jnp.int32).at[0].set(T.CUT).at[1].set(right)
    obs, state, reward, dones, info = step(jax.random.PRNGKey(0), state, _idle(blind=cut))
    assert bool(dones["__all__"]) and float(reward["deaf"]) == 1.0
    assert info["ending"].tolist() == [T.DEFUSED] * 3 and info["actor"].tolist() == [T.BLIND] * 3
    assert int(state.env_state.round) == 0 and int(state.env_state.ending) == T.RUNNING
    assert int(state.turn) == 0                                      # auto-reset by JaxMARL
