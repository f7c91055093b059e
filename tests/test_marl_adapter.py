"""JaxMARL's own wrappers run over the bomb variants and Keep-Talking modules exposed as a JaxMARL
MultiAgentEnv."""

import jax
import jax.numpy as jnp
import numpy as np
from jaxmarl.wrappers.baselines import LogWrapper

from jaxcollab.agents.bomb.rl_view import make_view
from jaxcollab.agents.ktane.rl_view import KtaneView
from jaxcollab.envs.bomb import tables as T
from jaxcollab.envs.ktane import single_module_env
from jaxcollab.envs.ktane.modules.base import VERBS
from jaxcollab.marl.adapter import JaxMARLView

ENV = JaxMARLView(make_view("bomb/base-1"))
AGENTS = ("deaf", "mute", "blind")


def _idle(**rows):
    a = {n: jnp.zeros(len(ENV.view.head_sizes), jnp.int32) for n in AGENTS}
    return {**a, **rows}


def test_interface_is_jaxmarls():
    obs, _ = ENV.reset(jax.random.PRNGKey(0))
    assert ENV.agents == list(AGENTS) and ENV.num_agents == 3
    assert set(obs) == {*AGENTS, "world_state"}
    assert obs["deaf"].shape == ENV.observation_space("deaf").shape
    assert obs["world_state"].shape == (3 * ENV.view.obs_size,)
    assert ENV.action_space("blind").shape == (len(ENV.view.head_sizes),)
    avail = ENV.get_avail_actions(ENV.reset(jax.random.PRNGKey(0))[1])
    assert avail["mute"].sum() < avail["deaf"].sum()   # Mute cannot speak


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
    assert int(info["ending"]) == T.DEFUSED and int(info["actor"]) == T.BLIND
    assert int(state.env_state.round) == 0 and int(state.env_state.ending) == T.RUNNING
    assert int(state.turn) == 0                                      # auto-reset by JaxMARL
