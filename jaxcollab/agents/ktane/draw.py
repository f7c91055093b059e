"""Pictures of a Keep-Talking bomb's state, and the replay of a scripted run's episodes.

One panel per module slot, grouped by face (GPTNT §4.2.1: modules on the bomb's faces, one
face in view, one module zoomed): the module's title, its solved light and its face
(:func:`jaxcollab.agents.ktane.faces.face`: wires, button and strip, keypad glyphs, Simon's
lights, Who's on First, Memory, the Morse light, Complicated Wires, the Wire Sequence panel,
the maze with its markers, password columns), with the timer, the strikes and the face in view
(the zoomed module's panel outlined thick). The Defuser's picture greys every module not on
the face in view and draws the face of the zoomed module only (what its observation holds);
the Expert sees no bomb (GPTNT §4: the Expert only reads the manual), so its picture is the
bomb greyed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import jax
import numpy as np

from jaxcollab.agents.ktane.faces import FACE_H, FACE_W, face
from jaxcollab.core.family import Reel
from jaxcollab.core.picture import INK, UNSEEN, circle, rect, svg, text
from jaxcollab.envs.ktane import tables as T

W, H = FACE_W + 12, FACE_H + 30


def bomb_svg(env, state, params, role: str | None) -> str:
    """The bomb of one host state under ``params`` (its ruleset) as ``role`` perceives it
    (``None``: everything; module docstring)."""
    board, rules = env.board, jax.tree.map(np.asarray, params.rules)
    face_, zoom = int(state.face), int(state.zoom)
    cols = min(3, board.n_slots)
    rows = -(-board.n_slots // cols)
    secs = int(state.time_left_cs) // 100
    lines = (f"{role or 'bomb'} · time {secs // 60}:{secs % 60:02d} · strikes "
             f"{int(state.strikes)} · {T.OUTCOMES[int(state.outcome)]}",
             f"face {T.FACES[face_]} in view · zoom {zoom + 1 if zoom >= 0 else '–'}")
    head = f"{lines[1]} · {lines[0]}"
    parts = [text(4, 14, lines[0], 12, font_weight="bold"), text(4, 30, lines[1], 11)]
    for i, kind in enumerate(board.types):
        x, y = 4 + (i % cols) * (W + 6), 38 + (i // cols) * (H + 6)
        in_view = int(board.slot_face[i]) == face_
        seen = role is None or (role == "defuser" and in_view)
        parts.append(rect(x, y, W, H, "#f7f8fa" if seen else UNSEEN, stroke=INK,
                          stroke_width=3 if i == zoom else 1, rx=6,
                          class_="module zoomed" if i == zoom else "module"))
        parts.append(text(x + 8, y + 16, f"{i + 1}. {kind.title} ({T.FACES[board.slot_face[i]]})",
                          11, font_weight="bold"))
        parts.append(circle(x + W - 12, y + 11, 6, "#2e9e4f" if state.solved[i] else "#e8edf2",
                            stroke=INK, class_="solved" if state.solved[i] else "unsolved"))
        if role is None or (role == "defuser" and i == zoom):
            m = jax.tree.map(np.asarray, kind.layout.unpack(np.asarray(state.modules[i])))
            parts += face(kind.name, kind.describe(m, rules), x + 6, y + 24)
    return svg(max(4 + cols * (W + 6), 300), 42 + rows * (H + 6), parts, head)


def pictures(env, state, params) -> dict[str, str]:
    """The Keep-Talking pictures of one host state: ``state``, then ``defuser`` and
    ``expert`` (module docstring)."""
    return {"state": bomb_svg(env, state, params, None),
            **{r: bomb_svg(env, state, params, r) for r in env.role_names}}


def reel(results: Mapping, run_dir: Path, n: int) -> list[Reel]:
    """The first ``n`` episodes of each environment of a finished Keep-Talking rollout run
    (keys ``episode_keys(seed, episodes)``, its ruleset): a scripted team's as
    :func:`jaxcollab.agents.ktane.run_env` played them, an LLM team's from its transcripts (each
    turn's action on the step it landed on, sync or async, as
    :func:`jaxcollab.agents.ktane.analysis.analyze` replays them); ``[]`` for other runs.

    Raises:
        RuntimeError: a replayed LLM episode ends otherwise than its transcript says.
    """
    from jaxcollab.agents.ktane import TEAMS, _rules, scripted
    from jaxcollab.agents.ktane.analysis import _llm
    from jaxcollab.agents.ktane.config import KtaneConfig
    from jaxcollab.analysis.replay import per_episode, played
    from jaxcollab.core.config import typed
    from jaxcollab.core.registry import make, resolve
    from jaxcollab.core.rollout import episode_keys
    from jaxcollab.llm.run import read_transcripts, transcript_path

    cfg = dict(results.get("config") or {})
    if cfg.get("agent") not in (*TEAMS, "llm") or not {"env", "episodes", "seed"} <= set(cfg):
        return []
    rules = _rules(cfg)
    keys = np.asarray(episode_keys(int(cfg["seed"]), int(cfg["episodes"])))[:n]
    out = []
    for name in resolve(str(cfg["env"])):
        env = make(name)
        params = env.ruleset_params(rules)
        if cfg["agent"] == "llm":
            steps = {int(r["episode"]): int(r["steps"])
                     for r in read_transcripts(transcript_path(run_dir, name))}
            final, states, _, _ = _llm(env, name, run_dir, keys, params, len(keys),
                                       typed(KtaneConfig, cfg).ktane.mode)
            frames = per_episode(states, final, [steps[e] for e in range(len(keys))])
        else:
            frames = played(env, scripted(cfg["agent"], rules).policy(env), keys, params,
                            batched_params=False)
        out += [Reel(name, e, env, params, f) for e, f in enumerate(frames)]
    return out


__all__ = ["bomb_svg", "pictures", "reel"]
