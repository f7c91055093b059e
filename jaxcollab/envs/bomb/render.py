"""Host-side text of a role's observation, decoded from the same tokens the JAX agents read, so
tokens and text always state the same facts (our style, after SANZARU Table 1:
``LIGHT [green]``,
``WIRES 1:[yellow] 2:[green]``, ``[unreadable]``, gestures as emoji (a blank as ``?``), the chat
history as ``CHAT r<round>:`` lines, oldest first, the plate glyph as a
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
    """Symbol tokens → emoji glyphs separated by spaces; a blank (a gesture as Blind gets it)
    is ``?`` (SANZARU Table 1: ``Mute: [? ?]``)."""
    return " ".join("?" if t == T.BLANK else T.GESTURES[int(t) - T.SYMBOL_TOK - 1][1]
                    for t in tokens if t != T.PAD)


def _numbered(tokens) -> str:
    return " ".join(f"{i + 1}:{token_text(t)}" for i, t in enumerate(tokens) if t != T.ABSENT)


def _board_lines(o: dict[str, np.ndarray]) -> list[str]:
    lines = [f"LIGHT {token_text(o['light'][0])}", f"DISPLAY {token_text(o['display'][0])}"]
    for part in ("display2", "light2"):
        if o[part][0] != T.ABSENT:
            lines.append(f"{part.upper()} {token_text(o[part][0])}")
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


def _message_lines(meta: np.ndarray, bodies: dict[str, np.ndarray], me: int, prefix: str = ""
                   ) -> list[str]:
    """One line per shown message: ``meta`` ``[2, 3]`` (speech, gesture recipient tokens per
    sender), ``bodies`` per channel ``[3, L]``."""
    lines = []
    shows = {"speech": lambda t: f'"{speech_text(t)}"', "gesture": gesture_text}
    for (name, body), row in zip(bodies.items(), meta, strict=True):
        for sender, to in enumerate(row):
            if to == T.PAD:
                continue
            if sender == me:
                target = "everyone" if to == T.ROLE_TOK + me else token_text(to)
                lines.append(f"{prefix}YOU SENT ({name}) to {target}: "
                             f"{shows[name](body[sender])}")
            else:
                lines.append(f"{prefix}FROM {T.ROLE_NAMES[sender]} ({name}): "
                             f"{shows[name](body[sender])}")
    return lines


def _chat_lines(o: dict[str, np.ndarray], me: int, layout: Layout) -> list[str]:
    """The chat history, oldest round first: ``CHAT r<n>: FROM ...`` / ``YOU SENT ...``."""
    n = T.CHAT_ROUNDS
    meta = np.stack([o["chat_speech_meta"].reshape(n, T.N_AGENTS),
                     o["chat_gesture_meta"].reshape(n, T.N_AGENTS)], 1)
    speech = o["chat_speech"].reshape(n, T.N_AGENTS, layout.speech_bytes)
    gesture = o["chat_gesture"].reshape(n, T.N_AGENTS, layout.gesture_symbols)
    lines = []
    for k, tok in enumerate(o["chat_round"]):
        if tok != T.PAD:
            lines += _message_lines(meta[k], {"speech": speech[k], "gesture": gesture[k]}, me,
                                    f"CHAT r{int(tok) - T.NUM_TOK + 1}: ")
    return lines


def _inbox_lines(o: dict[str, np.ndarray], me: int, layout: Layout) -> list[str]:
    meta = np.stack([o["speech_meta"], o["gesture_meta"]])
    bodies = {"speech": o["speech"].reshape(T.N_AGENTS, layout.speech_bytes),
              "gesture": o["gesture"].reshape(T.N_AGENTS, layout.gesture_symbols)}
    lines = _message_lines(meta, bodies, me)
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
    return "\n".join(lines + _chat_lines(o, role, layout) + _inbox_lines(o, role, layout))
