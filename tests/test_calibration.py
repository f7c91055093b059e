"""Calibrators and calibration metrics (Collaboration Gap paper, Def. 2.3, Alg. 1) on synthetic
data."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcollab.collab.bias import bias_conversation
from jaxcollab.collab.calibration import (
    apply_calibrator,
    features,
    fit_rounds,
    treatment_messages,
)
from jaxcollab.collab.metrics import (
    conversation_calibration_error,
    event_probs,
    round_metrics,
    self_calibration_error,
)


def synthetic_posteriors(key, n_rounds=5, n=32, n_classes=3):
    """Random true posteriors ``[K, N, C]`` (Dirichlet). Fits use two shapes only — exact
    populations ``[5, 32, 3]`` and sampled labels ``[3, 8192, 2]`` (shared with
    test_calibration_trained.py) — to keep compilation to a few kernels."""
    return jax.random.dirichlet(key, jnp.ones(n_classes), (n_rounds, n))


@pytest.mark.parametrize("beta,gamma", [(2.0, 0.5), (0.5, 0.3), (1.0, 1.0)])
def test_conversation_calibrator_recovers_bias_exactly(beta, gamma):
    q = synthetic_posteriors(jax.random.key(1))
    log_r = bias_conversation(jnp.log(q), beta, gamma)
    cals = fit_rounds("conversation", log_r, q)
    np.testing.assert_allclose(cals.weights[1:], [[1 / beta, -gamma / beta]] * 4, atol=1e-4)
    np.testing.assert_allclose(cals.bias, 0.0, atol=1e-4)
    # Round 1: r_0 is uniform, so its weight is unidentifiable and stays at 0.
    assert abs(float(cals.weights[0, 1])) < 1e-6
    assert float(cals.weights[0, 0]) == pytest.approx(1 / beta, abs=1e-4)
    _, cal_all = treatment_messages(log_r, q, log_r)
    np.testing.assert_allclose(cal_all["conversation"].weights, cals.weights, atol=1e-6)


def test_self_calibrator_inverts_pure_miscalibration_but_not_anchoring():
    q = synthetic_posteriors(jax.random.key(2))
    pure = fit_rounds("self", bias_conversation(jnp.log(q), 2.0, 0.0), q)
    np.testing.assert_allclose(pure.weights, 0.5, atol=1e-4)
    anchored = fit_rounds("self", bias_conversation(jnp.log(q), 2.0, 0.5), q)
    assert abs(float(anchored.weights[2, 0]) - 0.5) > 0.01


def test_fit_from_sampled_labels_is_close_and_deterministic():
    key_q, key_y = jax.random.split(jax.random.key(3))
    q = synthetic_posteriors(key_q, 3, 8192, 2)
    onehot = jax.nn.one_hot(jax.random.categorical(key_y, jnp.log(q)), 2)
    log_r = bias_conversation(jnp.log(q), 2.0, 0.0)
    cals = fit_rounds("self", log_r, onehot)
    np.testing.assert_allclose(cals.weights, 0.5, atol=0.05)
    again = fit_rounds("self", log_r, onehot)
    assert np.array_equal(cals.weights, again.weights) and np.array_equal(cals.bias, again.bias)
    fitted = apply_calibrator(jax.tree.map(lambda x: x[0], cals), features("self", log_r[0], 0))
    assert float(jnp.abs(jnp.exp(fitted) - q[0]).mean()) < 0.01


def test_unknown_calibrator_kind_lists_valid():
    with pytest.raises(ValueError, match="'platt'.*self.*conversation"):
        features("platt", jnp.zeros((2, 2)), jnp.zeros((2, 2)))


def test_ece_and_cce_hand_computed():
    p = jnp.array([0.15, 0.15, 0.85, 0.85])
    p_prev = jnp.array([0.2, 0.8, 0.5, 0.5])
    y = jnp.array([1.0, 0.0, 1.0, 1.0])
    # Bins of p: {0.15, 0.15} gap (1 − .15) + (0 − .15) = .7; {0.85, 0.85} gap .3 → ECE = 1/4.
    assert float(self_calibration_error(p, y)) == pytest.approx(0.25, abs=1e-6)
    # Joint cells split the first bin: |.85| + |−.15| + |.3| = 1.3 → CCE = 1.3 / 4.
    assert float(conversation_calibration_error(p, p_prev, y)) == pytest.approx(0.325, abs=1e-6)


def test_top_label_event_for_vectors():
    probs = jnp.array([[0.1, 0.7, 0.2], [0.5, 0.25, 0.25]])
    prev = jnp.array([[0.3, 0.3, 0.4], [0.6, 0.2, 0.2]])
    p, y, p_prev = event_probs(probs, jnp.array([1, 2]), prev)
    np.testing.assert_allclose(p, [0.7, 0.5])
    np.testing.assert_allclose(y, [1.0, 0.0])
    np.testing.assert_allclose(p_prev, [0.3, 0.6])


def test_ece_near_zero_when_calibrated_and_not_at_beta_two():
    key_p, key_y = jax.random.split(jax.random.key(4))
    p = jax.random.uniform(key_p, (200_000,), minval=0.01, maxval=0.99)
    y = jax.random.bernoulli(key_y, p).astype(jnp.float32)
    assert float(self_calibration_error(p, y)) < 0.005
    over = jax.nn.sigmoid(2.0 * jax.scipy.special.logit(p))
    assert float(self_calibration_error(over, y)) > 0.05


def test_conversation_calibration_implies_self_calibration():
    # Exact discrete joint law: y = E[Y | r_k, r_{k−1}] = r_k by construction.
    p_prev = jnp.array([0.2, 0.2, 0.8, 0.8, 0.5, 0.5])
    p = jnp.array([0.13, 0.55, 0.13, 0.55, 0.33, 0.91])
    weight = jnp.array([1.0, 2.0, 3.0, 1.0, 0.5, 2.5])
    assert float(conversation_calibration_error(p, p_prev, p, weight)) < 1e-7
    assert float(self_calibration_error(p, p, weight)) < 1e-7
    # The converse fails: a self-calibrated report that ignores r_{k−1}.
    flat, prev = jnp.full(4, 0.5), jnp.array([0.2, 0.8, 0.2, 0.8])
    assert float(self_calibration_error(flat, prev)) < 1e-7
    assert float(conversation_calibration_error(flat, prev, prev)) == pytest.approx(0.3, abs=1e-6)
    # ECE <= CCE always (the joint cells refine the bins).
    keys = jax.random.split(jax.random.key(5), 3)
    rp, rq, ry = (jax.random.uniform(k, (1000,)) for k in keys)
    assert float(self_calibration_error(rp, ry)) <= float(
        conversation_calibration_error(rp, rq, ry)
    )


def test_conversation_calibrated_samples_are_self_calibrated():
    key_q, key_y = jax.random.split(jax.random.key(6))
    q = synthetic_posteriors(key_q, 3, 2 * 8192, 2)
    onehot = jax.nn.one_hot(jax.random.categorical(key_y, jnp.log(q)), 2)
    log_r = bias_conversation(jnp.log(q), 2.0, 0.5)
    fit, held = slice(0, 8192), slice(8192, None)
    messages, _ = treatment_messages(log_r[:, fit], onehot[:, fit], log_r[:, held])
    calibrated = round_metrics(messages["conversation"], onehot[:, held])
    raw = round_metrics(messages["raw"], onehot[:, held])
    assert max(calibrated["ece"]) < 0.035 and max(calibrated["cce"]) < 0.06
    assert min(raw["ece"]) > 0.08
