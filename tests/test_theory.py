"""Exact parity theory against Narrowing the Collaboration Gap, Probably, §3."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from jaxcollab.agents.parity.theory import KEYS, parity_curves, parity_curves_enumerated
from jaxcollab.envs.parity import make_alphas

ROOT = Path(__file__).resolve().parent.parent
SPEC_PROB = [0.0729154, 0.0329154, 0.0104154, 0.000415385, 1.53846e-5, 1.47929e-5]
SPEC_ACTION = [0.0729154, 0.0329154, 0.0104154, 0.0329154, 0.0104154, 0.0329154]
SPEC_LABEL = [0.25, 0.21, 0.1875, 0.1775, 0.1771, 0.177099]


def assert_curves_equal(a, b, tol=1e-9):
    for key in KEYS:
        np.testing.assert_allclose(a[key], b[key], atol=tol, rtol=0, err_msg=key)
    for key in ("bayes_accuracy", "action_bayes_disagreement"):
        assert a[key] == pytest.approx(b[key], abs=tol), key


@pytest.mark.parametrize("method", [parity_curves, parity_curves_enumerated])
def test_seed_alpha_table(method):
    c = method(make_alphas(), 5)
    assert c["rounds"] == [0, 1, 2, 3, 4, 5]
    np.testing.assert_allclose(c["prob_excess_mse"], SPEC_PROB, atol=1e-6, rtol=1e-5)
    np.testing.assert_allclose(c["action_excess_mse"], SPEC_ACTION, atol=1e-6, rtol=1e-5)
    np.testing.assert_allclose(c["prob_label_mse"], SPEC_LABEL, atol=1e-6)
    np.testing.assert_allclose(c["prob_accuracy"], [0.5, 0.7, 0.7, 0.725, 0.725, 0.725], atol=1e-12)
    np.testing.assert_allclose(c["action_accuracy"], [0.5] + [0.7] * 5, atol=1e-12)
    assert c["bayes_accuracy"] == pytest.approx(0.725, abs=1e-12)
    assert c["action_bayes_disagreement"] == pytest.approx(0.25, abs=1e-12)


def test_small_instance_k3():
    a = [0.20, 0.15, 0.10]
    c, e = parity_curves(a, 3), parity_curves_enumerated(a, 3)
    np.testing.assert_allclose(c["prob_excess_mse"], [0.0725, 0.0325, 0.01, 0.0], atol=1e-12)
    assert c["action_bayes_disagreement"] == pytest.approx(0.25, abs=1e-12)
    assert_curves_equal(c, e)


def test_disagreement_exactly_when_s2_s3_oppose_s1():
    """Spec §1: the action decision (S_1) differs from Bayes exactly when S_2 = S_3 = -S_1."""
    a = np.array([0.20, 0.15, 0.10])
    for s in np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1])).T.reshape(-1, 3):
        disagree = np.sign(a @ s) != s[0]
        assert disagree == (s[1] == s[2] == -s[0])


def test_enumeration_equals_closed_form_on_random_alphas():
    rng = np.random.default_rng(0)
    for n, k in [(4, 3), (8, 5), (11, 6), (12, 4)]:
        a = np.sort(rng.dirichlet(np.ones(n)) * rng.uniform(0.1, 0.5))[::-1]
        assert_curves_equal(parity_curves(a, k), parity_curves_enumerated(a, k))
        # Truncated enumeration (first K + 2 bits + tail energy) agrees with the full one.
        full, cut = parity_curves_enumerated(a, k), parity_curves_enumerated(a, k, max_bits=2)
        for key in KEYS:
            np.testing.assert_allclose(full[key], cut[key], atol=1e-9, err_msg=key)


def test_invalid_inputs_are_named():
    with pytest.raises(ValueError, match="alpha_1=0.1, alpha_2=0.15"):
        parity_curves([0.1, 0.15, 0.1], 3)
    with pytest.raises(ValueError, match="alpha_2=-0.05"):
        parity_curves([0.2, -0.05], 2)
    with pytest.raises(ValueError, match="0.6"):
        parity_curves_enumerated([0.3, 0.3], 2)
    with pytest.raises(ValueError, match="n_rounds"):
        parity_curves([0.2, 0.1], 0)
    # Enumeration handles alpha_1 <= alpha_2, where action messages carry S_2's information.
    e = parity_curves_enumerated([0.1, 0.15, 0.1], 3)
    assert e["action_excess_mse"][0] == pytest.approx(0.0425)


def run_theory(tmp_path, *overrides):
    out = tmp_path / "run"
    cmd = [sys.executable, str(ROOT / "eval" / "theory.py"), "task=parity", f"out_dir={out}"]
    subprocess.run([*cmd, *overrides], check=True, capture_output=True, cwd=tmp_path)
    return json.loads((out / "results.json").read_text()), out


@pytest.mark.full  # long: the default tier's time (issue 36)
def test_eval_theory_writes_spec_table(tmp_path):
    results, out = run_theory(tmp_path)
    assert (out / "theory.png").stat().st_size > 10_000
    assert results["rounds"] == [0, 1, 2, 3, 4, 5]
    np.testing.assert_allclose(results["prob_excess_mse"], SPEC_PROB, atol=1e-6)
    np.testing.assert_allclose(results["action_excess_mse"], SPEC_ACTION, atol=1e-6)
    np.testing.assert_allclose(results["prob_accuracy"], [0.5, 0.7, 0.7, 0.725, 0.725, 0.725])
    assert results["bayes_accuracy"] == pytest.approx(0.725)
    assert len(results["alphas"]) == 30


@pytest.mark.full  # long for the default tier (measured idle)
def test_eval_theory_alpha_override(tmp_path):
    results, _ = run_theory(
        tmp_path, "task.alphas=[0.2,0.15,0.1]", "task.n_bits=3", "task.n_rounds=3"
    )
    assert results["alphas"] == [0.2, 0.15, 0.1]
    np.testing.assert_allclose(results["prob_excess_mse"], [0.0725, 0.0325, 0.01, 0.0], atol=1e-12)
