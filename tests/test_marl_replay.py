"""The trainer's batched replay (torso, GRU input projection and heads outside the scan,
per-role layers as one matmul over roles, DIAL's heard symbols as a table) against the replay
written the direct way: per episode and turn, the acting role's own parameters on its
embedded view, the heard symbols' straight-through embeddings added at their inbox slots, one
turn at a time. Same values and the same gradients, up to float rounding."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcollab.marl import networks as nn
from jaxcollab.marl.ppo import PPOConfig, Trainer

BASE = PPOConfig(episodes=6, steps=9, epochs=1, minibatches=1, hidden=8, embed=2, seeds=1,
                 shared=False, dial=True, aux_coef=1.0, turn_order="cycle")


def reference_replay(t: Trainer, params, traj, hidden0):
    view, k = t.view, t.cfg.symbols
    slots, tokens = (jnp.asarray(a) for a in view.inbox)
    ids = jnp.broadcast_to(tokens[:, None, None, :], slots.shape + tokens.shape[-1:])
    ids = ids.reshape(-1, ids.shape[-1])
    mask = jnp.asarray(view.logit_mask)

    def net(p, x, h, weights):  # one role's actor on its view x [D]
        e = p["embed"]["tok"][x] + p["embed"]["pos"]
        if weights is not None:
            delta = jnp.einsum("ma,mae->me", weights, p["embed"]["tok"][ids])
            e = e.at[slots.reshape(-1)].add(delta)
        x = jax.nn.relu(e.reshape(-1) @ p["torso"]["w"] + p["torso"]["b"])
        gx = x @ p["gru_x"]["w"] + p["gru_x"]["b"]
        gh = h @ p["gru_h"]["w"] + p["gru_h"]["b"]
        h = nn.gru_update(gx, gh, h)
        return h @ p["pi"]["w"] + p["pi"]["b"], (h @ p["v"]["w"] + p["v"]["b"])[0], h, \
            h @ p["aux"]["w"] + p["aux"]["b"]

    def one(enc, actor, hidden, action, answer, sent):
        p = jax.tree.map(lambda a: a[actor % t.roles], params["actor"])
        weights = t._heard(enc[actor], actor, sent) if t.cfg.dial else None
        logits, value, h, aux = net(p, enc[actor], hidden[actor], weights)
        if t.cfg.algo == "mappo":
            value = nn.critic_apply(params["critic"], enc)
        logp = nn.head_log_probs(logits, mask[actor], view.head_sizes)
        if t.cfg.dial:
            probs = jnp.stack([jnp.stack([jnp.exp(logp[i]) for i in range(h0 + 1, h0 + 1 + k)])
                               for h0 in map(view.recipient_head, range(2))])
            sent = t._sent(sent, probs, action, actor)
        parts = jnp.split(aux, np.cumsum(view.answer_sizes)[:-1])
        ce = sum(-(jax.nn.one_hot(a, x.shape[-1]) * jax.nn.log_softmax(x)).sum()
                 for a, x in zip(answer, parts, strict=True))
        rel = t._factors(action)
        ent = nn.entropy(logp, t.view.relevant(action))
        return (nn.log_prob(logp, action, rel), value, ent, ce,
                hidden.at[actor].set(h), sent)

    def step(carry, x):
        hidden, sent = carry
        lp, value, ent, ce, hidden, sent = jax.vmap(one)(
            x["enc"], x["actor"], hidden, x["action"], x["answer"], sent)
        done = x["done"]
        reset = lambda a, v: jnp.where(done.reshape(done.shape + (1,) * (a.ndim - 1)), v, a)  # noqa: E731
        return (reset(hidden, 0.0), (reset(sent[0], 0.0), reset(sent[1], -1))), (lp, value, ent, ce)

    _, out = jax.lax.scan(step, (hidden0, t._no_messages(hidden0.shape[0])), traj)
    return out


def _loss(outputs):  # every output enters, with its own weight
    return sum(c * o.mean() for c, o in zip((1.0, 0.5, -0.1, 0.7), outputs, strict=True))


@pytest.mark.parametrize("change", [
    pytest.param({}, marks=pytest.mark.full),  # long for the default tier (measured idle)
    pytest.param(dict(shared=True), marks=pytest.mark.full),
    pytest.param(dict(algo="mappo", dial=False), marks=pytest.mark.full),
])
def test_the_batched_replay_equals_the_direct_one(change):
    t = Trainer(dataclasses.replace(BASE, **change))
    state = jax.tree.map(lambda x: x[0], t.init(4))
    state, _ = jax.jit(t.update)(state)  # trained a step: no zero-initialised head left
    _, traj = jax.jit(t.rollout)(state)
    assert traj["done"].any() and not traj["done"].all()  # resets inside the segment
    args = (state.params, traj, state.hidden)
    fast, ref = jax.jit(t._replay)(*args), jax.jit(lambda *a: reference_replay(t, *a))(*args)
    for a, b in zip(fast, ref, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    g_fast = jax.jit(jax.grad(lambda p: _loss(t._replay(p, traj, state.hidden))))(state.params)
    g_ref = jax.jit(jax.grad(lambda p: _loss(reference_replay(t, p, traj, state.hidden))))(
        state.params)
    for (path, a), b in zip(jax.tree_util.tree_leaves_with_path(g_fast), jax.tree.leaves(g_ref),
                            strict=True):
        scale = float(np.abs(b).max())
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5 * max(scale, 1e-3),
                                   err_msg=jax.tree_util.keystr(path))
    if t.cfg.dial and not t.cfg.shared:  # the channel's gradient is there to compare
        assert np.abs(np.asarray(g_ref["actor"]["pi"]["w"])).sum() > 0
