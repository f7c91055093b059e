"""A JaxMARL-style IPPO loop runs on the adapter: written the way JaxMARL's
``baselines/IPPO/ippo_ff_*.py`` scripts are (a flax actor-critic, ``batchify`` over agents, the
action space's ``.n``, ``get_avail_actions`` per step, ``info`` reshaped to ``NUM_ACTORS``),
with only the environment construction and, on a bomb variant, the policy head
(:class:`~jaxcollab.marl.adapter.FactorisedCategorical`) changed."""

import flax.linen as fnn
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jaxmarl.environments.spaces import Discrete
from jaxmarl.wrappers.baselines import LogWrapper

from jaxcollab.marl.adapter import FactorisedCategorical, JaxMARLView
from jaxcollab.marl.views import view_of

CONFIG = {"NUM_ENVS": 4, "NUM_STEPS": 32, "UPDATES": 2, "UPDATE_EPOCHS": 2, "GAMMA": 0.99,
          "GAE_LAMBDA": 0.95, "CLIP_EPS": 0.2, "ENT_COEF": 0.01, "VF_COEF": 0.5, "LR": 3e-4}


class ActorCritic(fnn.Module):
    n_logits: int

    @fnn.compact
    def __call__(self, x):
        h = fnn.tanh(fnn.Dense(64)(x))
        return fnn.Dense(self.n_logits)(h), jnp.squeeze(fnn.Dense(1)(h), -1)


def batchify(x: dict, agents, num_actors):
    return jnp.stack([x[a] for a in agents]).reshape((num_actors, -1))


def unbatchify(x, agents, num_envs, num_agents):
    x = x.reshape((num_agents, num_envs, -1))
    return {a: x[i] for i, a in enumerate(agents)}


def make_train(env, config):
    env = LogWrapper(env)
    num_actors = env.num_agents * config["NUM_ENVS"]
    space = env.action_space(env.agents[0])
    if isinstance(space, Discrete):  # the scripts' head: one categorical over .n choices
        sizes = (space.n,)
    else:
        sizes = tuple(int(s) for s in space.num_categories)
    network = ActorCritic(sum(sizes))
    opt = optax.chain(optax.clip_by_global_norm(0.5), optax.adam(config["LR"]))

    def policy(params, obs, avail):
        logits, value = network.apply(params, obs)
        return FactorisedCategorical(logits, sizes, avail), value

    def train(rng):
        rng, k_init, k_reset = jax.random.split(rng, 3)
        params = network.init(k_init, jnp.zeros(env.observation_space(env.agents[0]).shape))
        opt_state = opt.init(params)
        obsv, env_state = jax.vmap(env.reset)(jax.random.split(k_reset, config["NUM_ENVS"]))

        def env_step(carry, _):
            params, env_state, last_obs, rng = carry
            rng, k_act, k_step = jax.random.split(rng, 3)
            avail = jax.vmap(env.get_avail_actions)(env_state.env_state)
            avail = batchify(avail, env.agents, num_actors)
            obs_batch = batchify(last_obs, env.agents, num_actors)
            pi, value = policy(params, obs_batch, avail)
            action = pi.sample(seed=k_act)
            env_act = unbatchify(action, env.agents, config["NUM_ENVS"], env.num_agents)
            if len(sizes) == 1:  # a flat Discrete takes the scalar choice
                env_act = {k: v.squeeze(-1) for k, v in env_act.items()}
            obsv, env_state, reward, done, info = jax.vmap(env.step)(
                jax.random.split(k_step, config["NUM_ENVS"]), env_state, env_act)
            info = jax.tree.map(lambda x: x.reshape((num_actors,)), info)
            transition = dict(done=batchify(done, env.agents, num_actors).squeeze(),
                              action=action, value=value,
                              reward=batchify(reward, env.agents, num_actors).squeeze(),
                              log_prob=pi.log_prob(action), obs=obs_batch, avail=avail,
                              info=info)
            return (params, env_state, obsv, rng), transition

        def update(carry, _):
            params, opt_state, env_state, last_obs, rng = carry
            (_, env_state, last_obs, rng), traj = jax.lax.scan(
                env_step, (params, env_state, last_obs, rng), None, config["NUM_STEPS"])
            last_avail = batchify(jax.vmap(env.get_avail_actions)(env_state.env_state),
                                  env.agents, num_actors)
            _, last_val = policy(params, batchify(last_obs, env.agents, num_actors), last_avail)

            def gae(next_, t):
                adv, v_next = next_
                delta = t["reward"] + config["GAMMA"] * v_next * (1 - t["done"]) - t["value"]
                adv = delta + config["GAMMA"] * config["GAE_LAMBDA"] * (1 - t["done"]) * adv
                return (adv, t["value"]), adv

            _, adv = jax.lax.scan(gae, (jnp.zeros_like(last_val), last_val), traj, reverse=True)
            targets = adv + traj["value"]

            def loss_fn(params):
                pi, value = policy(params, traj["obs"], traj["avail"])
                ratio = jnp.exp(pi.log_prob(traj["action"]) - traj["log_prob"])
                norm = (adv - adv.mean()) / (adv.std() + 1e-8)
                clipped = jnp.clip(ratio, 1 - config["CLIP_EPS"], 1 + config["CLIP_EPS"])
                actor = -jnp.minimum(ratio * norm, clipped * norm).mean()
                critic = 0.5 * ((value - targets) ** 2).mean()
                return (actor + config["VF_COEF"] * critic
                        - config["ENT_COEF"] * pi.entropy().mean())

            def epoch(state, _):
                params, opt_state = state
                loss, grads = jax.value_and_grad(loss_fn)(params)
                updates, opt_state = opt.update(grads, opt_state, params)
                return (optax.apply_updates(params, updates), opt_state), loss

            (params, opt_state), loss = jax.lax.scan(epoch, (params, opt_state), None,
                                                     config["UPDATE_EPOCHS"])
            metric = dict(loss=loss, traj=traj)
            return (params, opt_state, env_state, last_obs, rng), metric

        return jax.lax.scan(update, (params, opt_state, env_state, obsv, rng), None,
                            config["UPDATES"])[1]

    return train


def _check(env, metrics):
    """Every played action was available, a non-actor's always the idle one (0), and the loss
    finite."""
    traj = jax.tree.map(np.asarray, metrics["traj"])
    action, avail = traj["action"], traj["avail"]  # [updates, steps, actors, heads | logits]
    sizes = (avail.shape[-1],) if action.shape[-1] == 1 else env.view.head_sizes
    assert np.take_along_axis(avail, action + np.cumsum((0,) + tuple(sizes))[:-1], -1).all()
    u, t, n, e = action.shape[:2] + (env.num_agents, CONFIG["NUM_ENVS"])
    actor = traj["info"]["actor"].reshape(u, t, e, n)[..., 0]  # info is env-major per step
    others = actor[:, :, None, :] != np.arange(n)[:, None]
    acted = action.reshape(u, t, n, e, -1)
    assert (acted[others] == 0).all() and (acted[~others] != 0).any()
    assert np.isfinite(metrics["loss"]).all()


def _run(env):
    train = jax.jit(make_train(env, CONFIG))
    metrics = train(jax.random.PRNGKey(0))
    again = train(jax.random.PRNGKey(0))
    np.testing.assert_array_equal(metrics["loss"], again["loss"])  # deterministic
    return metrics


@pytest.mark.full  # ~65 s under load (the Keep-Talking one below is the default tier's)
def test_ippo_on_a_bomb_variant_factorised():
    env = JaxMARLView(view_of("bomb/base-1"))
    metrics = _run(env)
    _check(env, metrics)
    ended = np.asarray(metrics["traj"]["info"]["returned_episode"])
    assert ended.any()  # NUM_STEPS > the variant's 24 turns: every env ended an episode


@pytest.mark.full  # long: the default tier's time (issue 36)
def test_ippo_on_a_keep_talking_module_flat_discrete():
    env = JaxMARLView(view_of("ktane/wires"), actions="discrete")
    assert env.action_space("defuser").n == 480
    _check(env, _run(env))
