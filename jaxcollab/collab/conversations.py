"""The calibration experiment as conversations ("Narrowing the Collaboration Gap, Probably", §5
R2 and Figure 5).

Each treatment is its own round-by-round conversation; all of them share round 1 (the same
model, trained once, :class:`~jaxcollab.collab.trainer.RoundTrainer` ``first_round_from``):

* ``unbiased`` — the speakers' posteriors are sent as encoded;
* ``biased_raw`` — each message is distorted by the bias model
  (:func:`~jaxcollab.collab.biased_rounds.bias_messages`, anchored on the previous *sent*
  message) and sent as is;
* ``biased_self`` / ``biased_conversation`` — the distorted report is debiased before it is
  sent: a self calibrator (input ``log r_k``) or a conversation calibrator (inputs ``log r_k``
  and the previous sent message) is fitted per round against the true labels, and the
  calibrated message is what the next agent trains on and predicts from, so imperfect
  corrections accumulate through the conversation (paper R2).

Each round's two calibrators are fitted on that round's held-out validation rows (rows no
model trains on; :func:`fit_folds`, each half fitted on the other half), never on the test set,
and every message the round sends — training, validation and test rows alike — is labelled by
one of the two, so no calibrator labels a row it was fitted on and later agents are tested on
messages of the kind they trained on. Post-hoc treatments keep the earlier reading:
``posthoc_self`` and ``posthoc_conversation`` calibrate the ``biased_raw`` conversation's test
messages after the fact (:func:`fold_calibrate` on the test set; the next agents never saw
them), and a task may add its own baselines (on mazes ``naive_rare_action``, the paper's §6
R4, Figure 8) to them.

Bias conditions (paper R2): ``global`` (global miscalibration only, γ = 0) and
``global_anchoring`` (plus sycophantic anchoring, γ > 0); the paper gives no β, γ values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.collab.bias import safe_log, validate_bias
from jaxcollab.collab.biased_rounds import bias_messages, log_messages
from jaxcollab.collab.calibration import (
    CONVERSATION,
    SELF,
    Calibrator,
    apply_calibrator,
    features,
    fit_calibrator,
)
from jaxcollab.collab.messages import MessageCodec, decide
from jaxcollab.collab.metrics import round_metrics
from jaxcollab.collab.trainer import MessageTransform, Outgoing, RoundTrainer
from jaxcollab.core.family import Scores

UNBIASED, RAW = "unbiased", "biased_raw"
#: The conversation treatments: name → calibrator kind applied before sending (None: none).
CALIBRATED = {RAW: None, "biased_self": SELF, "biased_conversation": CONVERSATION}
TREATMENTS = (UNBIASED, *CALIBRATED)
POSTHOC = {"posthoc_self": SELF, "posthoc_conversation": CONVERSATION}
CONDITIONS = ("global", "global_anchoring")

FitLog = Callable[[int, Calibrator], None]
"""``(round r, calibrators with a leading fold axis [2])``."""


def check_conditions(conditions: Mapping) -> dict[str, tuple[float, float]]:
    """``{name: (beta, gamma)}`` from ``{name: {"beta": β, "gamma": γ}}``.

    Raises:
        ValueError: a name outside :data:`CONDITIONS`, no condition, a bad β or γ, γ ≠ 0 for
            ``global`` or γ = 0 for ``global_anchoring`` (each named).
    """
    out = {}
    if not conditions:
        raise ValueError(f"bias.conditions is empty; expected some of {CONDITIONS}")
    for name, c in conditions.items():
        if name not in CONDITIONS:
            raise ValueError(f"unknown bias condition {name!r}; expected one of {CONDITIONS}")
        beta, gamma = validate_bias(c["beta"], c["gamma"])
        if (gamma == 0) != (name == "global"):
            want = "0" if name == "global" else "> 0"
            raise ValueError(f"bias.conditions.{name}.gamma={gamma}; expected {want}")
        out[name] = (beta, gamma)
    return out


def held_out_folds(n: int) -> np.ndarray:
    """Folds int8 ``[n]`` of ``n`` held-out rows: ``1`` for the first half, ``0`` for the rest.

    Calibrator ``k`` of :func:`fit_folds` is fitted on the rows whose fold is not ``k`` and
    labels the rows whose fold is ``k``, so each half is labelled by the calibrator fitted on
    the other half.
    """
    return (np.arange(n) < n // 2).astype(np.int8)


def _fit_folds(kind: str, log_r, log_prev, labels, fold, n_steps: int) -> Calibrator:
    feats = features(kind, jnp.asarray(log_r), jnp.asarray(log_prev))
    onehot = jax.nn.one_hot(jnp.asarray(labels), feats.shape[-1], dtype=feats.dtype)
    fold = jnp.asarray(fold)
    return jax.vmap(lambda k: fit_calibrator(feats, onehot, (fold != k).astype(feats.dtype),
                                             n_steps))(jnp.arange(2))


def fit_folds(kind: str, log_r, log_prev, labels, fold, n_steps: int = 30) -> Calibrator:
    """Two calibrators: calibrator ``k`` fitted on the rows whose ``fold`` is not ``k``.

    Args:
        kind: ``"self"`` or ``"conversation"``. log_r, log_prev: float ``[N, C]`` log reports
            ``r_k`` and the previous sent messages. labels: int ``[N]`` true labels.
            fold: int ``[N]`` in {0, 1}, e.g. :func:`held_out_folds`.

    Returns:
        :class:`~jaxcollab.collab.calibration.Calibrator` with a leading fold axis ``[2]``.

    Raises:
        ValueError: an unknown ``kind``, or a fold with fewer than 2 rows to fit on.
    """
    fold = np.asarray(fold)
    counts = [int(np.sum(fold != k)) for k in (0, 1)]
    if min(counts) < 2:
        raise ValueError(f"each calibrator needs at least 2 rows to fit on, got {counts} "
                         f"(rows per fold: fit on fold != k)")
    return _fit_folds(kind, log_r, log_prev, labels, fold, n_steps)


def apply_folds(kind: str, cals: Calibrator, log_r, log_prev, fold) -> jax.Array:
    """Calibrated log-messages float ``[N, C]``: row ``i`` by calibrator ``fold[i]`` of
    ``cals`` (leading axis ``[2]``, from :func:`fit_folds`)."""
    feats = features(kind, jnp.asarray(log_r), jnp.asarray(log_prev))
    both = jax.vmap(lambda c: apply_calibrator(c, feats))(cals)  # [2, N, C]
    return jnp.where(jnp.asarray(fold)[:, None] == 1, both[1], both[0])


def fold_calibrate(kind: str, log_r, log_prev, labels, n_steps: int = 30):
    """Calibrate reports by two-fold cross-fitting on the same rows: each half is calibrated
    by a calibrator fitted on the other half (with those rows' true labels), so no row is
    labelled by a fit that saw it (the post-hoc treatments).

    Args:
        kind: ``"self"`` or ``"conversation"``. log_r, log_prev: float ``[N, C]`` log reports
            ``r_k`` and the previous sent messages. labels: int ``[N]``.

    Returns:
        ``(log_c float [N, C], calibrators with a leading fold axis [2])``; fold 0 is fitted on
        the first half and labels the second.

    Raises:
        ValueError: fewer than 4 rows, or an unknown ``kind``.
    """
    n = len(labels)
    if n < 4:
        raise ValueError(f"cross-fitted calibration needs at least 4 rows, got {n}")
    fold = held_out_folds(n)
    cals = fit_folds(kind, log_r, log_prev, labels, fold, n_steps)
    return apply_folds(kind, cals, log_r, log_prev, fold), cals


def treatment_transform(codec: MessageCodec, treatment: str, beta: float, gamma: float,
                        n_steps: int = 30, on_fit: FitLog | None = None
                        ) -> MessageTransform | None:
    """The round trainer's ``message_transform`` for one conversation treatment.

    Biased treatments distort each round's messages with the bias model anchored on the
    previous round's *sent* message; calibrated ones then send calibrated messages (encoded by
    ``codec``). The round's two calibrators are fitted on its held-out validation rows only
    (:func:`fit_folds`, never on rows a model trains on, nor on the test set), and every sent
    row is labelled by the calibrator of its fold, so training, validation and test messages
    come from the same two maps (a model that read one map's values in training is never shown
    values of a third map at test). ``on_fit(r, calibrators)`` sees each round's fit.

    Raises:
        ValueError: an unknown treatment, an ``action`` codec or a bad β, γ.
    """
    if treatment not in TREATMENTS:
        raise ValueError(f"unknown treatment {treatment!r}; expected one of {TREATMENTS}")
    if treatment == UNBIASED:
        return None
    if codec.kind != "probability":
        raise ValueError(f"biased messages need protocol=probability, got {codec.kind!r}")
    beta, gamma = validate_bias(beta, gamma)
    kind = CALIBRATED[treatment]

    def send(r: int, held_out: Outgoing, rows: Outgoing) -> np.ndarray:
        reports = bias_messages(codec, rows.messages, rows.previous, beta, gamma)
        if kind is None:
            return reports
        held = bias_messages(codec, held_out.messages, held_out.previous, beta, gamma)
        cals = fit_folds(kind, *log_messages(codec, held, held_out.previous), held_out.labels,
                         held_out.fold, n_steps)
        if on_fit is not None:
            on_fit(r, cals)
        log_c = apply_folds(kind, cals, *log_messages(codec, reports, rows.previous), rows.fold)
        return np.asarray(codec.encode(jnp.exp(log_c)), np.uint8)

    return send


def run_name(condition: str | None, treatment: str) -> str:
    """A conversation's name and directory: ``unbiased`` or ``<condition>/<treatment>``."""
    return treatment if treatment == UNBIASED else f"{condition}/{treatment}"


def make_trainers(common: Mapping, out: Path, conditions: Mapping[str, tuple[float, float]],
                  n_steps: int = 30, on_fit: Callable[[str], FitLog] | None = None
                  ) -> dict[str, RoundTrainer]:
    """Every conversation of the experiment, validated before any training.

    Args:
        common: :class:`RoundTrainer` keyword arguments shared by all (``task, codec, model,
            train, n_rounds, key, cross_fit``).
        out: experiment directory; conversation ``n`` runs in ``out / n``.
        conditions: from :func:`check_conditions`.
        on_fit: ``on_fit(name)`` gives the :data:`FitLog` of conversation ``name``.

    Returns:
        ``{name: trainer}`` in run order: ``unbiased``, then per condition the conversation,
        self and raw treatments (the comparison the paper draws first).
    """
    runs = {UNBIASED: RoundTrainer(**common, run_dir=out / UNBIASED)}
    for cond, (beta, gamma) in conditions.items():
        for t in reversed(CALIBRATED):
            name = run_name(cond, t)
            log = None if on_fit is None else on_fit(name)
            transform = treatment_transform(common["codec"], t, beta, gamma, n_steps, log)
            runs[name] = RoundTrainer(**common, run_dir=out / name, message_transform=transform,
                                      first_round_from=out / UNBIASED)
    return runs


def sent_messages(trainer: RoundTrainer) -> np.ndarray:
    """The test messages each round sent, decoded: float32 ``[K, N, C]``."""
    probs = []
    for r in range(1, trainer.n_rounds + 1):
        with np.load(trainer.round_dir(r) / "round.npz") as z:
            probs.append(trainer.codec.decode(z["test_messages"]))
    return np.stack(probs).astype(np.float32)


def score(probs, labels, target, n_bins: int, scores: Scores | None = None,
          source: Any = None) -> dict:
    """Per-round scores of messages ``probs`` float ``[K, N, C]`` (lists by round).

    ``accuracy`` (fraction of examples whose decision is the label), ``ece`` / ``cce`` (binned
    self- and conversation-calibration errors, :mod:`jaxcollab.collab.metrics`), and either
    the task's own score (``scores``, of the decisions on the test examples of ``source``:
    the maze's ``maze_success``, the paper's metric) or ``mse_vs_pstar`` (mean over classes
    of ``(m − p_true)²``, probability²; for parity exactly ``E[(m − p*)²]``).
    """
    probs = np.asarray(probs, np.float32)
    onehot = np.eye(probs.shape[-1], dtype=np.float32)[labels]
    metrics = round_metrics(safe_log(jnp.asarray(probs)), jnp.asarray(onehot), None, n_bins)
    correct = np.asarray(decide(probs)) == labels
    out = {"accuracy": correct.mean(axis=1).tolist(), "ece": metrics["ece"],
           "cce": metrics["cce"]}
    if scores is None:
        out["mse_vs_pstar"] = np.mean((probs - target) ** 2, axis=(1, 2)).tolist()
    else:
        out[scores.name] = scores.score(correct, source)
    return out


def posthoc_messages(kind: str, probs, labels, n_steps: int = 30) -> np.ndarray:
    """Post-hoc calibrated messages ``[K, N, C]`` of a finished conversation's test messages
    ``probs`` ``[K, N, C]``: per round, :func:`fold_calibrate` on ``log r_k`` and ``log r_{k−1}``
    (the conversation's own previous message)."""
    log_r = safe_log(jnp.asarray(probs))
    log_prev = jnp.concatenate([jnp.full_like(log_r[:1], -np.log(log_r.shape[-1])), log_r[:-1]])
    return np.stack([np.exp(fold_calibrate(kind, log_r[k], log_prev[k], labels, n_steps)[0])
                     for k in range(len(log_r))])


def condition_treatments(runs: Mapping[str, RoundTrainer], condition: str, labels, target,
                         n_bins: int, scores: Scores | None = None, source: Any = None,
                         n_steps: int = 30) -> dict:
    """Scores (:func:`score`) of every treatment of one condition: the conversations, the
    post-hoc calibrations of ``biased_raw``, and the task's baselines
    (:attr:`~jaxcollab.core.family.Scores.baselines`: on mazes the naive rare-action one)."""
    probs = {t: sent_messages(runs[run_name(condition, t)]) for t in TREATMENTS}
    for name, kind in POSTHOC.items():
        probs[name] = posthoc_messages(kind, probs[RAW], labels, n_steps)
    for name, baseline in ({} if scores is None else scores.baselines).items():
        probs[name] = baseline(probs[RAW], runs[UNBIASED].codec.class_chars)
    return {t: score(p, labels, target, n_bins, scores, source) for t, p in probs.items()}
