"""Pictures of a bomb episode's state, and the replay of a run's episodes for the report.

Each role's picture is drawn from that role's own observation tokens
(:func:`jaxcollab.envs.bomb.observe.observe`), the very row its agent reads, so the picture can
only show what the role perceives: Blind's wires, light and display are ``[unreadable]`` and
drawn grey (:data:`~jaxcollab.core.picture.UNSEEN`), Mute sees no board at all (its manual is
listed), Deaf sees colours but not the engraved plate (SANZARU §3, Table 1). The ``state``
picture joins Deaf's board with Blind's plate: everything on the bomb.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import jax
import numpy as np

from jaxcollab.core.family import Reel
from jaxcollab.core.picture import FILL, INK, UNSEEN, circle, line, rect, svg, text
from jaxcollab.envs.bomb import tables as T
from jaxcollab.envs.bomb.render import token_text

#: Every role's observation of a state, compiled once per environment (static: its message caps).
_OBSERVE = jax.jit(lambda env, state, params: env.observe(state, params), static_argnums=0)
_BOARD = ("light", "display", "display2", "light2", "wires", "keys", "pressed", "plate",
          "strip")


def _fill(tok: int) -> str:
    """The colour of a colour token; grey for unreadable or hidden, dark for ``[dark]``."""
    if T.COLOUR_TOK <= tok < T.DIGIT_TOK:
        return FILL[T.COLOURS[tok - T.COLOUR_TOK]]
    return "#333a44" if tok == T.DARK else UNSEEN


def _shown(tok: int) -> str:
    """A digit or glyph token as its character; ``?`` where the role cannot read it."""
    return "?" if tok in (T.UNREADABLE, T.HIDDEN) else token_text(tok).strip("[]")


def board_svg(o: Mapping[str, np.ndarray], title: str, manual: list[str] = ()) -> str:
    """One board as a role perceives it, from that role's observation sections ``o`` (the
    :class:`~jaxcollab.envs.bomb.observe.Layout` slices); ``manual``: lines listed below it."""
    hidden = int(o["light"][0]) == T.HIDDEN
    height = 190 + (14 * len(manual) + 10 if manual else 0)
    parts = [rect(0, 0, 380, height, "#f7f8fa", stroke=INK),
             text(10, 18, title, 13, font_weight="bold")]
    if hidden:
        parts += [rect(10, 28, 360, 150, UNSEEN, rx=6), text(190, 108, "board not seen", 14,
                                                          anchor="middle")]
    else:
        parts += [circle(40, 60, 18, _fill(int(o["light"][0])), stroke=INK,
                         class_="light"), text(40, 92, "light", 10, anchor="middle")]
        digit = int(o["display"][0])
        parts += [rect(70, 42, 44, 36, UNSEEN if digit == T.UNREADABLE else "#10261a", rx=4),
                  text(92, 68, _shown(digit), 22, fill="#7dff9b", anchor="middle",
                       class_="display"), text(92, 92, "display", 10, anchor="middle")]
        for k, name in enumerate(("display2", "light2")):
            tok = int(o[name][0])
            if tok != T.ABSENT:
                parts.append(text(130 + 50 * k, 64, f"{name}: {_shown(tok)}" if k == 0 else "",
                                  10))
                if k == 1:
                    parts.append(circle(200, 60, 8, _fill(tok), stroke=INK))
        plate = int(o["plate"][0])
        parts += [rect(300, 36, 64, 48, UNSEEN if plate == T.UNREADABLE else "#d9c9a3",
                       stroke=INK, rx=4),
                  text(332, 70, _shown(plate), 26, anchor="middle", class_="plate"),
                  text(332, 96, "plate", 10, anchor="middle")]
        for i, tok in enumerate(map(int, o["wires"])):
            if tok == T.ABSENT:
                continue
            y = 112 + 10 * i
            cut = tok == T.CUT_MARK
            parts += [text(14, y + 4, str(i + 1), 9),
                      line(26, y, 280, y, "#5f6b7a", stroke_width=7,
                           stroke_dasharray="110 34" if cut else None),  # outline: white wires
                      line(26, y, 280, y, _fill(tok) if not cut else "#8892a0", stroke_width=5,
                           stroke_dasharray="110 34" if cut else None,
                           class_="wire cut" if cut else "wire")]
        for i, (tok, pressed) in enumerate(zip(map(int, o["keys"]), map(int, o["pressed"]),
                                               strict=True)):
            if tok == T.ABSENT:
                continue
            x, y = 296 + 36 * (i % 2), 110 + 34 * (i // 2)
            parts += [rect(x, y, 30, 28, "#8fa3b8" if pressed == T.YES else "#e8edf2",
                           stroke=INK, rx=4),
                      text(x + 15, y + 19, _shown(tok), 14, anchor="middle", class_="key")]
        glyphs = [token_text(int(t)) for t in o["strip"] if int(t) != T.ABSENT]
        if glyphs:
            parts.append(text(130, 92, "strip " + " ".join(glyphs), 10))
    parts += [text(10, 200 + 14 * k, row, 10, font_family="monospace")
              for k, row in enumerate(manual)]
    return svg(380, height, parts, title)


def _manual(o: Mapping[str, np.ndarray]) -> list[str]:
    from jaxcollab.envs.bomb.render import _manual_lines

    return [row.strip() for row in _manual_lines(o)[1:]]


def pictures(env, state, params) -> dict[str, str]:
    """The bomb's pictures of one host state: ``state`` (the whole board, the round and the
    ending), then ``deaf``, ``mute`` and ``blind``, each from its observation
    (module docstring)."""
    obs = np.asarray(jax.device_get(_OBSERVE(env, state, params)))
    rows = [{k: obs[r][s] for k, s in env.layout.slices().items()} for r in range(T.N_AGENTS)]
    truth = {k: rows[T.DEAF][k] for k in _BOARD} | {"plate": rows[T.BLIND]["plate"]}
    head = (f"round {int(state.round) + 1} · progress {int(state.progress)} · "
            f"{T.ENDING_NAMES[int(state.ending)]}")
    out = {"state": board_svg(truth, f"bomb · {head}")}
    for r, name in enumerate(T.ROLE_NAMES):
        out[name] = board_svg(rows[r], name, _manual(rows[r]) if r == T.MUTE else [])
    return out


def reel(results: Mapping, run_dir: Path, n: int) -> list[Reel]:
    """The first ``n`` episodes of each variant of a finished bomb rollout run (a scripted
    team from its seeds, an LLM team from its transcripts, as
    :func:`jaxcollab.agents.bomb.analysis.analyze` replays them); ``[]`` for a run it cannot
    replay (not an ``eval/rollout.py`` run, or a bank run).

    Raises:
        RuntimeError: a replayed LLM episode ends otherwise than its transcript says.
    """
    from jaxcollab.agents.bomb import _policy
    from jaxcollab.agents.bomb.analysis import _actions, _config, _episodes
    from jaxcollab.agents.bomb.config import BombConfig
    from jaxcollab.analysis.replay import per_episode, played, replay
    from jaxcollab.core.config import typed
    from jaxcollab.core.errors import ConfigValueError
    from jaxcollab.core.registry import resolve
    from jaxcollab.llm.run import read_transcripts, transcript_path

    try:
        cfg = _config(results, run_dir)
    except ConfigValueError:
        return []
    if typed(BombConfig, cfg).bank:
        return []
    names = resolve(str(cfg["env"]))
    env, keys, params, _, idx, ep = _episodes(names, cfg)
    rows = np.flatnonzero(ep < n)
    pick = lambda tree: jax.tree.map(lambda x: np.asarray(x)[rows], tree)  # noqa: E731
    if cfg["agent"] == "llm":
        records = {(name, int(r["episode"])): r for name in names
                   for r in read_transcripts(transcript_path(run_dir, name))}
        mine = [records[(names[idx[i]], int(ep[i]))] for i in rows]
        actions = jax.tree.map(lambda *x: np.stack(x), *[_actions(env, r) for r in mine])
        final, states, _ = replay(env, keys[rows], pick(params), actions)
        ends = [T.ENDING_NAMES[int(e)] for e in np.asarray(final.ending)]
        if ends != [r["ending"] for r in mine]:
            raise RuntimeError("replayed episodes end otherwise than their transcripts")
        frames = per_episode(states, final, [int(r["steps"]) for r in mine])
    else:
        frames = played(env, _policy(cfg["agent"], env), keys[rows], pick(params))
    return [Reel(names[idx[i]], int(ep[i]), env, jax.tree.map(lambda x, i=i: np.asarray(x)[i],
                                                               params), f)
            for i, f in zip(rows, frames, strict=True)]


__all__ = ["FILL", "board_svg", "pictures", "reel"]
