"""Results of LLM maze runs by round, in the trained transformers' layout (Narrowing the
Collaboration Gap, Probably, §6 and Figs. 7-11).

A run's transcript records (:mod:`jaxcollab.llm.run`) hold, per episode, the true moves
(``data.labels``) and every round's decision (``data.rounds``: ``step``, ``round``, ``move``, the
communicated ``probs``). From them :func:`by_round` gives the layout of
``protocols.<name>`` of ``train/collab.py`` maze runs — ``rounds``, ``maze_success``,
``step_accuracy`` by round — plus the paper's statistics:

* **maze success** of round k: the maze's every step decided right by round k. With
  ``maze.advance=path`` every step of the path is played, so this is known for every round; with
  ``advance=team`` only for the last round (the team's own decision: an earlier round's success
  after the maze ended on a wrong last-round move is not determined, so it is ``None``).
* **90 % bootstrap intervals** of the mean: success over all rollouts with rollouts resampled
  within each maze (pooled variance across mazes, §6); calibration loss computed per rollout
  (moves of all mazes pooled) and its mean's interval over rollouts (§6).
* **calibration loss** by round: self-calibration error in round 1, conversation-calibration
  error against the previous round's vector after (Fig. 7b; binned,
  :mod:`jaxcollab.collab.metrics`).
* **confidence histograms** (Fig. 10, R6): per round, the count of the top probability in bins
  of width 0.1 from 0.2 to 1.0 and a bin of its own for 1.0, with the accuracy of the argmax
  move and the mean top probability in each bin.

Episode ``e`` of a run with ``R`` rollouts is rollout ``e % R`` of maze ``e // R``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from jaxcollab.collab.metrics import (
    conversation_calibration_error,
    event_probs,
    self_calibration_error,
)

LEVEL = 0.9  # the paper's 90 % intervals (§6)
#: Confidence-histogram bins: [0.2, 0.3), …, [0.9, 1.0), then exactly 1.0 (Fig. 10's 1.0 bin).
CONFIDENCE_EDGES = tuple(round(0.2 + 0.1 * i, 1) for i in range(9))
_ONE = 1.0 - 1e-9


def bootstrap_interval(values: np.ndarray, n_boot: int = 2000, level: float = LEVEL,
                       seed: int = 0) -> dict:
    """Mean and percentile bootstrap interval of the mean of ``values`` ``[groups, samples]``.

    The samples are resampled with replacement within each group (for success: rollouts within
    each maze, the pooled variance across mazes of §6; for a per-rollout statistic: one group
    of rollouts). A single sample per group gives an interval of width 0.

    Returns:
        ``{"mean", "ci_low", "ci_high", "level"}``.

    Raises:
        ValueError: ``values`` not 2-D with at least one sample.
    """
    values = np.asarray(values, float)
    if values.ndim != 2 or values.size == 0:
        raise ValueError(f"need values [groups, samples] with samples, got shape {values.shape}")
    rng = np.random.default_rng(seed)
    m, r = values.shape
    idx = rng.integers(0, r, (n_boot, m, r))
    means = values[np.arange(m)[None, :, None], idx].mean(axis=(1, 2))
    lo, hi = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return {"mean": float(values.mean()), "ci_low": float(lo), "ci_high": float(hi),
            "level": level}


def _decisions(record: dict, n_rounds: int) -> tuple[np.ndarray, np.ndarray]:
    """``(correct bool [K, S], played bool [K, S])`` of one record over its ``S`` path steps:
    round k's move at step s was the true move / round k was played at step s."""
    labels = record["data"]["labels"]
    correct = np.zeros((n_rounds, len(labels)), bool)
    played = np.zeros_like(correct)
    for x in record["data"].get("rounds", []):
        k, s = x["round"], x["step"]
        if k < n_rounds and s < len(labels):
            played[k, s] = True
            correct[k, s] = x.get("move") is not None and x["move"] == labels[s]
    return correct, played


def _calibration_rows(records: Sequence[dict], k: int):
    """``(probs [N, 4], previous [N, 4] or None, labels [N])`` of round ``k`` over the steps of
    ``records`` that communicated a vector in round k (and k − 1)."""
    rows = []
    for r in records:
        labels = r["data"]["labels"]
        by_step: dict[int, dict[int, list]] = {}
        for x in r["data"].get("rounds", []):
            by_step.setdefault(x["step"], {})[x["round"]] = x["probs"]
        for s, v in by_step.items():
            if s < len(labels) and v.get(k) is not None and (k == 0 or v.get(k - 1) is not None):
                rows.append((v[k], v.get(k - 1), labels[s]))
    if not rows:
        return None
    p = np.array([a for a, _, _ in rows], float)
    prev = None if k == 0 else np.array([b for _, b, _ in rows], float)
    return p, prev, np.array([c for _, _, c in rows], np.int32)


def calibration_loss(records: Sequence[dict], n_rounds: int, n_bins: int = 10
                     ) -> list[float | None]:
    """Calibration loss of the communicated vectors of ``records`` pooled, per round (module
    docstring); ``None`` for a round without vectors."""
    out = []
    for k in range(n_rounds):
        rows = _calibration_rows(records, k)
        if rows is None:
            out.append(None)
            continue
        p, prev, y = rows
        pe, ye, pp = event_probs(p.astype(np.float32), y,
                                 None if prev is None else prev.astype(np.float32))
        out.append(float(self_calibration_error(pe, ye, n_bins=n_bins) if k == 0 else
                         conversation_calibration_error(pe, pp, ye, n_bins=n_bins)))
    return out


def confidence_histogram(records: Sequence[dict], k: int) -> dict:
    """Round ``k``'s top-probability histogram (module docstring): ``bins`` (labels), ``count``,
    ``accuracy`` (of the argmax move; ``None`` in an empty bin) and ``confidence`` (mean top
    probability; ``None`` in an empty bin)."""
    rows = _calibration_rows(records, k)
    top = np.zeros(0) if rows is None else rows[0].max(axis=1)
    right = np.zeros(0, bool) if rows is None else rows[0].argmax(axis=1) == rows[2]
    edges = np.asarray(CONFIDENCE_EDGES)
    which = np.where(top >= _ONE, len(edges) - 1, np.clip(np.searchsorted(edges, top, "right")
                                                        - 1, 0, len(edges) - 2))
    labels = [f"{a:.1f}-{b:.1f}" for a, b in zip(edges[:-1], edges[1:])] + ["1.0"]
    count = np.bincount(which, minlength=len(labels))
    mean = lambda x: [float(x[which == b].mean()) if count[b] else None  # noqa: E731
                      for b in range(len(labels))]
    return {"bins": labels, "count": count.tolist(), "accuracy": mean(right.astype(float)),
            "confidence": mean(top)}


def team_decisions(records: Sequence[dict]) -> dict:
    """How the team decided the steps it played (``maze.advance=team``): per step the move of
    its last round that gave one (:class:`~jaxcollab.agents.maze.llm.MazeGame`), else the documented
    fallback ``d``, which the game plays but no agent chose.

    Returns:
        ``step_accuracy`` (steps whose chosen move was the true one / steps played: a fallback
        ``d`` that happened to be right is not the model's and is not credited; None before
        any step) and ``fallback_moves`` (steps played by the fallback).
    """
    hits = played = fallbacks = 0
    for r in records:
        labels, chosen = r["data"]["labels"], {}
        for x in sorted(r["data"].get("rounds", []), key=lambda x: (x["step"], x["round"])):
            chosen.setdefault(x["step"], None)
            if x.get("move") is not None:
                chosen[x["step"]] = x["move"]
        for s, move in chosen.items():
            played += 1
            fallbacks += move is None
            hits += move is not None and s < len(labels) and move == labels[s]
    return {"step_accuracy": hits / played if played else None, "fallback_moves": fallbacks}


def by_round(records: Sequence[dict], n_rounds: int, rollouts: int = 1,
             advance: str = "team", n_bins: int = 10) -> dict:
    """The by-round results of one run's transcript records (module docstring).

    Args:
        records: transcript records (each with ``episode``, ``success`` and ``data.labels`` /
            ``data.rounds``); episode ``e`` is rollout ``e % rollouts`` of maze
            ``e // rollouts``.
        n_rounds: K (1 for ``solo``). advance: the run's ``maze.advance``.

    Returns:
        ``rounds`` (1..K), ``maze_success`` and its ``maze_success_interval`` (``[low, high]``,
        90 %), ``step_accuracy`` (steps decided right / steps played, per round),
        ``calibration_loss`` (mean over rollouts) and its ``calibration_loss_interval``, and
        ``confidence`` (per round, :func:`confidence_histogram`); lists by round, ``None``
        where not determined. Plus ``mazes``, ``rollouts``, ``level``.

    Only mazes with all their rollouts count (a stopped run's last maze may lack some);
    ``mazes`` says how many.
    """
    by_maze: dict[int, list[dict]] = {}
    for r in records:
        by_maze.setdefault(r["episode"] // rollouts, []).append(r)
    complete = sorted(m for m, rs in by_maze.items() if len(rs) == rollouts)
    order = sorted((r for m in complete for r in by_maze[m]), key=lambda r: r["episode"])
    n_mazes = len(complete)
    if not order:
        none = [None] * n_rounds
        return {"rounds": list(range(1, n_rounds + 1)), "maze_success": none,
                "maze_success_interval": none, "step_accuracy": none, "calibration_loss": none,
                "calibration_loss_interval": none, "confidence": none, "mazes": 0,
                "rollouts": rollouts, "level": LEVEL}
    decided = [_decisions(r, n_rounds) for r in order]
    success = np.zeros((n_rounds, n_mazes, rollouts))
    for i, (r, (correct, _)) in enumerate(zip(order, decided)):
        m, j = divmod(i, rollouts)
        success[:, m, j] = correct.all(axis=1)
        success[-1, m, j] = bool(correct[-1].all() if advance == "path" else r["success"])
    known = [advance == "path" or k == n_rounds - 1 for k in range(n_rounds)]
    intervals = [bootstrap_interval(success[k]) if known[k] else None for k in range(n_rounds)]
    hits = sum(c.sum(axis=1) for c, _ in decided)
    seen = sum(p.sum(axis=1) for _, p in decided)
    per_rollout = np.array([[np.nan if v is None else v for v in
                             calibration_loss(order[j::rollouts], n_rounds, n_bins)]
                            for j in range(rollouts)], float)  # [R, K]
    loss = [bootstrap_interval(per_rollout[None, ~np.isnan(per_rollout[:, k]), k])
            if np.any(~np.isnan(per_rollout[:, k])) else None for k in range(n_rounds)]
    pair = lambda ci: None if ci is None else [ci["ci_low"], ci["ci_high"]]  # noqa: E731
    return {
        "rounds": list(range(1, n_rounds + 1)),
        "maze_success": [ci and ci["mean"] for ci in intervals],
        "maze_success_interval": [pair(ci) for ci in intervals],
        "step_accuracy": [float(h / s) if s else None for h, s in zip(hits, seen)],
        "calibration_loss": [ci and ci["mean"] for ci in loss],
        "calibration_loss_interval": [pair(ci) for ci in loss],
        "confidence": [confidence_histogram(order, k) for k in range(n_rounds)],
        "mazes": n_mazes, "rollouts": rollouts, "level": LEVEL,
    }
