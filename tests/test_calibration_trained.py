"""Biased messages for the round trainer and post-hoc calibration of a run (spec §3, §4)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcollab.collab.biased_rounds import bias_messages
from jaxcollab.collab.ideal import sampled_reports
from jaxcollab.collab.messages import MessageCodec
from jaxcollab.collab.posthoc import calibrate_run, load_messages, naive_rare_action
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


def test_calibrate_run_recovers_bias_from_quantised_messages():
    # Ideal-decoder parity speakers with β = 1, γ = 0.5; reports sent as two-digit messages.
    # [3, 8192, 2] fits, the shape test_calibration.py compiles too.
    reports = sampled_reports(jax.random.key(8), make_alphas(), 3, 1.0, 0.5, 2 * 8192)
    messages = np.stack([CODEC.decode(CODEC.encode(jnp.exp(r))) for r in reports.log_r])
    labels = np.asarray(reports.targets[0, :, 1], np.int32)
    pstar = np.asarray(reports.truth[0])
    scores, weights = calibrate_run(messages, labels, np.stack([1 - pstar, pstar], 1))
    np.testing.assert_allclose(weights["conversation"]["weights"][1:], [[1.0, -0.5]] * 2,
                               atol=0.1)
    raw, conv = scores["raw"]["mse_vs_pstar"], scores["conversation"]["mse_vs_pstar"]
    assert conv[2] < 0.002 < 0.006 < raw[2]  # ideal: conversation .00042, raw .00882
    assert scores["conversation"]["ece"][2] < scores["raw"]["ece"][2]


def test_load_messages_names_missing_round(tmp_path):
    with pytest.raises(FileNotFoundError, match="round 1 has not finished"):
        load_messages(tmp_path, CODEC, 2)


def test_naive_rare_action_baseline():
    probs = np.array([[0.1, 0.2, 0.6, 0.1], [0.7, 0.1, 0.1, 0.1], [0.2, 0.2, 0.1, 0.5]])
    got = naive_rare_action(probs, "drul")
    np.testing.assert_allclose(got, [[0.5, 0.5, 0, 0], [0.7, 0.1, 0.1, 0.1], [0.5, 0.5, 0, 0]])
    with pytest.raises(ValueError, match="'x'"):
        naive_rare_action(probs, "drul", rare="x")


@pytest.mark.slow
@pytest.mark.parametrize("experiment", ["parity_calibration", "maze_calibration"])
def test_train_calibration_end_to_end_tiny(tmp_path, cli, experiment):
    import json

    cli("train/calibration.py", f"experiment={experiment}", "preset=cpu",
        "task.n_examples=20000", "train.steps=20", "train.warmup_steps=5", "train.eval_every=10",
        "train.val_examples=256", "task.n_rounds=3", f"out_dir={tmp_path}")
    results = json.loads((tmp_path / "results.json").read_text())
    expected = {"unbiased", "speaker_posterior", "biased_raw", "self", "conversation"}
    if experiment == "maze_calibration":
        expected.add("naive_rare_action")
    assert set(results["treatments"]) == expected
    assert results["rounds"] == [1, 2, 3]
    assert len(results["calibrator_weights"]["conversation"]["weights"]) == 3
    # round 1 is trained once: the biased run biases the unbiased run's round-1 predictions
    assert results["runs"]["biased"][0]["shared_from"].endswith("unbiased/round_1")
    assert results["runs"]["biased"][0]["test_mse_vs_pstar"] == \
        results["runs"]["unbiased"][0]["test_mse_vs_pstar"]
    for name in ("mse.png", "reliability.png", "conversation_cells.png"):
        assert (tmp_path / name).stat().st_size > 10_000
