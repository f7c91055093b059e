"""Biased messages for the round trainer and post-hoc calibration of a run (Narrowing
the Collaboration Gap, Probably, §5 R2)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcollab.agents.maze.task import naive_rare_action
from jaxcollab.agents.parity.ideal import sampled_reports
from jaxcollab.collab.biased_rounds import bias_messages
from jaxcollab.collab.conversations import posthoc_messages, score
from jaxcollab.collab.messages import MessageCodec
from jaxcollab.envs.parity import VOCAB, make_alphas

CODEC = MessageCodec("probability", VOCAB, "01", 2)


def tokens(*texts):
    return np.stack([np.array([VOCAB.index(c) for c in t], np.uint8) for t in texts])


def test_bias_messages_hand_computed():
    # Round 1, β = 2: 0.70 → 0.49 / 0.58 = 0.8448 → "84"; 0.50 stays "50".
    assert CODEC.serialise(bias_messages(CODEC, tokens("70", "50"), None, 2.0, 0.0)) == ["84", "50"]
    # β = 1, γ = 0.5, previous report 0.60: r ∝ 0.7 · sqrt(0.6) → 0.7407 → "74".
    got = bias_messages(CODEC, tokens("70"), tokens("60"), 1.0, 0.5)
    assert CODEC.serialise(got) == ["74"]
    # No bias leaves messages unchanged.
    same = tokens("03", "97", "41")
    assert np.array_equal(bias_messages(CODEC, same, tokens("10", "20", "90"), 1.0, 0.0), same)


def test_bias_messages_reject_action_codec():
    with pytest.raises(ValueError, match="kind='action'"):
        bias_messages(MessageCodec("action", VOCAB, "01"), tokens("1"), None, 2.0, 0.5)


def test_posthoc_calibration_recovers_bias_from_quantised_messages():
    # Ideal-decoder parity speakers with β = 1, γ = 0.5; reports sent as two-digit messages.
    reports = sampled_reports(jax.random.key(8), make_alphas(), 3, 1.0, 0.5, 2 * 8192)
    messages = np.stack([CODEC.decode(CODEC.encode(jnp.exp(r))) for r in reports.log_r])
    labels = np.asarray(reports.targets[0, :, 1], np.int32)
    pstar = np.asarray(reports.truth[0])
    target = np.stack([1 - pstar, pstar], 1)
    raw = score(messages, labels, target, 10)
    conv = score(posthoc_messages("conversation", messages, labels), labels, target, 10)
    assert conv["mse_vs_pstar"][2] < 0.002 < 0.006 < raw["mse_vs_pstar"][2]  # ideal .00042, .00882
    assert conv["ece"][2] < raw["ece"][2]


def test_naive_rare_action_baseline():
    probs = np.array([[0.1, 0.2, 0.6, 0.1], [0.7, 0.1, 0.1, 0.1], [0.2, 0.2, 0.1, 0.5]])
    got = naive_rare_action(probs, "drul")
    np.testing.assert_allclose(got, [[0.5, 0.5, 0, 0], [0.7, 0.1, 0.1, 0.1], [0.5, 0.5, 0, 0]])
    with pytest.raises(ValueError, match="'x'"):
        naive_rare_action(probs, "drul", rare="x")
