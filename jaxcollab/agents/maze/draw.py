"""Pictures of a maze episode's state, and the replay of a scripted run's episodes.

The grid (walls dark, open cells light), the start and goal, the path walked so far and the
current position; each agent's picture greys the cells outside its half view
(``MazeState.masks``, "Narrowing the Collaboration Gap, Probably" §6: each agent sees a
complementary half of the maze). An LLM team's episode also shows, per step, its rounds of
conversation: each round's probability vector over the moves and the team's move
(:func:`rounds_svg`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from jaxcollab.core.family import Reel
from jaxcollab.core.picture import INK, UNSEEN, circle, line, rect, svg, text
from jaxcollab.envs.maze.env import ROLE_NAMES
from jaxcollab.envs.maze.generator import MOVE_CHARS, MOVE_DELTAS

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


def rounds_svg(record: Mapping, step: int) -> dict[str, str]:
    """``rounds``: the conversation of maze step ``step`` of an LLM episode (its transcript
    record's ``data.rounds``, :class:`jaxcollab.agents.maze.llm.MazeGame`): per round the
    speaker, its probability vector over ``d r u l`` as bars (``probs``; none read in the
    ``action`` setting or on a parse failure: the move only) with the round's move outlined,
    and the team's move (the last round's that gave one), as the run applied it. Every step
    has the picture (empty after the last move), so each step shows the same views."""
    rounds = [r for r in (record.get("data") or {}).get("rounds", []) if int(r["step"]) == step]
    bar_w, gap, top = 16, 30, 34
    parts = [text(4, 14, f"step {step} · the team's move by round", 12, font_weight="bold")]
    for i, r in enumerate(rounds):
        x = 4 + i * (4 * bar_w + gap)
        probs, move = r.get("probs"), r.get("move")
        parts.append(text(x, top - 8, f"round {int(r['round']) + 1} · agent{int(r['round']) % 2}",
                          10))
        for m, ch in enumerate(MOVE_CHARS):
            p = 0.0 if probs is None else float(probs[m])
            parts += [rect(x + m * bar_w, top, bar_w - 2, 60, "#eef1f5"),
                      rect(x + m * bar_w, top + 60 * (1 - p), bar_w - 2, 60 * p, "#2f6fb3",
                           class_="prob", data_p=f"{p:.3f}"),
                      text(x + m * bar_w + 7, top + 74, ch, 10, anchor="middle",
                           font_weight="bold" if m == move else None)]
            if m == move:
                parts.append(rect(x + m * bar_w, top, bar_w - 2, 60, "none", stroke=INK,
                                  stroke_width=2, class_="round-move"))
        if move is None:
            parts.append(text(x, top + 88, "no move read", 9))
    moves = [r["move"] for r in rounds if r.get("move") is not None]
    team = f"team's move: {MOVE_CHARS[moves[-1]]}" if moves else (
        "team's move: d (no move read)" if rounds else "no rounds at this step")
    parts.append(text(4, top + 104, team, 11, class_="team-move"))
    width = max(220, 8 + len(rounds) * (4 * bar_w + gap))
    return {"rounds": svg(width, top + 112, parts, f"step {step} rounds")}


def _llm_frames(env, run_dir: Path, name: str, keys, rows) -> list[list]:
    """The replayed states of LLM episodes ``rows``: each step's applied move from its
    transcript record (``data.moves``), on the maze its key draws.

    Raises:
        RuntimeError: a replayed episode ends otherwise than its transcript says.
    """
    from jaxcollab.analysis.replay import per_episode, replay
    from jaxcollab.llm.run import read_transcripts, transcript_path

    records = {int(r["episode"]): r for r in read_transcripts(transcript_path(run_dir, name))}
    mine = [records[int(e)] for e in rows]
    moves = np.zeros((len(rows), env.max_episode_steps, 2), np.int32)
    for b, r in enumerate(mine):
        taken = [MOVE_CHARS.index(c) for c in (r.get("data") or {}).get("moves", "")]
        moves[b, : len(taken)] = np.asarray(taken, np.int32)[:, None]
    final, states, _ = replay(env, keys, env.default_params, moves, batched_params=False)
    if [_ENDINGS[int(e)] for e in np.asarray(final.ending)] != [r["ending"] for r in mine]:
        raise RuntimeError(f"replayed {name} episodes end otherwise than their transcripts")
    return per_episode(states, final, [int(r["steps"]) for r in mine])


def reel(results: Mapping, run_dir: Path, n: int) -> list[Reel]:
    """The first ``n`` episodes of each environment of a finished maze run (episode ``e`` on
    key ``episode_keys(seed, episodes)[e // maze.rollouts]``): a scripted team's as
    :func:`jaxcollab.agents.maze.evaluate` played it, an LLM team's from its transcripts (the
    moves it applied, :func:`_llm_frames`; :func:`rounds_svg` draws its rounds); ``[]`` for
    other runs.

    Raises:
        RuntimeError: a replayed LLM episode ends otherwise than its transcript says.
    """
    from jaxcollab.agents.maze import FAMILY
    from jaxcollab.analysis.replay import played
    from jaxcollab.core.registry import make, resolve
    from jaxcollab.core.rollout import episode_keys

    cfg = dict(results.get("config") or {})
    if cfg.get("agent") not in (*FAMILY.teams, "llm") or not {"env", "episodes", "seed"} <= set(
            cfg):
        return []
    rollouts = int(((cfg.get("maze") or {}).get("rollouts")) or 1)
    keys = np.asarray(episode_keys(int(cfg["seed"]), int(cfg["episodes"])))
    rows = np.arange(min(n, int(cfg["episodes"]) * rollouts))
    out = []
    for name in resolve(str(cfg["env"])):
        env = make(name)
        if cfg["agent"] == "llm":
            frames = _llm_frames(env, run_dir, name, keys[rows // rollouts], rows)
        else:
            frames = played(env, FAMILY.team(cfg["agent"], cfg).policy(env),
                            keys[rows // rollouts], env.default_params, batched_params=False)
        out += [Reel(name, int(r), env, env.default_params, f)
                for r, f in zip(rows, frames, strict=True)]
    return out


__all__ = ["grid_svg", "pictures", "reel", "rounds_svg"]
