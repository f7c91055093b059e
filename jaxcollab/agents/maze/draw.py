"""Pictures of a maze episode's state, and the replay of a scripted run's episodes.

The grid (walls dark, open cells light), the start and goal, the path walked so far and the
current position; each agent's picture greys the cells outside its half view
(``MazeState.masks``, "Narrowing the Collaboration Gap, Probably" §6: each agent sees a
complementary half of the maze).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from jaxcollab.core.family import Reel
from jaxcollab.core.picture import INK, UNSEEN, circle, line, rect, svg, text
from jaxcollab.envs.maze.env import ROLE_NAMES
from jaxcollab.envs.maze.generator import MOVE_DELTAS

CELL = 28
_ENDINGS = ("running", "success", "wrong_move", "out_of_steps")


def _walk(state, width: int) -> list[int]:
    """The flat cells visited: the start, then one per move made (along the unique path)."""
    cells = [0]
    for m in np.asarray(state.moves)[: int(state.step)]:
        dr, dc = MOVE_DELTAS[int(m)]
        cells.append(cells[-1] + int(dr) * width + int(dc))
    return cells


def grid_svg(env, state, mask: np.ndarray | None, title: str) -> str:
    """The maze of one host state; ``mask`` bool ``[C]`` the cells a role sees (``None``:
    every cell), the others grey."""
    h, w = env.shape
    open_ = np.asarray(state.open_)
    parts = [text(4, 14, title, 12, font_weight="bold")]
    for c in range(h * w):
        r, col = divmod(c, w)
        seen = mask is None or bool(mask[c])
        fill = ("#fdfdfd" if open_[c] else "#36404d") if seen else UNSEEN
        parts.append(rect(col * CELL, 20 + r * CELL, CELL, CELL, fill, stroke="#aab3bf",
                          class_="cell" if seen else "cell unseen"))
    centre = lambda c: (c % w * CELL + CELL / 2, 20 + c // w * CELL + CELL / 2)  # noqa: E731
    walk = _walk(state, w)
    for a, b in zip(walk, walk[1:], strict=False):
        parts.append(line(*centre(a), *centre(b), "#2f6fb3", stroke_width=4, class_="path"))
    parts += [text(*centre(0), "S", 11, anchor="middle", dy=4),
              text(*centre(h * w - 1), "G", 11, anchor="middle", dy=4),
              circle(*centre(int(state.pos)), CELL / 3, "#e8c31a", stroke=INK, class_="pos")]
    return svg(w * CELL, 20 + h * CELL, parts, title)


def pictures(env, state, params) -> dict[str, str]:
    """The maze's pictures of one host state: ``state`` (every cell; step and ending), then
    ``agent0`` and ``agent1`` (each agent's half view)."""
    head = f"step {int(state.step)} · {_ENDINGS[int(state.ending)]}"
    out = {"state": grid_svg(env, state, None, f"maze · {head}")}
    for k, name in enumerate(ROLE_NAMES):
        out[name] = grid_svg(env, state, np.asarray(state.masks)[k], name)
    return out


def reel(results: Mapping, run_dir: Path, n: int) -> list[Reel]:
    """The first ``n`` episodes of each environment of a finished scripted maze run (episode
    ``e`` on key ``episode_keys(seed, episodes)[e // maze.rollouts]``, as
    :func:`jaxcollab.agents.maze.evaluate` played it); ``[]`` for other runs (LLM maze teams
    decide by round, not by replayable joint actions)."""
    from jaxcollab.agents.maze import FAMILY
    from jaxcollab.analysis.replay import played
    from jaxcollab.core.registry import make, resolve
    from jaxcollab.core.rollout import episode_keys

    cfg = dict(results.get("config") or {})
    if cfg.get("agent") not in FAMILY.teams or not {"env", "episodes", "seed"} <= set(cfg):
        return []
    rollouts = int(((cfg.get("maze") or {}).get("rollouts")) or 1)
    keys = np.asarray(episode_keys(int(cfg["seed"]), int(cfg["episodes"])))
    rows = np.arange(min(n, int(cfg["episodes"]) * rollouts))
    out = []
    for name in resolve(str(cfg["env"])):
        env = make(name)
        policy = FAMILY.team(cfg["agent"], cfg).policy(env)
        frames = played(env, policy, keys[rows // rollouts], env.default_params,
                        batched_params=False)
        out += [Reel(name, int(r), env, env.default_params, f)
                for r, f in zip(rows, frames, strict=True)]
    return out


__all__ = ["grid_svg", "pictures", "reel"]
