"""Post-hoc calibrators for probability reports (Narrowing the Collaboration Gap, Probably,
Algorithm 1).

A calibrator is one linear layer on log-probability inputs followed by a softmax:

    log c = log_softmax( Σ_f w_f · log x_f + b )          x_f ∈ {r_k} or {r_k, r_{k−1}}

with one scalar weight per input report and a bias vector ``b`` (``b_0 = 0``). For two
classes this is logistic regression on ``logit r_k`` (and ``logit r_{k−1}``).

* **self-calibration** (:data:`SELF`): input ``log r_k`` only;
* **conversation calibration** (:data:`CONVERSATION`): inputs ``log r_k`` and ``log r_{k−1}``.

Under the bias model of :mod:`jaxcollab.collab.bias` the conversation calibrator's population
optimum is exactly ``w = (1/β, −γ/β)``, ``b = 0``: it inverts the report back to ``q_k``.
Calibrators are fitted by minimising the cross-entropy against the true label (one-hot, or a
soft target ``E[Y | …]`` for exact expectations) on held-out data, one per round; the fit is a
jitted damped Newton method (pseudo-inverse steps with a vectorised line search) on columns
whitened by a QR decomposition, so strongly anchored reports (γ = 5: logits in the hundreds,
``log r_k`` and ``log r_{k−1}`` nearly collinear) are as well conditioned as mild ones.
Convergence is checked by the gradient norm of the whitened problem and reported as
:attr:`Calibrator.converged`.

Inputs are centred across classes before fitting; this leaves every softmax unchanged and makes
a constant input (``log r_0`` of a uniform ``r_0`` in round 1) exactly zero, so its weight stays
at 0: it is unidentifiable there and is reported as such by callers.
"""

from __future__ import annotations

from functools import partial

import chex
import jax
import jax.numpy as jnp
import numpy as np

SELF = "self"
CONVERSATION = "conversation"
KINDS = (SELF, CONVERSATION)
#: Step sizes tried by the line search of each Newton step.
_STEP_SIZES = 2.0 ** -np.arange(24, dtype=np.float32)  # numpy: no device array at import
#: A fit has converged when the gradient of the mean cross-entropy (nats) with respect to the
#: whitened parameters has at most this Euclidean norm (float32 loss resolution).
GRAD_TOL = 1e-4


@chex.dataclass(frozen=True)
class Calibrator:
    """Fitted calibrator parameters.

    Attributes:
        weights: float ``[F]`` — one weight per input report (``[w_k]`` self,
            ``[w_k, w_{k−1}]`` conversation).
        bias: float ``[C]`` — per-class bias, ``bias[0] == 0``.
        loss: float ``[]`` — the final weighted mean cross-entropy on the fit data (nats).
        grad_norm: float ``[]`` — Euclidean norm of the loss gradient at the fit, with respect
            to the whitened parameters (nats).
        converged: bool ``[]`` — ``grad_norm <= GRAD_TOL``.
    """

    weights: jax.Array
    bias: jax.Array
    loss: jax.Array
    grad_norm: jax.Array
    converged: jax.Array


def check_kind(kind: str) -> str:
    """Return ``kind`` if it is a calibrator kind. Raises ValueError listing :data:`KINDS`."""
    if kind not in KINDS:
        raise ValueError(f"unknown calibrator kind {kind!r}; expected one of {KINDS}")
    return kind


def features(kind: str, log_r: jax.Array, log_r_prev: jax.Array) -> jax.Array:
    """Calibrator inputs ``[..., F, C]`` from ``log r_k`` and ``log r_{k−1}`` (both ``[..., C]``).

    Raises:
        ValueError: unknown ``kind``.
    """
    inputs = (log_r,) if check_kind(kind) == SELF else (log_r, log_r_prev)
    return jnp.stack(inputs, axis=-2)


def _design(feats: jax.Array) -> jax.Array:
    """Design tensor ``[N, C, F + C − 1]``: centred features, then class indicators 1..C−1."""
    n, _, c = feats.shape
    centred = feats - feats[..., :1]  # a per-example shift: exact zeros for a constant input
    onehot = jnp.broadcast_to(jnp.eye(c, dtype=feats.dtype)[:, 1:], (n, c, c - 1))
    return jnp.concatenate([jnp.swapaxes(centred, -1, -2), onehot], axis=-1)


def _gradient(theta, design, targets, weight):
    """Gradient ``[P]`` of the weighted mean cross-entropy (closed form)."""
    probs = jax.nn.softmax(design @ theta, axis=-1)
    return jnp.einsum("n,nc,ncp->p", weight / jnp.sum(weight), probs - targets, design)


#: A design column whose residual after the earlier columns is below this fraction of its norm
#: is treated as collinear with them (a constant report: weight 0).
_COLLINEAR = 1e-4


def _whiten(design, weight, n_feats: int):
    """Whitened design ``[N, C, P]`` and the map ``[P, P]`` back to the original parameters.

    The columns are orthonormalised (weighted QR) with the class indicators first, so strongly
    anchored reports (``log r_k`` and ``log r_{k−1}`` nearly collinear) stay well conditioned
    and a report that is constant over the examples (``r_0``, or a model that says the same
    thing everywhere) is collinear with the bias: its column is dropped and its weight is 0.
    """
    n, c, p = design.shape
    order = jnp.concatenate([jnp.arange(n_feats, p), jnp.arange(n_feats)])
    rows = (jnp.sqrt(weight / jnp.sum(weight) / c)[:, None, None] * design[..., order])
    # zero rows up to P (they leave rowsᵀ·rows, so R, unchanged): R is [P, P] even for a fit
    # on fewer classes x examples than parameters (one maze step of a weak model)
    rows = jnp.pad(rows.reshape(n * c, p), ((0, max(p - n * c, 0)), (0, 0)))
    r = jnp.linalg.qr(rows, mode="r")
    keep = jnp.abs(jnp.diagonal(r)) > _COLLINEAR * jnp.linalg.norm(rows, axis=0)
    eye = jnp.eye(p, dtype=r.dtype)
    r = jnp.where(keep[:, None] & keep[None, :], r, eye)
    r_inv = jax.scipy.linalg.solve_triangular(r, eye) * keep  # dropped columns map to 0
    to_theta = jnp.zeros_like(r_inv).at[order].set(r_inv)
    return design[..., order] @ r_inv, to_theta


def _newton_direction(theta, design, targets, weight):
    """``−H⁺ g`` of the weighted mean cross-entropy (closed-form gradient and Hessian)."""
    probs = jax.nn.softmax(design @ theta, axis=-1)  # [N, C]
    grad = _gradient(theta, design, targets, weight)
    weight = weight / jnp.sum(weight)
    mean_x = jnp.einsum("nc,ncp->np", probs, design)
    hess = jnp.einsum("n,nc,ncp,ncq->pq", weight, probs, design, design) - jnp.einsum(
        "n,np,nq->pq", weight, mean_x, mean_x
    )
    return -jnp.linalg.pinv(hess) @ grad


def _loss(theta, design, targets, weight):
    logits = design @ theta
    nll = jax.nn.logsumexp(logits, axis=-1) - jnp.sum(targets * logits, axis=-1)
    return jnp.sum(weight * nll) / jnp.sum(weight)


def _loss_change(theta, step, design, targets, weight):
    """``loss(theta + step) − loss(theta)``, computed without cancellation near the optimum."""
    delta = design @ step
    probs = jax.nn.softmax(design @ theta, axis=-1)
    change = jnp.log1p(jnp.sum(probs * jnp.expm1(delta), axis=-1)) - jnp.sum(targets * delta, -1)
    return jnp.sum(weight * change) / jnp.sum(weight)


@partial(jax.jit, static_argnames=("n_steps",))
def fit_calibrator(
    feats: jax.Array, targets: jax.Array, weight: jax.Array | None = None, n_steps: int = 30
) -> Calibrator:
    """Fit one calibrator by weighted cross-entropy.

    Args:
        feats: inputs ``[N, F, C]`` from :func:`features` (log-probabilities).
        targets: ``[N, C]`` one-hot true labels, or soft targets (rows sum to 1).
        weight: ``[N]`` non-negative example weights (``None``: all 1).
        n_steps: at most this many Newton steps (static); the fit stops early once no step
            size lowers the loss (converged to float precision).

    Returns:
        The fitted :class:`Calibrator`; ``converged`` says whether the gradient-norm check
        passed (callers report or refuse a fit that did not converge).
    """
    design = _design(feats)
    n_feats = feats.shape[-2]
    weight = jnp.ones(feats.shape[0], feats.dtype) if weight is None else weight
    design, to_theta = _whiten(design, weight, n_feats)
    loss = partial(_loss, design=design, targets=targets, weight=weight)
    change = partial(_loss_change, design=design, targets=targets, weight=weight)

    def newton(carry):
        theta, i, _ = carry
        step = _newton_direction(theta, design, targets, weight)
        trial = jax.vmap(lambda t: change(theta, t * step))(_STEP_SIZES)
        best = jnp.argmin(trial)
        improved = trial[best] < 0
        size = jnp.where(improved, jnp.asarray(_STEP_SIZES)[best], 0.0)
        return theta + size * step, i + 1, improved

    def going(carry):
        _, i, improved = carry
        return (i < n_steps) & improved

    start = (jnp.zeros(design.shape[-1], feats.dtype), jnp.int32(0), jnp.bool_(True))
    theta, _, _ = jax.lax.while_loop(going, newton, start)
    grad_norm = jnp.linalg.norm(_gradient(theta, design, targets, weight))
    theta_raw = to_theta @ theta
    bias = jnp.concatenate([jnp.zeros(1, feats.dtype), theta_raw[n_feats:]])
    return Calibrator(weights=theta_raw[:n_feats], bias=bias, loss=loss(theta),
                      grad_norm=grad_norm, converged=grad_norm <= GRAD_TOL)


def apply_calibrator(cal: Calibrator, feats: jax.Array) -> jax.Array:
    """Calibrated log-probabilities ``[..., C]`` from inputs ``[..., F, C]``."""
    return jax.nn.log_softmax(jnp.einsum("...fc,f->...c", feats, cal.weights) + cal.bias, axis=-1)


def previous_reports(log_r: jax.Array) -> jax.Array:
    """``log r_{k−1}`` for each round: ``[K, ..., C]`` → ``[K, ..., C]`` with a uniform ``r_0``."""
    log_r0 = jnp.full_like(log_r[:1], -jnp.log(log_r.shape[-1]))
    return jnp.concatenate([log_r0, log_r[:-1]], axis=0)


def fit_rounds(
    kind: str,
    log_r: jax.Array,
    targets: jax.Array,
    weight: jax.Array | None = None,
    n_steps: int = 30,
) -> Calibrator:
    """Fit one calibrator per round (vmapped over rounds).

    Args:
        kind: :data:`SELF` or :data:`CONVERSATION`.
        log_r: reports of rounds 1..K, ``[K, N, C]``.
        targets: ``[K, N, C]`` or ``[N, C]`` (the same label for every round).
        weight: ``[N]`` example weights or ``None``.

    Returns:
        A :class:`Calibrator` whose fields have a leading round axis ``K``.

    Raises:
        ValueError: unknown ``kind``.
    """
    feats = features(kind, log_r, previous_reports(log_r))
    targets = jnp.broadcast_to(targets, log_r.shape)
    weight = jnp.ones(log_r.shape[1], log_r.dtype) if weight is None else weight
    fit = partial(fit_calibrator, n_steps=n_steps)
    return jax.vmap(fit, in_axes=(0, 0, None))(feats, targets, weight)


def calibrate_rounds(kind: str, cals: Calibrator, log_r: jax.Array) -> jax.Array:
    """Apply per-round calibrators from :func:`fit_rounds` to reports ``[K, N, C]``.

    Returns:
        Calibrated log-probabilities ``[K, N, C]``. Raises ValueError on an unknown ``kind``.
    """
    feats = features(kind, log_r, previous_reports(log_r))
    return jax.vmap(apply_calibrator)(cals, feats)


TREATMENTS = ("raw", SELF, CONVERSATION)


def treatment_messages(
    fit_log_r: jax.Array,
    fit_targets: jax.Array,
    log_r: jax.Array,
    fit_weight: jax.Array | None = None,
    n_steps: int = 30,
) -> tuple[dict, dict]:
    """Fit self and conversation calibrators per round on held-out reports and apply them.

    Args:
        fit_log_r: held-out reports ``[K, M, C]``; fit_targets: ``[K, M, C]`` or ``[M, C]``;
        log_r: reports to calibrate ``[K, N, C]``; fit_weight: ``[M]`` or ``None``.

    Returns:
        ``(messages, calibrators)``: ``messages[t]`` log-probabilities ``[K, N, C]`` for each
        treatment ``t`` in :data:`TREATMENTS` (``raw`` is ``log_r``); ``calibrators[t]`` the
        fitted :class:`Calibrator` (leading round axis) for ``self`` and ``conversation``.
    """
    messages, cals = {"raw": log_r}, {}
    for kind in KINDS:
        cals[kind] = fit_rounds(kind, fit_log_r, fit_targets, fit_weight, n_steps)
        messages[kind] = calibrate_rounds(kind, cals[kind], log_r)
    return messages, cals
