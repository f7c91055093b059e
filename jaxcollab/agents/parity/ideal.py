"""Ideal-decoder calibration analysis on chained parity (Narrowing the Collaboration Gap, Probably,
§3, Equation 1, Algorithm 1).

*Ideal decoder*: the round-k speaker (Bob in odd rounds, Alice in even rounds, alternate split)
recovers ``S_1..S_{k−1}`` exactly from the history of earlier messages — every treatment's
messages are injective in it — and adds its own bit ``b_k``, so its true posterior is
``q_k = 1/2 + Σ_{j≤k} α_j S_j`` in every treatment. It then sends the biased report
``r_k`` (:mod:`jaxcollab.collab.bias`, anchored on the previous *report* ``r_{k−1}``, with a
uniform ``r_0``). The treatments differ only in the round-k message that is scored:

* ``raw`` — ``r_k``;
* ``self`` — ``f_k(r_k)``, the round-k self-calibrator;
* ``conversation`` — ``g_k(r_k, r_{k−1})``, the round-k conversation calibrator.

The score is the squared error vs ``p*`` of the round-k message. This interpretation
reproduces every entry of our reference table (``eval/calibration.py``) to the printed digits;
anchoring on the
*calibrated* previous message instead gives ``self`` k = 3 ≈ 0.00166 (table: .00225).

Two ways to evaluate it:

* :func:`exact_reports` — exact enumeration over the 2^K sign patterns of ``S_1..S_K``
  (uniform and independent), calibrators fitted at the population optimum with soft targets
  ``E[Y | S_1..S_k] = q_k``; the error splits as ``Σ_{j>k} α_j² + E[(q_k − m_k)²]``;
* :func:`sampled_reports` — drawn examples with true labels ``Y`` (fit and evaluation sets).

:func:`conversation_mse` is the *conversation* reading of the paper's R2 (each treatment its own
conversation): the round-k speaker anchors on the previous *sent* message, and a calibrated
treatment sends the calibrated message, which the next speaker reads and anchors on.
"""

from __future__ import annotations

import itertools

import chex
import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.collab.bias import bias_conversation, bias_report, binary_log_probs
from jaxcollab.collab.calibration import apply_calibrator, features, fit_calibrator
from jaxcollab.envs.parity import pstar_from_bits, sample_parity, split_masks, validate_alphas


@chex.dataclass(frozen=True)
class ReportSet:
    """Biased reports of a population (exact) or a sample of parity examples.

    Attributes:
        log_r: float ``[K, N, 2]`` log reports of rounds 1..K.
        targets: float ``[K, N, 2]`` calibration targets — soft ``(1 − q_k, q_k)`` (exact) or
            the one-hot label (sampled).
        weight: float ``[N]`` example probabilities (exact) or ones (sampled).
        q: float ``[K, N]`` the speakers' true posteriors ``q_k``.
        truth: float ``[K, N]`` what round-k messages are scored against: ``E[p* | S_1..S_k]
            = q_k`` (exact) or the drawn ``p*`` (sampled).
        floor_mse: float ``[K]`` squared error not visible in ``truth``: ``Σ_{j>k} α_j²``
            (exact) or zeros (sampled).
    """

    log_r: jax.Array
    targets: jax.Array
    weight: jax.Array
    q: jax.Array
    truth: jax.Array
    floor_mse: jax.Array


def _prefix_posteriors(prefix_signs: jax.Array, alphas: jax.Array, n_rounds: int) -> jax.Array:
    """``q_k = 1/2 + Σ_{j≤k} α_j S_j`` for k = 1..K: signs ``[N, ≥K]`` → ``[K, N]``."""
    k = n_rounds
    return (0.5 + jnp.cumsum(prefix_signs[:, :k] * alphas[:k], axis=1)).T


def _reports(q: jax.Array, beta, gamma) -> jax.Array:
    return bias_conversation(binary_log_probs(q, eps=1e-7), beta, gamma)


def check_rounds(alphas: np.ndarray, n_rounds: int) -> int:
    """Validate ``n_rounds`` against α. Raises ValueError naming the bad value."""
    if int(n_rounds) != n_rounds or not 1 <= n_rounds <= len(alphas):
        raise ValueError(f"n_rounds={n_rounds!r} must be an integer in [1, n_bits={len(alphas)}]")
    return int(n_rounds)


def exact_reports(alphas, n_rounds: int, beta: float, gamma: float) -> ReportSet:
    """All ``2^K`` sign patterns of ``S_1..S_K`` with their reports (see the module docstring).

    Raises:
        ValueError: invalid α or ``n_rounds`` (K ≤ 16 keeps the enumeration small).
    """
    a = validate_alphas(alphas)
    k = check_rounds(a, n_rounds)
    if k > 16:
        raise ValueError(f"exact enumeration needs n_rounds <= 16, got {k}")
    signs = jnp.asarray(list(itertools.product((1.0, -1.0), repeat=k)), jnp.float32)
    q = _prefix_posteriors(signs, jnp.asarray(a, jnp.float32), k)
    tail = np.cumsum((a**2)[::-1])[::-1]  # tail[j] = Σ_{i≥j} α_i² (0-based)
    floor = np.append(tail[1:], 0.0)[:k]
    return ReportSet(
        log_r=_reports(q, beta, gamma),
        targets=jnp.stack([1.0 - q, q], axis=-1),
        weight=jnp.full(signs.shape[0], 1.0 / signs.shape[0], jnp.float32),
        q=q,
        truth=q,
        floor_mse=jnp.asarray(floor, jnp.float32),
    )


def sampled_reports(key, alphas, n_rounds: int, beta: float, gamma: float, n: int) -> ReportSet:
    """``n`` drawn parity examples with their reports and true labels ``Y``.

    Raises:
        ValueError: invalid α or ``n_rounds``, or ``n < 1``.
    """
    a = validate_alphas(alphas)
    k = check_rounds(a, n_rounds)
    if n < 1:
        raise ValueError(f"the number of sampled examples must be >= 1, got {n}")
    alphas_j = jnp.asarray(a, jnp.float32)
    batch = sample_parity(key, alphas_j, jnp.asarray(split_masks(len(a))), int(n))
    signs = jnp.cumprod(2.0 * batch.bits - 1.0, axis=1)
    q = _prefix_posteriors(signs, alphas_j, k)
    onehot = jax.nn.one_hot(batch.label, 2, dtype=jnp.float32)
    return ReportSet(
        log_r=_reports(q, beta, gamma),
        targets=jnp.broadcast_to(onehot, (k, n, 2)),
        weight=jnp.ones(n, jnp.float32),
        q=q,
        truth=jnp.broadcast_to(pstar_from_bits(batch.bits, alphas_j), (k, n)),
        floor_mse=jnp.zeros(k, jnp.float32),
    )


def message_mse(reports: ReportSet, log_m: jax.Array) -> jax.Array:
    """Squared error vs ``p*`` of the round-k messages ``log_m`` ``[K, N, 2]`` → ``[K]``.

    For exact sets this is ``Σ_{j>k} α_j² + E[(q_k − m_k)²]`` (the cross term vanishes because
    ``m_k`` depends on ``S_1..S_k`` only); for sampled sets the mean over the drawn ``p*``.
    """
    err = (reports.truth - jnp.exp(log_m[..., 1])) ** 2
    return err @ reports.weight / reports.weight.sum() + reports.floor_mse


def conversation_mse(alphas, n_rounds: int, beta: float, gamma: float, kind: str | None):
    """Exact squared error vs ``p*`` ``[K]`` of the messages sent in a feed-forward conversation
    of ideal decoders (module docstring), over the ``2^K`` sign patterns.

    Round k sends ``m_k = g_k(r_k, m_{k−1})`` with ``r_k`` the biased report anchored on
    ``m_{k−1}`` (uniform ``m_0``) and ``g_k`` the round-k calibrator of ``kind`` (``"self"``,
    ``"conversation"``) fitted at the population optimum, or ``m_k = r_k`` for ``kind=None``.
    The conversation calibrator inverts the bias exactly, so its curve is the unbiased
    ``Σ_{j>k} α_j²``; ``kind=None`` equals :func:`exact_reports`' raw reports.

    Raises:
        ValueError: invalid α or ``n_rounds``, or an unknown ``kind``.
    """
    reports = exact_reports(alphas, n_rounds, beta, gamma)
    log_q = binary_log_probs(reports.q, eps=1e-7)
    sent = [jnp.full_like(log_q[0], -jnp.log(2.0))]
    for k in range(log_q.shape[0]):
        log_r = bias_report(log_q[k], sent[-1], beta, gamma)
        if kind is not None:
            feats = features(kind, log_r, sent[-1])
            log_r = apply_calibrator(fit_calibrator(feats, reports.targets[k], reports.weight),
                                     feats)
        sent.append(log_r)
    return message_mse(reports, jnp.stack(sent[1:]))
