"""Bias model (Collaboration Gap paper, Eq. 1): hand-computed reports, forms agree, no
recompiles."""

import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcollab.collab.bias import (
    bias_conversation,
    bias_report,
    bias_report_binary,
    binary_log_probs,
    safe_log,
    validate_bias,
)


def test_binary_report_hand_computed():
    # β = 2, uniform r_0: r = q² / (q² + (1 − q)²) = 0.49 / 0.58.
    assert float(bias_report_binary(0.7, 0.5, 2.0, 0.5)) == pytest.approx(0.49 / 0.58, abs=1e-7)
    # β = 1, γ = 0.5: r ∝ q · sqrt(r_prev).
    num = 0.7 * math.sqrt(0.6)
    expected = num / (num + 0.3 * math.sqrt(0.4))
    assert float(bias_report_binary(0.7, 0.6, 1.0, 0.5)) == pytest.approx(expected, abs=1e-7)


def test_vector_report_hand_computed():
    q = jnp.array([0.5, 0.3, 0.2])
    prev = jnp.array([0.2, 0.2, 0.6])
    unnorm = np.array([0.5, 0.3, 0.2]) ** 2 * np.array([0.2, 0.2, 0.6])
    got = np.exp(bias_report(jnp.log(q), jnp.log(prev), 2.0, 1.0))
    np.testing.assert_allclose(got, unnorm / unnorm.sum(), atol=1e-7)


def test_binary_form_is_the_vector_form_and_jit_agrees():
    key_q, key_r = jax.random.split(jax.random.key(0))
    q = jax.random.uniform(key_q, (64,), minval=0.02, maxval=0.98)
    r = jax.random.uniform(key_r, (64,), minval=0.02, maxval=0.98)
    binary = bias_report_binary(q, r, 1.7, 0.4)
    vector = jnp.exp(bias_report(binary_log_probs(q, 1e-7), binary_log_probs(r, 1e-7), 1.7, 0.4))
    np.testing.assert_allclose(vector[:, 1], binary, atol=2e-6)
    np.testing.assert_allclose(jax.jit(bias_report_binary)(q, r, 1.7, 0.4), binary, atol=1e-7)


def test_identity_without_bias():
    q = jnp.array([0.05, 0.3, 0.5, 0.93])
    np.testing.assert_allclose(bias_report_binary(q, jnp.full(4, 0.8), 1.0, 0.0), q, atol=1e-6)


def test_conversation_starts_uniform_and_anchors_on_previous_report():
    q = jnp.array([[0.7, 0.3], [0.2, 0.8], [0.6, 0.4]])  # rounds 1..3 of one example, C = 2
    log_r = bias_conversation(jnp.log(q)[:, None], 2.0, 0.5)[:, 0]
    r_prev = 0.5
    for k in range(3):
        r_k = float(bias_report_binary(q[k, 1], r_prev, 2.0, 0.5))
        assert float(jnp.exp(log_r[k, 1])) == pytest.approx(r_k, abs=1e-6)
        r_prev = r_k


def test_safe_log_keeps_zero_reports_finite():
    logp = safe_log(jnp.array([[0.0, 1.0], [0.25, 0.75]]), eps=1e-4)
    assert bool(jnp.all(jnp.isfinite(logp)))
    np.testing.assert_allclose(jnp.exp(logp).sum(-1), 1.0, atol=1e-6)
    np.testing.assert_allclose(jnp.exp(logp[1]), [0.25, 0.75], atol=1e-7)


def test_bias_values_never_recompile():
    @jax.jit
    @chex.assert_max_traces(n=1)
    def run(log_q, beta, gamma):
        return bias_conversation(log_q, beta, gamma)

    log_q = jnp.log(jnp.full((5, 8, 4), 0.25))
    for beta, gamma in [(1.0, 0.0), (2.0, 0.5), (0.5, 1.0)]:
        run(log_q, jnp.float32(beta), jnp.float32(gamma))


@pytest.mark.parametrize(
    "beta,gamma", [(0.0, 0.5), (-1.0, 0.0), (float("nan"), 0.0), (1, math.inf)]
)
def test_bad_bias_raises_naming_value(beta, gamma):
    with pytest.raises(ValueError, match="bias.(beta|gamma)="):
        validate_bias(beta, gamma)
