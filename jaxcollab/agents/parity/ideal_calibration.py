"""The ideal-decoder calibration analysis on parity (Narrowing the Collaboration Gap, Probably,
Equation 1, Algorithm 1; ``eval/calibration.py`` through :attr:`Theory.ideal
<jaxcollab.core.family.Theory>`): the round-k speaker is an ideal decoder
(:mod:`jaxcollab.agents.parity.ideal`) that sends the biased report ``r_k``; self and
conversation calibrators are fitted per round, exactly or from samples."""

from __future__ import annotations

from collections.abc import Mapping

import jax
import numpy as np

from jaxcollab.agents.parity.ideal import exact_reports, message_mse, sampled_reports
from jaxcollab.collab.calibration import TREATMENTS, treatment_messages
from jaxcollab.collab.metrics import round_metrics
from jaxcollab.envs.parity import make_alphas

#: Spec §4 reference table (seed α, ideal decoders), rounds 1..5, as printed.
REFERENCE = {
    (1.0, 0.5): {
        "raw": (".03292", ".01661", ".00882", ".00854", ".00935"),
        "self": (".03292", ".01260", ".00225", ".00046", ".00011"),
        "conversation": (".03292", ".01042", ".00042", ".000015", ".000015"),
    },
    (2.0, 0.5): {"raw": (".05389", ".04556", ".02951", ".03031", ".03359")},
}


def reference_check(alphas: np.ndarray, cfg: Mapping, beta: float, gamma: float, results):
    """Each printed ``REFERENCE`` entry beside the computed value and whether it rounds to the
    printed digits, for the paper's seed α (App. E), ``fit=exact``, at least 5 rounds and a
    (β, γ) of the table; else ``None``."""
    seed = make_alphas()
    same_alpha = alphas.shape == seed.shape and np.allclose(alphas, seed, rtol=0, atol=1e-12)
    table = REFERENCE.get((beta, gamma))
    if not (same_alpha and cfg.fit == "exact" and table and int(cfg.n_rounds) >= 5):
        return None
    check = {}
    for treatment, printed in table.items():
        computed = results[f"{treatment}_mse"][:5]
        check[treatment] = [
            {"printed": p, "computed": c, "match": round(c, len(p) - 1) == float(p)}
            for p, c in zip(printed, computed, strict=True)
        ]
    return check


def ideal_calibration(cfg: Mapping) -> tuple[dict, dict]:
    """The analysis of a checked ``eval/calibration.py`` config (schema
    :class:`~jaxcollab.io.schema.CalibrationEval`): returns ``(results, metrics)``, the
    ``results.json`` keys that script documents and the per-treatment
    :func:`~jaxcollab.collab.metrics.round_metrics`; nothing written."""
    beta, gamma = float(cfg.bias.beta), float(cfg.bias.gamma)
    alphas = make_alphas(list(cfg.task.alphas), int(cfg.task.n_bits), cfg.task.alpha_sum)
    k = int(cfg.n_rounds)
    if cfg.fit == "exact":
        evals = fits = exact_reports(alphas, k, beta, gamma)
    else:
        key_fit, key_eval = jax.random.split(jax.random.key(int(cfg.seed)))
        fits = sampled_reports(key_fit, alphas, k, beta, gamma, int(cfg.n_fit))
        evals = sampled_reports(key_eval, alphas, k, beta, gamma, int(cfg.n_eval))
    messages, cals = treatment_messages(
        fits.log_r, fits.targets, evals.log_r, fits.weight, int(cfg.newton_steps)
    )
    conv_w = np.asarray(cals["conversation"].weights, float).tolist()
    conv_w[0][1] = None  # log r_0 is constant: its weight is unidentifiable in round 1
    results = {
        "rounds": list(range(1, k + 1)),
        "beta": beta,
        "gamma": gamma,
        "unbiased_mse": [float((alphas[j:] ** 2).sum()) for j in range(1, k + 1)],
        "conversation_weights": conv_w,
        "expected_conversation_weights": [1.0 / beta, -gamma / beta],
        "self_weights": np.asarray(cals["self"].weights, float).tolist(),
        "self_bias": np.asarray(cals["self"].bias[:, 1], float).tolist(),
        "conversation_bias": np.asarray(cals["conversation"].bias[:, 1], float).tolist(),
        "converged": {t: np.asarray(c.converged).tolist() for t, c in cals.items()},
    }
    metrics = {}
    for t in TREATMENTS:
        results[f"{t}_mse"] = np.asarray(message_mse(evals, messages[t]), float).tolist()
        metrics[t] = round_metrics(messages[t], evals.targets, evals.weight, int(cfg.n_bins))
        results[f"{t}_ece"] = metrics[t]["ece"]
        results[f"{t}_cce"] = metrics[t]["cce"]
    results["reference_check"] = reference_check(alphas, cfg, beta, gamma, results)
    return results, metrics
