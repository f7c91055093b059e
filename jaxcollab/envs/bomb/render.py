"""Host-side text of a role's observation, decoded from the same tokens the JAX agents read, so
tokens and text always state the same facts (spec style: ``LIGHT [green]``,
``WIRES 1:[yellow] 2:[green]``, ``[unreadable]``, gestures as emoji, the plate glyph as a
character). Pure Python; never runs under ``jit``.
"""

from __future__ import annotations

import numpy as np

from jaxcollab.envs.bomb import tables as T
from jaxcollab.envs.bomb.observe import Layout

_FIXED = {T.UNREADABLE: "[unreadable]", T.CUT_MARK: "[CUT]", T.DARK: "[dark]",
          T.YES: "yes", T.NO: "no"}


def token_text(tok: int) -> str:
    """One board/manual token as text (``[green]``, ``[3]``, ``ᚠ``, ``[unreadable]``, ...)."""
    tok = int(tok)
    if tok in _FIXED:
        return _FIXED[tok]
    if T.COLOUR_TOK <= tok < T.DIGIT_TOK:
        return f"[{T.COLOURS[tok - T.COLOUR_TOK]}]"
    if T.DIGIT_TOK <= tok < T.PLATE_TOK:
        return f"[{tok - T.DIGIT_TOK}]"
    if T.PLATE_TOK <= tok < T.STRIP_TOK:
        return T.PLATE_GLYPHS[tok - T.PLATE_TOK]
    if T.STRIP_TOK <= tok < T.STRIP_TOK + len(T.STRIP_GLYPHS):
        return T.STRIP_GLYPHS[tok - T.STRIP_TOK]
    if T.ROLE_TOK <= tok < T.MODE_TOK:
        return T.ROLE_NAMES[tok - T.ROLE_TOK]
    if T.NUM_TOK <= tok < T.NUM_TOK + 32:
        return str(tok - T.NUM_TOK)
    raise ValueError(f"token {tok} is not a board, manual or header token")


def speech_text(tokens: np.ndarray) -> str:
    """Byte tokens → the UTF-8 text (undecodable bytes replaced)."""
    data = bytes(int(t) - T.BYTE_TOK for t in tokens if t != T.PAD)
    return data.decode("utf-8", errors="replace")


def gesture_text(tokens: np.ndarray) -> str:
    """Symbol tokens → emoji glyphs separated by spaces."""
    return " ".join(T.GESTURES[int(t) - T.SYMBOL_TOK - 1][1] for t in tokens if t != T.PAD)


def _numbered(tokens) -> str:
    return " ".join(f"{i + 1}:{token_text(t)}" for i, t in enumerate(tokens) if t != T.ABSENT)


def _board_lines(o: dict[str, np.ndarray]) -> list[str]:
    lines = [f"LIGHT {token_text(o['light'][0])}", f"DISPLAY {token_text(o['display'][0])}"]
    if o["display2"][0] != T.ABSENT:
        lines.append(f"DISPLAY2 {token_text(o['display2'][0])}")
    lines.append(f"WIRES {_numbered(o['wires'])}")
    if o["keys"][0] != T.ABSENT:
        keys = " ".join(f"{i + 1}:{token_text(k)}{'(pressed)' if p == T.YES else ''}"
                        for i, (k, p) in enumerate(zip(o["keys"], o["pressed"], strict=True)))
        lines.append(f"KEYPAD {keys}")
    lines.append(f"PLATE {token_text(o['plate'][0])}")
    if o["strip"][0] != T.ABSENT:
        lines.append("STRIP " + " ".join(token_text(t) for t in o["strip"]))
    past = o["history"].reshape(T.MAX_ROUNDS, 2)
    seen = [f"r{r + 1}: LIGHT {token_text(a)} DISPLAY {token_text(b)}"
            for r, (a, b) in enumerate(past) if a != T.PAD]
    if seen:
        lines.append("HISTORY " + " | ".join(seen))
    return lines


def _manual_lines(o: dict[str, np.ndarray]) -> list[str]:
    code = o["manual_mode"][1] - T.TASK_TOK == T.TASK_CODE
    key_mode = o["manual_mode"][0] - T.MODE_TOK
    head = {T.KEY_LIGHT: "LIGHT", T.KEY_GLYPH: "PLATE", T.KEY_FLASH: "FLASH"}[int(key_mode)]
    lines = ["MANUAL"]
    for label, col, v0, v1 in o["manual"].reshape(T.MANUAL_ENTRIES, 4):
        if label == T.PAD:
            continue
        where = f"{head} {token_text(label)}" + (f" DISPLAY {token_text(col)}" if col != T.PAD
                                                 else "")
        answer = (f"CODE {token_text(v0)} {token_text(v1)}" if code else f"CUT {token_text(v0)}")
        lines.append(f"  {where} -> {answer}")
    for stage, pick in enumerate(o["picks"]):
        if pick != T.PAD:
            lines.append(f"  CUT {stage + 1} USES FLASH {int(pick) - T.NUM_TOK + 1}")
    return lines


def _message_lines(o: dict[str, np.ndarray], me: int, layout: Layout) -> list[str]:
    lines = []
    channels = (("speech", layout.speech_bytes, lambda t: f'"{speech_text(t)}"'),
                ("gesture", layout.gesture_symbols, gesture_text))
    for name, width, show in channels:
        body = o[name].reshape(T.N_AGENTS, width)
        for sender, meta in enumerate(o[f"{name}_meta"]):
            if meta == T.PAD:
                continue
            if sender == me:
                lines.append(f"YOU SENT ({name}) to {token_text(meta)}: {show(body[sender])}")
            else:
                lines.append(f"FROM {T.ROLE_NAMES[sender]} ({name}): {show(body[sender])}")
    for flag, text in zip(o["feedback"], ("your speech bounced (not delivered)",
                                         "your gesture bounced (not delivered)",
                                         "your action was rejected (only Blind acts)"),
                          strict=True):
        if flag == T.YES:
            lines.append(f"NOTICE {text}")
    return lines


def render_tokens(tokens: np.ndarray, layout: Layout) -> str:
    """One role's observation tokens ``[layout.length]`` → text.

    Raises:
        ValueError: a token outside the vocabulary section it appears in.
    """
    o = {name: np.asarray(tokens)[sl] for name, sl in layout.slices().items()}
    role = int(o["header"][0]) - T.ROLE_TOK
    turn = " · YOUR TURN" if o["header"][3] == T.YES else ""
    now, budget = (int(t) - T.NUM_TOK for t in o["header"][1:3])
    lines = [f"ROLE {T.ROLE_NAMES[role]} · ROUND {now + 1}/{budget}{turn}"]
    if role != T.MUTE:
        lines += _board_lines(o)
    else:
        lines += _manual_lines(o)
    return "\n".join(lines + _message_lines(o, role, layout))
