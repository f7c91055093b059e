"""Exact Bayes reference: the first move's posterior from one half view (Narrowing
the Collaboration Gap, Probably, App. E; issue 4).

An agent that sees some cells knows the prior (inner cells are walls i.i.d. with ``wall_prob``,
start and goal open) and that the maze was accepted (exactly one simple path). Its Bayes
distribution of the first move enumerates every completion of the unseen inner cells, keeps
those the generator could have produced (:func:`~.generator.unique_path`), and weighs each by
its prior probability. Masks are drawn independently of the maze, so they carry no information.
With 18 seen cells a 6×6 view leaves at most 18 unseen inner cells: 2¹⁸ completions, a
fraction of a second in one batch.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxcollab.envs.maze.generator import WALL_PROB, path_of, unique_path
from jaxcollab.envs.maze.text import AT, OPEN, UNSEEN, WALL

MAX_UNSEEN = 22  # 4M completions; refuse larger enumerations


def _pad(grids: np.ndarray) -> np.ndarray:
    """Pad a batch of flat grids with open grids to a power of two (≥ 1024): few compiles."""
    size = max(1 << 10, 1 << (len(grids) - 1).bit_length())
    out = np.ones((size, grids.shape[1]), bool)
    out[: len(grids)] = grids
    return out


def bayes_first_move(
    view, shape: tuple[int, int], wall_prob: float = WALL_PROB
) -> tuple[np.ndarray, float]:
    """Posterior of the first move given one view at the start.

    Args:
        view: int tokens ``[H·W]`` over the maze vocabulary (``#``, ``.``, ``?``, ``@``); ``@``
            and the two terminal cells count as open.
        shape: ``(H, W)``.
        wall_prob: the generator's wall probability.

    Returns:
        ``(probs, evidence)``: float64 ``[4]`` over ``d r u l`` (``u`` and ``l`` are always 0 at
        the start) and the prior probability that a draw matching the view is accepted.

    Raises:
        ValueError: an unexpected token, more than :data:`MAX_UNSEEN` unseen inner cells, or no
            accepted completion (an impossible view).
    """
    view = np.asarray(view).reshape(-1)
    h, w = shape
    bad = set(np.unique(view)) - {AT, OPEN, UNSEEN, WALL}
    if view.size != h * w or bad:
        raise ValueError(f"view must be {h * w} tokens of '#.?@', got {view.size} with {bad}")
    inner = np.ones(h * w, bool)
    inner[[0, h * w - 1]] = False
    unseen = np.flatnonzero((view == UNSEEN) & inner)
    if unseen.size > MAX_UNSEEN:
        raise ValueError(f"{unseen.size} unseen cells > MAX_UNSEEN={MAX_UNSEEN}")
    combos = (np.arange(2**unseen.size)[:, None] >> np.arange(unseen.size)) & 1  # 1 = wall
    grids = np.repeat((view != WALL)[None], len(combos), 0)
    grids[:, unseen] = combos == 0
    grids[:, [0, h * w - 1]] = True
    walls = combos.sum(1)
    prior = wall_prob**walls * (1 - wall_prob) ** (unseen.size - walls)
    accept = np.asarray(unique_path(jnp.asarray(_pad(grids).reshape(-1, h, w))))[: len(grids)]
    if not accept.any():
        raise ValueError("no completion of this view has exactly one path")
    kept = grids[accept]
    first = np.asarray(path_of(jnp.asarray(_pad(kept).reshape(-1, h, w)))[0])[: len(kept), 0]
    mass = np.bincount(first, weights=prior[accept], minlength=4)
    return mass / mass.sum(), float(mass.sum())
