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

Calibrators never label rows they were fitted on (:func:`fold_calibrate`: two-fold cross-fitting
within the rows being labelled — the training rows of a round, or the test set — with those
rows' true labels). Post-hoc treatments keep the earlier reading: ``posthoc_self`` and
``posthoc_conversation`` calibrate the ``biased_raw`` conversation's test messages after the
fact (the next agents never saw them), and on mazes ``naive_rare_action`` applies the naive
rare-action baseline (the paper's §6 R4, Figure 8) to them.

Bias conditions (paper R2): ``global`` (global miscalibration only, γ = 0) and
``global_anchoring`` (plus sycophantic anchoring, γ > 0); the paper gives no β, γ values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.collab.bias import safe_log, validate_bias
from jaxcollab.collab.biased_rounds import bias_messages
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
from jaxcollab.collab.trainer import MessageTransform, RoundTrainer
from jaxcollab.envs.maze.success import success_from_steps

UNBIASED, RAW = "unbiased", "biased_raw"
#: The conversation treatments: name → calibrator kind applied before sending (None: none).
CALIBRATED = {RAW: None, "biased_self": SELF, "biased_conversation": CONVERSATION}
TREATMENTS = (UNBIASED, *CALIBRATED)
POSTHOC = {"posthoc_self": SELF, "posthoc_conversation": CONVERSATION}
NAIVE = "naive_rare_action"
CONDITIONS = ("global", "global_anchoring")

FitLog = Callable[[int, int, Calibrator], None]
"""``(round r, rows labelled, calibrators with a leading fold axis [2])``."""


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


def fold_calibrate(kind: str, log_r, log_prev, labels, n_steps: int = 30):
    """Calibrate reports by two-fold cross-fitting: each half is calibrated by a calibrator
    fitted on the other half (with those rows' true labels), so no row is labelled by a fit
    that saw it.

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
    feats = features(kind, jnp.asarray(log_r), jnp.asarray(log_prev))
    onehot = jax.nn.one_hot(jnp.asarray(labels), feats.shape[-1], dtype=feats.dtype)
    halves = (slice(0, n // 2), slice(n // 2, n))
    cals, out = [], []
    for fit, label in (halves, halves[::-1]):
        cals.append(fit_calibrator(feats[fit], onehot[fit], None, n_steps))
        out.append(apply_calibrator(cals[-1], feats[label]))
    return jnp.concatenate(out[::-1]), jax.tree.map(lambda *x: jnp.stack(x), *cals)


def treatment_transform(codec: MessageCodec, treatment: str, beta: float, gamma: float,
                        n_steps: int = 30, on_fit: FitLog | None = None
                        ) -> MessageTransform | None:
    """The round trainer's ``message_transform`` for one conversation treatment.

    Biased treatments distort each round's messages with the bias model anchored on the
    previous round's *sent* message; calibrated ones then send :func:`fold_calibrate`'s
    calibrated messages (encoded by ``codec``); ``on_fit`` sees each round's calibrators.

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

    def send(r: int, tokens, prev, labels) -> np.ndarray:
        reports = bias_messages(codec, tokens, prev, beta, gamma)
        if kind is None:
            return reports
        log_r = safe_log(jnp.asarray(codec.decode(reports)))
        log_prev = (jnp.full_like(log_r, -np.log(codec.n_classes)) if prev is None
                    else safe_log(jnp.asarray(codec.decode(prev))))
        log_c, cals = fold_calibrate(kind, log_r, log_prev, labels, n_steps)
        if on_fit is not None:
            on_fit(r, len(labels), cals)
        return np.asarray(codec.encode(jnp.exp(log_c)), np.uint8)

    return send


def naive_rare_action(probs, class_chars: str, rare: str = "ul", fallback: str = "dr"):
    """The naive rare-action baseline for maze messages (Narrowing the Collaboration Gap, Probably,
    §6 R4, Figure 8).

    Wherever the arg-max class is a rare move (``rare``, default up or left), the vector is
    replaced by a uniform split over ``fallback`` (default 0.5 down / 0.5 right).

    Args:
        probs: float ``[..., C]`` probability vectors in ``class_chars`` order.

    Returns:
        float32 ``[..., C]``.

    Raises:
        ValueError: a ``rare`` or ``fallback`` character that is not a class.
    """
    missing = sorted(set(rare + fallback) - set(class_chars))
    if missing:
        raise ValueError(f"classes {missing} are not in class_chars={class_chars!r}")
    probs = np.asarray(probs, np.float32)
    replace = np.isin(np.argmax(probs, -1), [class_chars.index(c) for c in rare])
    split = np.zeros(len(class_chars), np.float32)
    split[[class_chars.index(c) for c in fallback]] = 1.0 / len(fallback)
    return np.where(replace[..., None], split, probs)


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


def score(probs, labels, target, n_bins: int, maze_ids=None) -> dict:
    """Per-round scores of messages ``probs`` float ``[K, N, C]`` (lists by round).

    ``accuracy`` (fraction of examples whose decision is the label), ``ece`` / ``cce`` (binned
    self- and conversation-calibration errors, :mod:`jaxcollab.collab.metrics`), and either
    ``maze_success`` (``maze_ids`` int ``[N]`` given: the fraction of test mazes whose every
    step is decided right after round k, the paper's metric) or ``mse_vs_pstar`` (mean over
    classes of ``(m − p_true)²``, probability²; for parity exactly ``E[(m − p*)²]``).
    """
    probs = np.asarray(probs, np.float32)
    onehot = np.eye(probs.shape[-1], dtype=np.float32)[labels]
    metrics = round_metrics(safe_log(jnp.asarray(probs)), jnp.asarray(onehot), None, n_bins)
    correct = np.asarray(decide(probs)) == labels
    out = {"accuracy": correct.mean(axis=1).tolist(), "ece": metrics["ece"],
           "cce": metrics["cce"]}
    if maze_ids is None:
        out["mse_vs_pstar"] = np.mean((probs - target) ** 2, axis=(1, 2)).tolist()
    else:
        n_mazes = int(np.max(maze_ids)) + 1
        out["maze_success"] = [success_from_steps(c, maze_ids, n_mazes) for c in correct]
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
                         n_bins: int, maze_ids=None, n_steps: int = 30) -> dict:
    """Scores (:func:`score`) of every treatment of one condition: the conversations, the
    post-hoc calibrations of ``biased_raw``, and on mazes the naive rare-action baseline."""
    probs = {t: sent_messages(runs[run_name(condition, t)]) for t in TREATMENTS}
    for name, kind in POSTHOC.items():
        probs[name] = posthoc_messages(kind, probs[RAW], labels, n_steps)
    if maze_ids is not None:
        probs[NAIVE] = naive_rare_action(probs[RAW], runs[UNBIASED].codec.class_chars)
    return {t: score(p, labels, target, n_bins, maze_ids) for t, p in probs.items()}
