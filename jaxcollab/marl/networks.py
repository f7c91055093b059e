"""Recurrent policies in plain JAX: a token-embedding torso, a GRU cell and factorised
categorical heads (one per action head of :class:`~jaxcollab.agents.bomb.rl_view.BombView`),
plus the centralised critic of MAPPO.

Parameters are plain dicts of float32 arrays (a pytree, so optax, vmap over seeds and orbax
apply directly). The GRU is Cho et al. (2014), "Learning Phrase Representations using RNN
Encoder-Decoder", eq. 5-8.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

NEG = -1e9  # logit of a masked choice


def _dense(key, n_in: int, n_out: int, scale: float = 1.0) -> dict:
    w = jax.nn.initializers.orthogonal(scale)(key, (n_in, n_out), jnp.float32)
    return {"w": w, "b": jnp.zeros(n_out, jnp.float32)}


def _apply(p: dict, x: jax.Array) -> jax.Array:
    return x @ p["w"] + p["b"]


def _embed_init(key, vocab: int, length: int, dim: int) -> dict:
    k1, k2 = jax.random.split(key)
    return {"tok": 0.1 * jax.random.normal(k1, (vocab, dim), jnp.float32),
            "pos": 0.1 * jax.random.normal(k2, (length, dim), jnp.float32)}


def _embed(p: dict, tokens: jax.Array) -> jax.Array:
    """int32 ``[..., n]`` tokens → float32 ``[..., n * dim]`` (token + position embedding)."""
    e = p["tok"][tokens] + p["pos"]
    return e.reshape(e.shape[:-2] + (-1,))


def role_dense(p: dict, x: jax.Array, role: jax.Array) -> jax.Array:
    """A dense layer with one set of weights per role (``p["w"]`` ``[R, n_in, n_out]``) applied
    to ``x`` float32 ``[..., n_in]`` with the weights of its row's role (int32 ``[...]``) →
    ``[..., n_out]``.

    Every role's product in one matmul, then the row's own: R times the multiply-adds of one,
    but no per-row copy of the weights, which on a CPU costs more than the products; the other
    roles' products are dropped exactly and get a zero gradient."""
    if p["w"].shape[0] == 1:
        return _apply(jax.tree.map(lambda a: a[0], p), x)
    r, n_in, n_out = p["w"].shape
    w = p["w"].transpose(1, 0, 2).reshape(n_in, r * n_out)  # one plain matmul, also under vmap
    y = (x @ w + p["b"].reshape(-1)).reshape(x.shape[:-1] + (r, n_out))
    mine = (role[..., None] == jnp.arange(r))[..., None]  # a select, exact (not a product)
    return jnp.where(mine, y, 0.0).sum(-2)


def torso_input(p: dict, tokens: jax.Array, role: jax.Array) -> jax.Array:
    """The torso's pre-activation of role-stacked actors ``p`` (:func:`actor_init` vmapped
    over roles): ``tokens`` int32 ``[..., obs_size]`` through their row's role's (int32
    ``[...]``) token + position embedding and torso weights → float32 ``[..., H]``.

    The embedding is linear in the torso, so the position embedding enters as one ``[R, H]``
    vector per role. No recurrent state enters here: a replay computes it for every turn at
    once (one large matmul instead of one small one per turn)."""
    tok, pos, w = p["embed"]["tok"], p["embed"]["pos"], p["torso"]["w"]
    n_roles = w.shape[0]
    e = tok[role[..., None], tokens] if n_roles > 1 else tok[0][tokens]
    bias = p["torso"]["b"] + jnp.einsum("rk,rkh->rh", pos.reshape(n_roles, -1), w)
    return role_dense({"w": w, "b": bias}, e.reshape(e.shape[:-2] + (-1,)), role)


def heard_table(p: dict, slots: np.ndarray, ids: np.ndarray) -> jax.Array:
    """What each heard symbol adds to the torso's pre-activation, per role: float32
    ``[R, m, A, H]`` for the inbox ``slots`` int ``[m]`` (observation-vector positions) and
    the tokens ``ids`` int ``[m, A]`` each symbol arrives as (``tok[ids] @`` the torso rows of
    the slot)."""
    w = p["torso"]["w"]
    w = w.reshape(w.shape[0], -1, p["embed"]["tok"].shape[-1], w.shape[-1])  # [R, obs, E, H]
    return jnp.einsum("rmae,rmeh->rmah", p["embed"]["tok"][:, ids], w[:, slots])


def heard_input(table: jax.Array, weights: jax.Array, role: jax.Array) -> jax.Array:
    """The torso pre-activation of what a listener hears: ``weights`` float32 ``[..., m, A]``
    (zero in value, straight-through ``p - stop_gradient(p)`` of the senders' probabilities)
    times :func:`heard_table` of the row's ``role`` → ``[..., H]``. Zero in value, so the
    embedding is unchanged, and its gradient reaches the sender's message probabilities
    (DIAL; Foerster et al. 2016, "Learning to Communicate with Deep Multi-Agent Reinforcement
    Learning", sec. 5)."""
    flat = table.reshape(table.shape[0], -1, table.shape[-1])
    return role_dense({"w": flat, "b": jnp.zeros(flat.shape[::2], flat.dtype)},
                      weights.reshape(weights.shape[:-2] + (-1,)), role)


def actor_init(key, vocab: int, obs_size: int, n_logits: int, hidden: int, embed: int,
               n_aux: int = 7) -> dict:
    """Parameters of one recurrent actor (with its own value head, used by IPPO, and an
    auxiliary head of ``n_aux`` logits read from the GRU state: :func:`aux_logits`)."""
    k = jax.random.split(key, 6)
    return {
        "embed": _embed_init(k[0], vocab, obs_size, embed),
        "torso": _dense(k[1], obs_size * embed, hidden, np.sqrt(2)),
        "gru_x": _dense(k[2], hidden, 3 * hidden),
        "gru_h": _dense(k[3], hidden, 3 * hidden),
        "pi": _dense(k[4], hidden, n_logits, 0.01),
        "v": _dense(k[5], hidden, 1, 1.0),
        "aux": _dense(jax.random.fold_in(k[5], 1), hidden, n_aux, 1.0),
    }


def gru_update(gx: jax.Array, gh: jax.Array, h: jax.Array) -> jax.Array:
    """One GRU step from its input and state projections ``gx``, ``gh`` ``[..., 3H]`` and
    state ``h`` ``[..., H]`` → new ``h`` (Cho et al. 2014, eq. 5-8)."""
    xr, xz, xn = jnp.split(gx, 3, -1)
    hr, hz, hn = jnp.split(gh, 3, -1)
    r, z = jax.nn.sigmoid(xr + hr), jax.nn.sigmoid(xz + hz)
    n = jnp.tanh(xn + r * hn)
    return (1 - z) * n + z * h


def actor_step(p: dict, pre: jax.Array, h: jax.Array, role: jax.Array
               ) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Role-stacked actors ``p`` from the torso's pre-activation ``pre`` float32 ``[..., H]``
    (:func:`torso_input`, plus :func:`heard_input` under DIAL) and GRU state ``h`` ``[..., H]``
    of a row of role ``role`` (int32 ``[...]``) → (logits ``[..., n_logits]``, value ``[...]``,
    new ``h``)."""
    x = jax.nn.relu(pre)
    h = gru_update(role_dense(p["gru_x"], x, role), role_dense(p["gru_h"], h, role), h)
    return actor_heads(p, h, role)


def actor_heads(p: dict, h: jax.Array, role: jax.Array
                ) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The policy and value heads of role-stacked actors on the new GRU state ``h``
    ``[..., H]`` → (logits ``[..., n_logits]``, value ``[...]``, ``h``)."""
    return role_dense(p["pi"], h, role), role_dense(p["v"], h, role)[..., 0], h


def aux_logits(p: dict, h: jax.Array, role: jax.Array) -> jax.Array:
    """The auxiliary head of role-stacked actors ``p``: GRU state ``[..., H]`` of a row of
    role ``role`` (int32 ``[...]``) → logits ``[..., n_aux]`` (a prediction of the action the
    task needs now, trained only as an auxiliary loss)."""
    return role_dense(p["aux"], h, role)


def critic_init(key, vocab: int, obs_size: int, n_agents: int, hidden: int, embed: int) -> dict:
    """The centralised critic of MAPPO: an MLP over every agent's observation vector."""
    k = jax.random.split(key, 4)
    return {"embed": _embed_init(k[0], vocab, n_agents * obs_size, embed),
            "l1": _dense(k[1], n_agents * obs_size * embed, hidden, np.sqrt(2)),
            "l2": _dense(k[2], hidden, hidden, np.sqrt(2)),
            "v": _dense(k[3], hidden, 1, 1.0)}


def critic_apply(p: dict, tokens: jax.Array) -> jax.Array:
    """``tokens`` int32 ``[..., n_agents, obs_size]`` → value ``[...]``."""
    flat = tokens.reshape(tokens.shape[:-2] + (-1,))
    x = jax.nn.relu(_apply(p["l1"], _embed(p["embed"], flat)))
    x = jax.nn.relu(_apply(p["l2"], x))
    return _apply(p["v"], x)[..., 0]


# ---- factorised categorical ----------------------------------------------------------------


def head_log_probs(logits: jax.Array, mask: jax.Array, sizes: tuple[int, ...]) -> list:
    """Per-head log-probabilities (masked choices get probability 0)."""
    logits = jnp.where(mask, logits, NEG)
    parts = jnp.split(logits, np.cumsum(sizes)[:-1], axis=-1)
    return [jax.nn.log_softmax(x, -1) for x in parts]


def sample(key, logp: list) -> jax.Array:
    """One random choice per head: int32 ``[..., n_heads]``."""
    keys = jax.random.split(key, len(logp))
    return jnp.stack([jax.random.categorical(k, x, -1) for k, x in zip(keys, logp, strict=True)],
                     -1).astype(jnp.int32)


def greedy(logp: list) -> jax.Array:
    """The most likely choice per head: int32 ``[..., n_heads]``."""
    return jnp.stack([jnp.argmax(x, -1) for x in logp], -1).astype(jnp.int32)


def log_prob(logp: list, action: jax.Array, relevant: jax.Array) -> jax.Array:
    """Log-probability of ``action`` ``[..., n_heads]``: the sum over its relevant heads."""
    # one-hot products, not gathers: their gradient is dense (no scatter on CPU)
    per = jnp.stack([(jax.nn.one_hot(action[..., i], x.shape[-1]) * x).sum(-1)
                     for i, x in enumerate(logp)], -1)
    return jnp.where(relevant, per, 0.0).sum(-1)


def entropy(logp: list, relevant: jax.Array) -> jax.Array:
    """Summed entropy of the relevant heads ``[...]``."""
    per = jnp.stack([-(jnp.exp(x) * x).sum(-1) for x in logp], -1)
    return jnp.where(relevant, per, 0.0).sum(-1)
