"""Exact theory curves for chained parity (Narrowing the Collaboration Gap, Probably, §3).

Two agents alternate as speakers (Bob, who sees the odd 1-based bits, speaks in rounds 1, 3, …;
Alice in rounds 2, 4, …). In round k the speaker forms its posterior ``q_k = E[p* | own bits,
messages 1..k-1]`` and sends either ``q_k`` itself (probability exchange) or ``1{q_k >= 1/2}``
(action exchange). Round 0 is the prior (``q_0 = 1/2``). For every round k = 0..K we report

* ``prob_excess_mse[k]``  E[(p* − q_k)²] under probability exchange  (= Σ_{j>k} α_j²);
* ``action_excess_mse[k]`` the speaker's E[(p* − q̃_k)²] under action exchange;
* ``prob_label_mse[k]``   E[(Y − q_k)²] under probability exchange (= 1/4 − Σα² + excess);
* ``prob_accuracy[k]``, ``action_accuracy[k]`` P(Y = 1{q_k >= 1/2}) (ties decide 1);
* ``bayes_accuracy``       P(Y = 1{p* >= 1/2}), the full-information ceiling;
* ``action_bayes_disagreement`` P(action decision ≠ Bayes decision) from round 1 on.

:func:`parity_curves` computes them in closed form; :func:`parity_curves_enumerated` by exact
enumeration over sign patterns with brute-force Bayesian conditioning. Tests require agreement
to 1e-9.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from jaxcollab.envs.parity import validate_alphas

KEYS = (
    "prob_excess_mse",
    "action_excess_mse",
    "prob_label_mse",
    "prob_accuracy",
    "action_accuracy",
)


def _check_rounds(n_rounds: int) -> int:
    if int(n_rounds) != n_rounds or n_rounds < 1:
        raise ValueError(f"n_rounds must be a positive integer, got {n_rounds!r}")
    return int(n_rounds)


def sum_distribution(alphas: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Exact distribution of ``X = Σ_j α_j S_j`` with S_j i.i.d. uniform ±1.

    (The prefix parities S_j of i.i.d. uniform bits are themselves i.i.d. uniform signs.)
    Equal sums are merged (to 1e-12), so many equal coefficients stay cheap.

    Returns:
        ``(values, probs)``: float64 arrays of the support and its probabilities.
    """
    dist = {0.0: 1.0}
    for a in np.asarray(alphas, np.float64):
        nxt: dict[float, float] = {}
        for x, p in dist.items():
            for y in (round(x + a, 12), round(x - a, 12)):
                nxt[y] = nxt.get(y, 0.0) + p / 2
        dist = nxt
    values = np.fromiter(dist.keys(), np.float64)
    return values, np.fromiter(dist.values(), np.float64)


def _mean_abs(alphas: Sequence[float]) -> float:
    values, probs = sum_distribution(alphas)
    return float(probs @ np.abs(values))


def _bayes_disagreement(alphas: np.ndarray) -> float:
    """P(sign of the full sum ≠ S_1), decisions with ties going to 1: P(1{X >= 0} ≠ 1{S_1 = +1})."""
    rest_values, rest_probs = sum_distribution(alphas[1:])
    a1 = alphas[0]
    # S_1 = +1 disagrees when a1 + R < 0; S_1 = -1 disagrees when -a1 + R >= 0.
    plus = rest_probs[rest_values + a1 < -1e-12].sum()
    minus = rest_probs[rest_values - a1 >= -1e-12].sum()
    return float((plus + minus) / 2)


def parity_curves(alphas: Sequence[float], n_rounds: int) -> dict:
    """Closed-form theory curves for rounds k = 0..K (see the module docstring).

    Args:
        alphas: coefficients α_1..α_n (see :func:`jaxcollab.envs.parity.make_alphas`).
        n_rounds: K >= 1.

    Returns:
        dict with ``alphas`` (list), ``rounds`` ``[0..K]``, the per-round lists in :data:`KEYS`,
        ``bayes_accuracy`` and ``action_bayes_disagreement`` (floats).

    Raises:
        ValueError: invalid α (negative, Σ > 0.5), ``n_rounds < 1``, or α_1 <= α_2 with
            K >= 2 — the action-exchange closed form needs α_1 > α_2 so every message equals
            1{S_1 = +1} (paper, Theorem 3.3); use :func:`parity_curves_enumerated` for such α.
    """
    a = validate_alphas(alphas)
    K = _check_rounds(n_rounds)
    if K >= 2 and len(a) >= 2 and not a[0] > a[1]:
        raise ValueError(
            f"action-exchange closed form needs alpha_1 > alpha_2, got alpha_1={a[0]}, "
            f"alpha_2={a[1]}; use the enumeration (method=enumeration) instead"
        )
    sq = a**2
    total = sq.sum()
    tail = lambda k: float(sq[k:].sum())  # Σ_{j>k} α_j²  # noqa: E731
    rounds = list(range(K + 1))
    prob_excess = [tail(k) for k in rounds]
    # Bob (odd rounds) only ever knows S_1; Alice (even rounds) knows S_1 and S_2.
    action_excess = [tail(0)] + [tail(1) if k % 2 else tail(2) for k in rounds[1:]]
    return {
        "alphas": a.tolist(),
        "rounds": rounds,
        "prob_excess_mse": prob_excess,
        "action_excess_mse": action_excess,
        "prob_label_mse": [0.25 - total + e for e in prob_excess],
        "prob_accuracy": [0.5 + _mean_abs(a[:k]) if k else 0.5 for k in rounds],
        "action_accuracy": [0.5] + [0.5 + float(a[0])] * K,
        "bayes_accuracy": 0.5 + _mean_abs(a),
        "action_bayes_disagreement": _bayes_disagreement(a),
    }


def _group_mean(keys: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Mean of ``values`` over rows with equal ``keys`` (uniform prior over patterns)."""
    _, inverse = np.unique(keys, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    sums = np.bincount(inverse, weights=values)
    counts = np.bincount(inverse)
    return (sums / counts)[inverse]


def parity_curves_enumerated(alphas: Sequence[float], n_rounds: int, max_bits: int = 18) -> dict:
    """The same curves as :func:`parity_curves` by exact enumeration of sign patterns.

    Each speaker's posterior is the mean of p* over all patterns consistent with its own bits
    and the messages so far (brute-force Bayes, no closed form used). If ``n > max_bits`` only the
    first ``m = min(n, K + 2)`` bits are enumerated: later prefix parities involve bits no agent
    can have learnt by round K, so they add their energy Σ_{j>m} α_j² to every squared error and
    leave decisions unchanged. The Bayes accuracy is then exact only when the truncated sum
    always dominates the tail (true for the seed α); otherwise it is NaN.

    Raises:
        ValueError: invalid α or ``n_rounds`` (as :func:`parity_curves`).
    """
    a = validate_alphas(alphas)
    K = _check_rounds(n_rounds)
    m = len(a) if len(a) <= max_bits else min(len(a), K + 2)
    head, tail = a[:m], float((a[m:] ** 2).sum())
    signs = 1 - 2 * ((np.arange(2**m)[:, None] >> np.arange(m)) & 1)  # [P, m] in ±1
    x = np.cumprod(signs, axis=1) @ head
    pstar = 0.5 + x
    owner = np.arange(m) % 2  # 0-based even index = 1-based odd bit = Bob's
    out = {"alphas": a.tolist(), "rounds": list(range(K + 1))}
    for protocol in ("prob", "action"):
        messages, excess, label_mse, accuracy = [], [], [], []
        q = np.full_like(pstar, 0.5)
        for k in range(K + 1):
            if k:
                own = signs[:, owner == (k - 1) % 2]
                keys = np.column_stack([own, *messages]) if messages else own
                q = _group_mean(keys, pstar)
                sent = q >= 0.5 - 1e-12 if protocol == "action" else q
                messages.append(np.round(np.asarray(sent, np.float64) * 1e9))
            decision = q >= 0.5 - 1e-12
            excess.append(float(np.mean((pstar - q) ** 2)) + tail)
            label_mse.append(float(np.mean(pstar * (1 - pstar) + (pstar - q) ** 2)))
            accuracy.append(float(np.mean(np.where(decision, pstar, 1 - pstar))))
        out[f"{protocol}_excess_mse"] = excess
        out[f"{protocol}_accuracy"] = accuracy
        if protocol == "prob":
            out["prob_label_mse"] = label_mse
        else:
            action_decision = decision
    exact_sign = m == len(a) or np.min(np.abs(x)) > a[m:].sum()
    bayes = x >= -1e-12
    out["bayes_accuracy"] = (
        float(np.mean(np.where(bayes, pstar, 1 - pstar))) if exact_sign else float("nan")
    )
    out["action_bayes_disagreement"] = (
        float(np.mean(action_decision != bayes)) if exact_sign and K >= 1 else float("nan")
    )
    return out
