"""The nanoGPT-style transformer: causality, weight tying, last-position path, jit, errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxcollab.models.gpt import GPT, GPTConfig, n_params

CFG = GPTConfig(vocab_size=14, block_size=12, n_layer=2, n_head=2, n_embd=16)


@pytest.fixture(scope="module")
def model():
    return GPT(CFG, nnx.Rngs(0))


@pytest.fixture(scope="module")
def tokens():
    return jnp.asarray(np.random.default_rng(0).integers(0, 14, (3, 10)), jnp.int32)


def test_causal_mask_later_tokens_never_change_earlier_logits(model, tokens):
    changed = tokens.at[:, 6:].set((tokens[:, 6:] + 1) % 14)
    np.testing.assert_array_equal(model(tokens)[:, :6], model(changed)[:, :6])
    assert not np.allclose(model(tokens)[:, 6:], model(changed)[:, 6:])


@pytest.mark.full  # long: the default tier's time (issue 36)
def test_last_only_matches_full_forward_and_jit(model, tokens):
    full = model(tokens)
    last = model(tokens, last_only=True)
    assert last.shape == (3, 1, 14)
    np.testing.assert_allclose(last[:, 0], full[:, -1], atol=1e-5)
    graphdef, params = nnx.split(model)
    jitted = jax.jit(lambda p, t: nnx.merge(graphdef, p)(t))(params, tokens)
    np.testing.assert_allclose(jitted, full, atol=1e-5)


def test_weight_tying_and_parameter_count(model):
    c, v, t, layers = 16, 14, 12, 2
    layer_norms, attn = 2 * 2 * c, (3 * c * c + 3 * c) + (c * c + c)
    per_block = layer_norms + attn + (4 * c * c + 4 * c) + (4 * c * c + c)
    assert n_params(model) == v * c + t * c + layers * per_block + 2 * c  # no separate output head
    assert n_params(model, embeddings=False) == n_params(model) - t * c
    # the logits are the final hidden state times the token embedding (transposed)
    x = jnp.array([[1, 2, 3]])
    h = model.wte(x) + model.wpe(jnp.arange(3))
    for block in model.blocks:
        h = block(h)
    expected = model.ln_f(h) @ model.wte.embedding[...].T
    np.testing.assert_allclose(model(x), expected, atol=1e-5)


def test_dropout_only_with_rngs_and_bf16_close_to_f32(tokens):
    cfg = GPTConfig(vocab_size=14, block_size=12, n_layer=1, n_head=2, n_embd=16, dropout=0.5)
    m = GPT(cfg, nnx.Rngs(0))
    np.testing.assert_array_equal(m(tokens), m(tokens))
    assert not np.allclose(m(tokens), m(tokens, nnx.Rngs(dropout=1)))
    bf16 = GPT(GPTConfig(**{**cfg.__dict__, "dropout": 0.0, "dtype": "bfloat16"}), nnx.Rngs(0))
    f32 = GPT(GPTConfig(**{**cfg.__dict__, "dropout": 0.0}), nnx.Rngs(0))
    assert bf16(tokens).dtype == jnp.float32
    np.testing.assert_allclose(bf16(tokens), f32(tokens), atol=0.05)


def test_bad_configs_and_inputs_raise():
    with pytest.raises(ValueError, match="n_embd=10 must be a positive multiple of n_head=4"):
        GPTConfig(vocab_size=14, block_size=8, n_head=4, n_embd=10)
    with pytest.raises(ValueError, match="unknown dtype 'float16'"):
        GPTConfig(vocab_size=14, block_size=8, dtype="float16")
    with pytest.raises(ValueError, match="dropout=1.0"):
        GPTConfig(vocab_size=14, block_size=8, dropout=1.0)
    m = GPT(GPTConfig(vocab_size=14, block_size=4, n_layer=1, n_head=1, n_embd=8), nnx.Rngs(0))
    with pytest.raises(ValueError, match="sequence length 5 exceeds block_size=4"):
        m(jnp.zeros((1, 5), jnp.int32))
