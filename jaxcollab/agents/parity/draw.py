"""Pictures of a chained-parity episode's state: the bits, who sees which, the messages by round.

Agent 0 ("Bob") sees the odd-indexed bits, agent 1 ("Alice") the even-indexed ones
("Narrowing the Collaboration Gap, Probably", §3 and App. E); each agent's picture greys the
bits it does not see. The ``state`` picture adds p* and the label.
"""

from __future__ import annotations

import numpy as np

from jaxcollab.core.picture import INK, UNSEEN, rect, svg, text

BOX = 26


def bits_svg(state, seen: int | None, title: str) -> str:
    """The bits and messages of one host state; ``seen``: the agent (0 or 1) whose view is
    drawn (the other agent's bits grey), ``None``: every bit, p* and the label."""
    bits, msgs = np.asarray(state.bits), np.asarray(state.messages)
    parts = [text(4, 14, title, 12, font_weight="bold")]
    for j, b in enumerate(bits):
        mine = seen is None or j % 2 == seen  # 0-based j: agent 0 sees 1-based odd positions
        parts += [rect(4 + j * BOX, 22, BOX - 2, BOX - 2, "#eef2f6" if mine else UNSEEN,
                       stroke=INK, class_="bit" if mine else "bit unseen"),
                  text(4 + j * BOX + BOX / 2 - 1, 40, int(b) if mine else "?", 13,
                       anchor="middle")]
    row = [f"r{r + 1}: {int(m)}" for r, m in enumerate(msgs) if m >= 0]
    parts.append(text(4, 66, "messages " + ("  ".join(row) if row else "none yet"), 11,
                      class_="messages"))
    if seen is None:
        parts.append(text(4, 84, f"p* = {float(state.pstar):.3f} · label {int(state.label)} · "
                          f"round {int(state.round)}", 11))
    return svg(max(8 + len(bits) * BOX, 260), 92, parts, title)


def pictures(env, state, params) -> dict[str, str]:
    """Parity's pictures of one host state: ``state``, then ``bob`` (agent 0) and ``alice``
    (agent 1)."""
    return {"state": bits_svg(state, None, "parity"), "bob": bits_svg(state, 0, "bob"),
            "alice": bits_svg(state, 1, "alice")}


__all__ = ["bits_svg", "pictures"]
