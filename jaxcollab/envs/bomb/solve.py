"""Host-side reference solution of an episode (used by the instance exporter and tests).

Plain Python over the generated state, independent of the JAX rule code: it replays the manual
and the family mechanics (shuffle rotation, flashing slots) on lists.
"""

from __future__ import annotations

import numpy as np

from jaxcollab.envs.bomb import tables as T


def rotate(colours: list[int], cut: list[bool]) -> list[int]:
    """Shuffle: each surviving (present, uncut) wire moves to the next surviving position."""
    alive = [i for i, c in enumerate(colours) if c >= 0 and not cut[i]]
    out = list(colours)
    for j, pos in enumerate(alive):
        out[alive[(j + 1) % len(alive)]] = colours[pos]
    return out


def solve(state, params) -> list[int]:
    """The required wire positions (cuts) or key positions (code), 0-based, in order.

    Flashing variants: cut ``i`` lands in round ``i`` (light-cycle slot ``i``), which is how the
    oracle plays with Blind acting every round.

    Raises:
        ValueError: the state has no unique answer at some stage (a generator bug).
    """
    p = {k: int(np.asarray(v)) for k, v in params.items() if k != "turn_order"}
    colours = [int(c) for c in np.asarray(state.wire_colour)]
    key_seq = [int(k) for k in np.asarray(state.key_seq)]
    manual = [int(v) for v in np.asarray(state.manual_val)]
    if p["task"] == T.TASK_CODE:
        code = manual[key_seq[0]]
        keypad = [int(d) for d in np.asarray(state.keypad)]
        return [keypad.index(code // 10), keypad.index(code % 10)]
    cut, out = [False] * T.MAX_WIRES, []
    for stage in range(p["steps"]):
        want = manual[key_seq[stage]]
        hits = [i for i, c in enumerate(colours) if c == want and not cut[i]]
        if len(hits) != 1:
            raise ValueError(f"stage {stage}: colour {want} is on {len(hits)} uncut wires")
        out.append(hits[0])
        cut[hits[0]] = True
        if p["shuffle"]:
            colours = rotate(colours, cut)
    return out
