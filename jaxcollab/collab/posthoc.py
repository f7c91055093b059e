"""Post-hoc calibration of a trained conversation's messages (spec ``collab-learning.md`` §4).

Reads the test-set messages of each round of a round-trainer run (``round_<r>/round.npz``,
:mod:`jaxcollab.collab.trainer`), splits the test set into a *fit* part (held out: the
calibrators are fitted on it, one per round, against the true labels) and an *evaluation* part,
and scores the raw and calibrated messages on the evaluation part, round by round:

* ``mse_vs_pstar`` — mean over classes of ``(m − p_true)²`` (for two classes exactly
  ``E[(m − p*)²]``, probability²), the trainer's ``test_mse_vs_pstar``;
* ``accuracy`` — fraction where the message's decision equals the label;
* ``ece`` / ``cce`` — self- and conversation-calibration errors
  (:mod:`jaxcollab.collab.metrics`).
"""

from __future__ import annotations

from pathlib import Path

import jax.numpy as jnp
import numpy as np

from jaxcollab.collab.bias import safe_log
from jaxcollab.collab.calibration import treatment_messages
from jaxcollab.collab.messages import MessageCodec, decide
from jaxcollab.collab.metrics import round_metrics


def load_messages(run_dir: str | Path, codec: MessageCodec, n_rounds: int,
                  field: str = "test_messages"):
    """The test messages of rounds 1..K as probabilities.

    ``field`` names the ``round.npz`` array: ``test_messages`` (what was sent) or, in a biased
    run, ``test_posterior_messages`` (the speakers' unbiased posteriors).

    Returns:
        ``(probs, labels, target)``: float32 ``[K, N, C]``, int32 ``[N]``, float32 ``[N, C]``.

    Raises:
        FileNotFoundError: a round that has not finished (names its file).
    """
    probs = []
    for r in range(1, n_rounds + 1):
        path = Path(run_dir) / f"round_{r}" / "round.npz"
        if not path.exists():
            raise FileNotFoundError(f"round {r} has not finished: {path} is missing")
        with np.load(path) as z:
            probs.append(codec.decode(z[field]))
            labels, target = z["test_labels"], z["test_target"]
    return np.stack(probs), labels.astype(np.int32), target.astype(np.float32)


def score(log_m, labels, target, n_bins: int) -> dict:
    """Per-round scores of messages ``log_m`` ``[K, N, C]`` (see the module docstring)."""
    probs = np.exp(np.asarray(log_m))
    onehot = np.eye(probs.shape[-1], dtype=np.float32)[labels]
    metrics = round_metrics(jnp.asarray(log_m), jnp.asarray(onehot), None, n_bins)
    metrics["mse_vs_pstar"] = np.mean((probs - target) ** 2, axis=(1, 2)).tolist()
    metrics["accuracy"] = np.mean(np.asarray(decide(probs)) == labels, axis=1).tolist()
    return metrics


def fit_rows(n: int, fit_fraction: float) -> int:
    """Examples ``[:cut]`` fit the calibrators, ``[cut:]`` are scored; returns ``cut``.

    Raises:
        ValueError: ``fit_fraction`` not in (0, 1) or leaving either part empty.
    """
    cut = int(round(n * fit_fraction))
    if not 0 < fit_fraction < 1 or not 0 < cut < n:
        raise ValueError(f"fit_fraction={fit_fraction} must split the {n} test examples in two")
    return cut


def calibrate_run(probs, labels, target, fit_fraction: float = 0.5, n_bins: int = 10,
                  newton_steps: int = 30) -> tuple[dict, dict]:
    """Fit per-round calibrators on the first ``fit_fraction`` of the examples, score the rest.

    Args:
        probs: float ``[K, N, C]`` messages; labels: int ``[N]``; target: float ``[N, C]``.

    Returns:
        ``(scores, weights)``: ``scores[t]`` from :func:`score` for ``t`` in raw / self /
        conversation; ``weights[t]`` the calibrator weights per round (``[w_k]`` or
        ``[w_k, w_{k−1}]``) and ``bias`` per class.

    Raises:
        ValueError: ``fit_fraction`` not in (0, 1) or leaving either part empty.
    """
    cut = fit_rows(len(labels), fit_fraction)
    log_r = safe_log(jnp.asarray(probs))
    onehot = jnp.eye(probs.shape[-1])[labels]
    messages, cals = treatment_messages(log_r[:, :cut], onehot[:cut], log_r[:, cut:],
                                        None, newton_steps)
    scores = {t: score(m, labels[cut:], target[cut:], n_bins) for t, m in messages.items()}
    weights = {t: {"weights": np.asarray(c.weights).tolist(), "bias": np.asarray(c.bias).tolist()}
               for t, c in cals.items()}
    return scores, weights


def naive_rare_action(probs, class_chars: str, rare: str = "ul", fallback: str = "dr"):
    """The naive rare-action baseline for maze messages (spec §4).

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
