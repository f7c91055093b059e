"""Recurrent policies in plain JAX: a token-embedding torso, a GRU cell and factorised
categorical heads (one per action head of :class:`~jaxcollab.marl.view.BombView`), plus the
centralised critic of MAPPO.

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


def _embed(p: dict, tokens: jax.Array, heard=None) -> jax.Array:
    """int32 ``[n]`` tokens → float32 ``[n * dim]`` (token + position embedding).

    ``heard`` = (slots int ``[m]``, weights float ``[m, A]``, ids int ``[m, A]``) adds
    ``weights @ tok[ids]`` at the positions ``slots``: with straight-through weights
    (``p - stop_gradient(p)``, zero in value) the embedding is unchanged and its gradient
    reaches the sender's message probabilities ``p`` (DIAL; Foerster et al. 2016, "Learning to
    Communicate with Deep Multi-Agent Reinforcement Learning", sec. 5).
    """
    e = p["tok"][tokens] + p["pos"]
    if heard is not None:
        slots, weights, ids = heard
        delta = jnp.einsum("ma,mae->me", weights, p["tok"][ids])
        e = e + jax.nn.one_hot(slots, e.shape[-2], dtype=e.dtype).T @ delta
    return e.reshape(e.shape[:-2] + (-1,))


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


def gru(p_x: dict, p_h: dict, x: jax.Array, h: jax.Array) -> jax.Array:
    """One GRU step: ``x``, ``h`` float32 ``[..., H]`` → new ``h``."""
    gx, gh = _apply(p_x, x), _apply(p_h, h)
    xr, xz, xn = jnp.split(gx, 3, -1)
    hr, hz, hn = jnp.split(gh, 3, -1)
    r, z = jax.nn.sigmoid(xr + hr), jax.nn.sigmoid(xz + hz)
    n = jnp.tanh(xn + r * hn)
    return (1 - z) * n + z * h


def actor_apply(p: dict, tokens: jax.Array, h: jax.Array, heard=None
                ) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``tokens`` int32 ``[obs_size]``, ``h`` float32 ``[H]`` → (logits ``[n_logits]``,
    value ``[]``, new ``h``); ``heard``: see :func:`_embed`."""
    x = jax.nn.relu(_apply(p["torso"], _embed(p["embed"], tokens, heard)))
    h = gru(p["gru_x"], p["gru_h"], x, h)
    return _apply(p["pi"], h), _apply(p["v"], h)[..., 0], h


def aux_logits(p: dict, h: jax.Array) -> jax.Array:
    """The auxiliary head: GRU state ``[..., H]`` → logits ``[..., n_aux]`` (a prediction
    of the action the task needs now, trained only as an auxiliary loss)."""
    return _apply(p["aux"], h)


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
