"""Ideal-decoder analysis on parity (Collaboration Gap paper, Alg. 1): reference table, weights,
CLI."""

import json
from pathlib import Path

import jax
import numpy as np
import pytest

from jaxcollab.agents.parity.ideal import exact_reports, message_mse, sampled_reports
from jaxcollab.collab.calibration import treatment_messages
from jaxcollab.envs.parity import make_alphas

ROOT = Path(__file__).resolve().parent.parent
#: Spec §4 table, seed α, rounds 1..5, as printed (decimals matter: match to printed digits).
TABLE = {
    (1.0, 0.5, "raw"): (".03292", ".01661", ".00882", ".00854", ".00935"),
    (1.0, 0.5, "self"): (".03292", ".01260", ".00225", ".00046", ".00011"),
    (1.0, 0.5, "conversation"): (".03292", ".01042", ".00042", ".000015", ".000015"),
    (2.0, 0.5, "raw"): (".05389", ".04556", ".02951", ".03031", ".03359"),
}


def assert_printed(values, printed):
    rounded = [round(float(v), len(p) - 1) for v, p in zip(values, printed, strict=True)]
    assert rounded == [float(p) for p in printed], (list(values), printed)


@pytest.fixture(scope="module")
def beta1():
    reports = exact_reports(make_alphas(), 5, 1.0, 0.5)
    messages, cals = treatment_messages(reports.log_r, reports.targets, reports.log_r,
                                        reports.weight)
    return reports, messages, cals


@pytest.mark.parametrize("treatment", ["raw", "self", "conversation"])
def test_spec_table_beta1_gamma_half(beta1, treatment):
    reports, messages, _ = beta1
    assert_printed(message_mse(reports, messages[treatment]), TABLE[(1.0, 0.5, treatment)])


def test_conversation_weights_recovered_and_unbiased_curve(beta1):
    reports, messages, cals = beta1
    np.testing.assert_allclose(cals["conversation"].weights[1:], [[1.0, -0.5]] * 4, atol=2e-6)
    theory = [(make_alphas()[k:] ** 2).sum() for k in range(1, 6)]
    np.testing.assert_allclose(message_mse(reports, messages["conversation"]), theory, rtol=1e-5)


def test_strong_anchoring_fit_converges_to_the_exact_inverse():
    # Issue 17.4: `eval/calibration.py bias.beta=1 bias.gamma=5` stopped at (0.0068, 0.0014) in
    # round 4; the exact inverse (1, −5) leaves only the unrevealed tail Σ_{j>4} α_j².
    from jaxcollab.agents.parity.ideal_calibration import ideal_calibration as analyse

    results, _ = analyse(compose(["bias.beta=1", "bias.gamma=5"]))
    np.testing.assert_allclose(results["conversation_weights"][3], [1.0, -5.0], atol=1e-4)
    tail = float((make_alphas()[4:] ** 2).sum())
    np.testing.assert_allclose(results["conversation_mse"][3], tail, rtol=1e-3)
    assert tail == pytest.approx(1.5385e-5, rel=1e-3)
    assert all(results["converged"]["conversation"]) and all(results["converged"]["self"])


def test_unconverged_fit_is_flagged():
    # Two Newton steps from zero cannot fit γ = 5 anchoring: the gradient check says so.
    reports = exact_reports(make_alphas(), 4, 1.0, 5.0)
    _, cals = treatment_messages(reports.log_r, reports.targets, reports.log_r, reports.weight,
                                 n_steps=1)
    assert not bool(np.all(cals["conversation"].converged))
    assert float(np.max(cals["conversation"].grad_norm)) > 1e-4


def test_reports_depend_only_on_revealed_parities():
    # Patterns are ordered with S_5 fastest: pairs differing only in S_5 share rounds 1..4.
    reports = exact_reports(make_alphas(), 5, 2.0, 0.5)
    log_r = np.asarray(reports.log_r)
    np.testing.assert_array_equal(log_r[:4, 0::2], log_r[:4, 1::2])
    assert not np.array_equal(log_r[4, 0::2], log_r[4, 1::2])


def test_sampled_reports_agree_with_exact_and_are_deterministic():
    alphas = make_alphas()
    a = sampled_reports(jax.random.key(7), alphas, 5, 2.0, 0.5, 20_000)
    b = sampled_reports(jax.random.key(7), alphas, 5, 2.0, 0.5, 20_000)
    assert np.array_equal(a.log_r, b.log_r) and np.array_equal(a.targets, b.targets)
    exact_set = exact_reports(alphas, 5, 2.0, 0.5)
    exact = message_mse(exact_set, exact_set.log_r)
    np.testing.assert_allclose(message_mse(a, a.log_r), exact, rtol=0.05)


def test_bad_rounds_raise():
    with pytest.raises(ValueError, match="n_rounds=0"):
        exact_reports(make_alphas(), 0, 1.0, 0.5)


def compose(overrides):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base=None):
        return hydra_compose(config_name="calibration", overrides=overrides)


def check_beta2_run(out: Path):
    results = json.loads((out / "results.json").read_text())
    assert results["rounds"] == [1, 2, 3, 4, 5]
    assert_printed(results["raw_mse"], TABLE[(2.0, 0.5, "raw")])
    assert_printed(results["conversation_mse"], TABLE[(1.0, 0.5, "conversation")])
    assert results["conversation_weights"][0][1] is None
    np.testing.assert_allclose(results["conversation_weights"][1:], [[0.5, -0.25]] * 4, atol=2e-6)
    assert results["expected_conversation_weights"] == [0.5, -0.25]
    assert all(e["match"] for e in results["reference_check"]["raw"])
    for name in ("mse.png", "reliability.png", "conversation_cells.png"):
        assert (out / name).stat().st_size > 10_000


def test_analysis_beta2_writes_results_and_plots(tmp_path, beta1):
    from eval.calibration import run

    run(compose(["task=parity", "decoder=ideal", "bias.beta=2", "bias.gamma=0.5",
                 f"out_dir={tmp_path}"]))
    check_beta2_run(tmp_path)
