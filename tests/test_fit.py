"""Multi-step training and kernel choices: the chunked scan equals the step-by-step loop, and the
attention/dtype choices give the same losses to tolerance."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxcollab.collab import fit as fit_module
from jaxcollab.collab.fit import TrainConfig, fit, make_optimizer
from jaxcollab.models import gpt as gpt_module
from jaxcollab.models.gpt import GPT, GPTConfig

CFG = GPTConfig(vocab_size=14, block_size=8, n_layer=1, n_head=2, n_embd=16)  # one block: the
# checks below are per block, and each extra block adds its compile time
TC = TrainConfig(steps=7, batch_size=16, lr=3e-3, min_lr=3e-4, warmup_steps=2, eval_every=3,
                 val_examples=32, eval_batch=32)
KEY = jax.random.PRNGKey(5)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    return (rng.integers(0, 14, (96, 8)), rng.integers(0, 2, 96),
            rng.integers(0, 14, (32, 8)), rng.integers(0, 2, 32))


def _fit(data, cfg=CFG):
    losses = []
    result = fit(cfg, TC, *data, KEY, lambda i, loss: losses.append((i, loss)))
    return result, losses


@pytest.mark.full
def test_chunked_fit_equals_the_step_by_step_loop(data):
    """Same key → the same batches and updates as one jitted step per host iteration (the
    trainer before chunking): steps 1..7 in chunks of 3, 3, 1, best-validation params kept."""
    result, losses = _fit(data)
    assert [i for i, _ in losses] == list(range(1, 8))
    tokens, targets, val_tokens, val_targets = data
    k_init, k_steps = jax.random.split(KEY)
    graphdef, params = nnx.split(GPT(CFG, nnx.Rngs(k_init)))
    tx = make_optimizer(TC)
    opt_state = tx.init(params)
    step = jax.jit(fit_module._train_step(graphdef, tx, TC.batch_size, dropout=False))
    expected, vals = [], {}
    for i in range(1, 8):
        params, opt_state, loss = step(params, opt_state, jax.random.fold_in(k_steps, i),
                                       jnp.asarray(tokens), jnp.asarray(targets))
        expected.append(float(loss))
        if i in (3, 6, 7):
            vals[i] = (fit_module.mean_loss(graphdef, params, val_tokens, val_targets, 32),
                       params)
    np.testing.assert_allclose([loss for _, loss in losses], expected, rtol=1e-5)
    best_step = min(vals, key=lambda i: vals[i][0])
    assert result.best_step == best_step
    np.testing.assert_allclose(result.best_val_loss, vals[best_step][0], rtol=1e-5)
    for got, want in zip(jax.tree.leaves(result.params), jax.tree.leaves(vals[best_step][1])):
        np.testing.assert_allclose(got, want, atol=1e-6)
    assert result.final_train_loss == losses[-1][1]


@pytest.mark.full  # the default tier keeps its sibling tests; CI runs -m full
def test_dot_product_attention_matches_explicit_softmax_attention():
    """The kernel path (jax.nn.dot_product_attention) equals the explicit einsum/softmax path
    used under dropout, for every query position and for the last one only."""
    model = GPT(CFG, nnx.Rngs(0))
    tokens = jnp.asarray(np.random.default_rng(1).integers(0, 14, (3, 8)), jnp.int32)
    explicit = GPT(dataclasses.replace(CFG, dropout=1e-9), nnx.Rngs(0))
    rngs = nnx.Rngs(dropout=0)
    for last_only in (False, True):
        np.testing.assert_allclose(model(tokens, last_only=last_only),
                                   explicit(tokens, rngs, last_only=last_only), atol=1e-5)


def test_backend_choices_in_one_place(monkeypatch):
    assert gpt_module.resolve_dtype("auto") == jnp.float32  # tests run on the CPU
    assert gpt_module.attention_implementation("auto", jnp.bfloat16, 40) == "xla"
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert gpt_module.resolve_dtype("auto") == jnp.bfloat16
    assert gpt_module.resolve_dtype("float32") == jnp.float32
    assert gpt_module.attention_implementation("auto", jnp.bfloat16, 40) == "cudnn"
    assert gpt_module.attention_implementation("auto", jnp.float32, 40) == "xla"  # cuDNN: 16-bit
    assert gpt_module.attention_implementation("auto", jnp.bfloat16, 12) == "xla"  # head % 8
    assert gpt_module.attention_implementation("xla", jnp.bfloat16, 40) == "xla"
    with pytest.raises(ValueError, match="unknown attention 'flash'"):
        GPTConfig(vocab_size=14, block_size=8, attention="flash")


@pytest.mark.slow  # a bf16 compile on the CPU (~20 CPU-s) for the GPU default
def test_bfloat16_training_gives_the_float32_losses_to_tolerance(data):
    """The GPU default (bf16 matmuls, float32 parameters) trains like float32: the same
    per-step losses within bf16 rounding."""
    _, f32 = _fit(data, dataclasses.replace(CFG, dtype="float32"))
    _, bf16 = _fit(data, dataclasses.replace(CFG, dtype="bfloat16"))
    f32, bf16 = np.array([x for _, x in f32]), np.array([x for _, x in bf16])
    np.testing.assert_allclose(bf16, f32, atol=0.03)
    assert not np.array_equal(bf16, f32)  # the bf16 path really ran in bf16
