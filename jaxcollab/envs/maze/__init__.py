"""Split-mask 6×6 mazes (Narrowing the Collaboration Gap, Probably, §5 and App. E;
Davidson et al. 2025).

Modules: :mod:`.generator` (vectorised rejection sampler, unique-path test, paths),
:mod:`.text` (vocabulary, views, examples, dataset builder), :mod:`.env` (``maze/split-6x6``),
:mod:`.success` (maze success with any predictors), :mod:`.reference` (exact Bayes first move).

Export schema (:func:`export_instances`, ``python eval/export.py env=maze/split-6x6 n=N
out=FILE.jsonl``), one JSON object per maze: ``env``, ``seed``, ``index``, ``text`` (each
agent's rendered view, :mod:`jaxcollab.core.export`), then

* ``grid``: list of H strings of W characters, ``#`` wall, ``.`` open (row 0 first);
* ``masks``: two lists of H·W ints (row-major), 1 = the cell is seen by that agent; the lists
  are complementary with H·W/2 ones each;
* ``path``: list of ``[row, col]`` from the start ``[0, 0]`` to the goal ``[H-1, W-1]``
  (the unique simple path);
* ``moves``: string over ``d r u l`` (down, right, up, left), one per path step, so
  ``len(moves) == len(path) - 1``.
"""

from __future__ import annotations

import numpy as np

from jaxcollab.core.export import record, reset_instances
from jaxcollab.core.registry import make, register
from jaxcollab.envs.maze.env import MazeEnv
from jaxcollab.envs.maze.generator import MOVE_CHARS
from jaxcollab.envs.maze.text import positions

ENVS = {"maze/split-6x6": {"shape": (6, 6)}}


def export_instances(env_name: str, n: int, seed: int) -> list[dict]:
    """``n`` mazes of ``env_name`` as JSON-ready dicts (schema in the module docstring), drawn
    as the resets of rollout episodes ``0..n-1`` (:mod:`jaxcollab.core.export`).

    Raises:
        KeyError: unknown maze environment (lists the valid ones).
        ValueError: ``n < 1``.
    """
    if env_name not in ENVS:
        raise KeyError(f"unknown maze environment {env_name!r}; valid: {sorted(ENVS)}")
    env = make(env_name)
    h, w = env.shape
    obs, states = reset_instances(env, n, seed)
    cells = np.asarray(positions(states.moves, w))
    grids = np.where(states.open_.reshape(n, h, w), ".", "#")
    records = []
    for i in range(n):
        k = int(states.n_moves[i])
        path = [divmod(int(c), w) for c in cells[i, :k]] + [(h - 1, w - 1)]
        records.append({
            **record(env, seed, i, obs[i]),
            "grid": ["".join(row) for row in grids[i]],
            "masks": states.masks[i].astype(int).tolist(),
            "path": [list(p) for p in path],
            "moves": "".join(MOVE_CHARS[m] for m in states.moves[i, :k]),
        })
    return records


for _name, _kw in ENVS.items():
    register(_name, "jaxcollab.envs.maze:MazeEnv", groups=("maze/all",), **_kw)

__all__ = ["ENVS", "MazeEnv", "export_instances"]
