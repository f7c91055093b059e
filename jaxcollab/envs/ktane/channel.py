"""GPTNT's Defuser channel as text: what the Defuser of an LLM team sees of one observation row.

The environment's own text view (:func:`~jaxcollab.envs.ktane.render.tokens_to_text`, what
scripted teams read and ``ktane.view=full`` shows) lists everything the row holds. GPTNT's
Defuser sees the bomb instead (GPTNT §4.2.1, App. D.3, F.3), and this view keeps to that:

* no outcome field: the header's ``last strike|ok|invalid|…`` token is dropped, so what an
  action did has to be read off the strike counter, the modules' solved lights and the module
  itself (GPTNT F.3: models are not told the consequences of their actions);
* no partner phrase: messages travel only through the players' queues (GPTNT C.1.2), so the
  row's ``expert says|said …`` block is dropped;
* the Morse Code light and Simon Says' buttons as timed frames: the :data:`FRAMES` frames of
  the last four seconds, :data:`FRAME_S` apart, at the game time the observation is taken
  (GPTNT App. C.2.4, D.3), instead of the pre-split letters or the listed sequence;
* the Maze as a drawn 6 × 6 grid instead of coordinates.

Simon Says' timing follows GPTNT App. C.2.3: the sequence repeats 1 s after its last flash; a
zoom into the module restarts it from its first flash at once; a press on a button stops it,
and it starts again from its first flash :data:`SIMON_PRESS_PAUSE_S` (the game's original 5 s)
after the press, or :data:`SIMON_STAGE_PAUSE_S` (1 s) after the press that completes a stage
(the new, longer sequence). That is our reading of the appendix's "when a player correctly
clicks the next beep, the game originally waits 2 seconds to loop again, this is also changed
to 1 second" (the stage's last press) and "when a player clicks on one of the simon buttons the
time delay to the next sequence is reset to the original 5 seconds" (any other press). A wrong
press is a press: its strike restarts the sequence from the start, after the same 5 s. The
flash length is ours (the paper does not give it): each flash lights one frame and is followed
by one dark frame, so one whole loop (at most 13 frames) fits in the 16-frame window. The
caller keeps Simon's schedule (:func:`simon_schedule` updates it from the rows before and after
each Defuser action): a tuple of segments ``(since_s, start_s, flashes)``, oldest first — from
game time ``since_s`` the loop of the stage's first ``flashes`` colours (None: the row's
current ones) plays from ``start_s`` (dark until then); frames before the first segment are
dark. The Morse light follows the module's timing (one dot unit = one frame); its loop starts
at the letter the module's ``phase`` names at game time 0. A solved module's light stays dark.
Simon's ``entered`` count is not shown: the game shows no such counter.

Everything here is host-side text from one int32 observation row; nothing reads hidden state.
"""

from __future__ import annotations

import re

import numpy as np

from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane import vocab as V
from jaxcollab.envs.ktane.modules.base import VIEW_LEN
from jaxcollab.envs.ktane.modules.morse import signal
from jaxcollab.envs.ktane.observe import FACE_LEN, HEADER_LEN
from jaxcollab.envs.ktane.render import tokens_to_text

#: Frames of a flashing module per observation, and seconds between frames (GPTNT App. C.2.4:
#: a 16-frame ring buffer filled every 0.25 s, the length of a Morse dot).
FRAMES, FRAME_S = 16, 0.25
#: Dark frames after a Simon loop's last flash's dark frame (1 s from its last flash, with it).
SIMON_PAUSE_FRAMES = 3
#: Seconds from a press on a Simon button to the next loop's first flash, and from the press
#: that completes a stage (GPTNT App. C.2.3: the original 5 s, and 1 s instead of 2 s).
SIMON_PRESS_PAUSE_S, SIMON_STAGE_PAUSE_S = 5.0, 1.0
#: A Simon schedule (module docstring) whose loop started at game time 0: the default.
SIMON_FROM_ZERO = ((-np.inf, 0.0, None),)
#: Header tokens kept: timer, strikes, face, zoom (the ``last <result> |`` tail is dropped).
_HEADER_KEPT = HEADER_LEN - 3
#: Header positions of the strike digit and the zoom flag (:func:`~.observe.header`).
_STRIKES, _ZOOM = 8, 16
_FACE = slice(HEADER_LEN, HEADER_LEN + FACE_LEN)
_VIEW = slice(HEADER_LEN + FACE_LEN, HEADER_LEN + FACE_LEN + VIEW_LEN)
_LETTER = {pattern: letter for letter, pattern in T.MORSE_CODE.items()}
_LABEL = re.compile(r"\[[A-Z]\] ?")
_GRID_LEGEND = ("W = the white light, R = the red triangle, G = a green circle, . = an empty "
                "cell; top row first")


def frame_times(time_s: float, frames: int = FRAMES) -> np.ndarray:
    """float64 ``[frames]`` game times (seconds) of the frames ending at ``time_s``, oldest
    first, :data:`FRAME_S` apart."""
    return time_s - FRAME_S * np.arange(frames - 1, -1, -1)


def _index(t: np.ndarray) -> np.ndarray:
    """Frame index of game time ``t`` (robust to float error of multiples of FRAME_S)."""
    return np.floor(np.asarray(t) / FRAME_S + 1e-6).astype(np.int64)


def morse_frames(loop: list[str], times: np.ndarray, solved: bool = False) -> list[str]:
    """``on`` / ``off`` at each of ``times``: the light of the module whose view lists ``loop``
    (letter patterns and ``pause`` from the letter shown at game time 0, as
    :func:`~jaxcollab.envs.ktane.modules.morse.view` writes it).

    Raises:
        ValueError: ``loop`` holds no ``pause`` or an unknown pattern.
    """
    if solved:
        return ["off"] * len(times)
    if "pause" not in loop or any(p not in _LETTER for p in loop if p != "pause"):
        raise ValueError(f"not a Morse light loop: {loop!r}")
    p = loop.index("pause")
    word = "".join(_LETTER[x] for x in loop[p + 1:] + loop[:p])
    light = signal(word)
    phase = (len(word) - p) % (len(word) + 1)  # the letter (or the pause) at game time 0
    gaps = T.MORSE_WORD_GAP - T.MORSE_LETTER_GAP
    start = (len(light) - T.MORSE_WORD_GAP if phase == len(word) else
             len(signal(word[:phase])) - gaps if phase else 0)
    return ["on" if light[(start + i) % len(light)] else "off" for i in _index(times)]


def simon_frames(colors: list[str], times: np.ndarray, solved: bool = False,
                 schedule=SIMON_FROM_ZERO) -> list[str]:
    """The lit colour (or ``dark``) at each of ``times``: the stage's ``colors`` looping as
    ``schedule`` says (module docstring; default: a loop started at game time 0)."""
    out = []
    for t in np.asarray(times, float):
        seg = [x for x in schedule if x[0] <= t + 1e-9]
        if solved or not seg or t < seg[-1][1] - 1e-9:
            out.append("dark")
            continue
        _, start, n = seg[-1]
        shown = colors[:len(colors) if n is None else n]
        i = _index(t - start) % (2 * len(shown) + SIMON_PAUSE_FRAMES)
        out.append(shown[i // 2] if i < 2 * len(shown) and i % 2 == 0 else "dark")
    return out


def simon_event(before, after) -> str | None:
    """What a Defuser action did to Simon's loop, from the Defuser rows before and after it
    (GPTNT App. C.2.3; module docstring): ``zoom`` (a zoom in or out, or another face: the loop
    restarts at once, earlier frames dark), ``stage`` (a press on the zoomed Simon Says that
    completed a stage: the new loop starts :data:`SIMON_STAGE_PAUSE_S` later), ``press`` (any
    other press on it, a wrong one included: :data:`SIMON_PRESS_PAUSE_S` later), or None."""
    before, after = np.asarray(before), np.asarray(after)
    if before[_ZOOM] != after[_ZOOM] or (before[_FACE] != after[_FACE]).any():
        return "zoom"
    if V.decode(after[_VIEW])[:1] != ["flashes"]:
        return None
    if before[_STRIKES] == after[_STRIKES] and (before[_VIEW] == after[_VIEW]).all():
        return None
    return "stage" if _flashes(after) > _flashes(before) else "press"


def simon_schedule(schedule, before, after, at_s: float, keep_from_s: float = -np.inf):
    """``schedule`` (module docstring) after the Defuser action at game time ``at_s`` that
    turned Defuser row ``before`` into ``after`` (:func:`simon_event`); segments that ended
    before ``keep_from_s`` are dropped."""
    event = simon_event(before, after)
    if event is None:
        return tuple(schedule)
    delay = {"zoom": 0.0, "stage": SIMON_STAGE_PAUSE_S, "press": SIMON_PRESS_PAUSE_S}[event]
    segment = (at_s, at_s + delay, _flashes(after))
    kept = () if event == "zoom" else tuple(schedule)
    live = [k for k, x in enumerate(kept) if x[0] <= keep_from_s]
    return kept[live[-1] if live else 0:] + (segment,)


def _flashes(row) -> int:
    """How many colours the zoomed Simon Says of a Defuser row flashes (0 for any other view)."""
    words = V.decode(np.asarray(row)[_VIEW])
    return words.index(";") - 1 if words[:1] == ["flashes"] else 0


def maze_grid(words: list[str]) -> list[str]:
    """The Maze view's words (``markers c r c r ; light c r ; goal c r ; …``) as grid rows."""
    digits = [int(w) for w in words[1:15] if w.isdigit()]
    markers, light, goal = digits[:4], digits[4:6], digits[6:8]
    grid = [["."] * T.MAZE_SIZE for _ in range(T.MAZE_SIZE)]
    for symbol, (c, r) in (("G", markers[:2]), ("G", markers[2:]), ("R", goal), ("W", light)):
        grid[r - 1][c - 1] = symbol  # later symbols are drawn over earlier ones
    return [" ".join(row) for row in grid]


def _zoomed_solved(face_words: list[str]) -> bool:
    """Whether the face's zoomed module (``module zoom <title> solved|unsolved``) is solved."""
    if "zoom" not in face_words:
        return False
    i = face_words.index("zoom")
    return i + 2 < len(face_words) and face_words[i + 2] == "solved"


def _frames_line(name: str, values: list[str]) -> str:
    n = len(values)
    when = f"{n} frames {FRAME_S} s apart, oldest first" if n > 1 else "1 frame"
    return f"{name} ({when}): {' '.join(values)}"


def module_text(view_tokens, time_s: float, frames: int = FRAMES, solved: bool = False,
                simon=SIMON_FROM_ZERO) -> str:
    """The zoomed module's view in the GPTNT channel ("" when not zoomed): Morse and Simon as
    ``frames`` timed frames ending at game time ``time_s`` (Simon's loop as its ``simon``
    schedule says: module docstring), the Maze as a grid, every other module as the
    environment writes it."""
    words = V.decode(view_tokens)
    if not words:
        return ""
    if words[0] in ("light", "flashes"):
        end = words.index(";")
        times = frame_times(time_s, frames)
        if words[0] == "light":
            line = _frames_line("light", morse_frames(words[1:end], times, solved))
            tail = words[end + 1:]
        else:  # Simon: skip "entered n ;"
            line = _frames_line("buttons lit", simon_frames(words[1:end], times, solved, simon))
            tail = words[words.index(";", end + 1) + 1:]
        return "\n".join([line, tokens_to_text(V.toks(tail))])
    if words[0] == "markers":
        buttons = words[words.index("goal") + 4:]
        return "\n".join([f"maze grid ({_GRID_LEGEND}):", *maze_grid(words),
                          tokens_to_text(V.toks(buttons))])
    return tokens_to_text(view_tokens)


def defuser_text(obs_row, time_s: float, *, labels: bool = True, frames: int = FRAMES,
                 simon=SIMON_FROM_ZERO) -> str:
    """The Defuser's observation row in GPTNT's channel at game time ``time_s`` (seconds since
    the bomb started): timer, strikes, face, zoom, the visible face and the zoomed module
    (:func:`module_text`); no outcome field, no partner phrase. ``labels=False`` drops the
    set-of-marks labels (GPTNT App. D.4: the previous frame comes unannotated) and
    ``frames=1`` keeps one frame of a flashing module; ``simon``: Simon's schedule (module
    docstring).

    Raises:
        ValueError: ``obs_row`` is not one Defuser row of the environment's observation.
    """
    row = np.asarray(obs_row)
    if row.ndim != 1 or row.shape[0] < HEADER_LEN + FACE_LEN + VIEW_LEN:
        raise ValueError(f"expected one Keep-Talking observation row, got shape {row.shape}")
    parts = [tokens_to_text(row[:_HEADER_KEPT]), tokens_to_text(row[_FACE]),
             module_text(row[_VIEW], time_s, frames, _zoomed_solved(V.decode(row[_FACE])),
                         simon)]
    text = "\n".join(p for p in parts if p)
    return text if labels else _LABEL.sub("", text)


__all__ = ["FRAMES", "FRAME_S", "SIMON_FROM_ZERO", "SIMON_PRESS_PAUSE_S", "SIMON_STAGE_PAUSE_S",
           "defuser_text", "frame_times", "maze_grid", "module_text", "morse_frames",
           "simon_event", "simon_frames", "simon_schedule"]
