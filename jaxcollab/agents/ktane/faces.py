"""Each vanilla Keep-Talking module's face as SVG parts, drawn from its
:attr:`~jaxcollab.envs.ktane.modules.base.ModuleType.describe` facts (the vanilla KTANE Bomb
Defusal Manual's modules; GPTNT §4.2.1 lists the 11 the simulator plays).

:func:`face` dispatches on the module's registry name to one drawer per module: wires (coloured
wires, cut ones broken), the button (its colour and label, the strip lit while held), the keypad
(four keycaps, each glyph as its Unicode lookalike above its manual name, a pressed key's light
green), Simon Says (the four buttons and the flash sequence, the presses entered ringed), Who's on
First (display word and six word buttons, stage lights), Memory (display digit, four labelled
buttons, stage lights), Morse Code (the light's on/off units over one loop, the dial's
frequency), Complicated Wires (LED above and star below each striped wire), Wire Sequence (the
panel's three wires from terminal to letter, the panel counter), the maze (6x6 dots, two green
markers, the white light and the red goal; walls are invisible, as in the game) and Password
(five letter columns at their current letters). Every drawer fills a box of :data:`FACE_W` by
:data:`FACE_H` user units whose top left is ``(x, y)``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from jaxcollab.core.picture import FILL, INK, circle, line, rect, text
from jaxcollab.envs.ktane import tables as T

FACE_W, FACE_H = 204, 126
OFF, LIT = "#e8edf2", "#2e9e4f"
#: Unicode lookalikes of the keypad glyphs (``tables.KEYPAD_SYMBOLS`` names), as players name them.
GLYPH = {"balloon": "Ϙ", "at": "Ѧ", "upside-down-y": "ƛ", "squiggly-n": "Ϟ",
         "squid-knife": "Ѭ", "hook-n": "ϗ", "left-c": "Ͽ", "euro": "Ӭ", "cursive": "Ҩ",
         "hollow-star": "☆", "question-mark": "¿", "copyright": "©", "pumpkin": "Ѽ",
         "double-k": "Җ", "melted-three": "Ԇ", "six": "б", "paragraph": "¶", "bt": "Ѣ",
         "smiley": "ټ", "pitchfork": "Ψ", "right-c": "Ͼ", "dragon": "Ѯ", "filled-star": "★",
         "tracks": "҂", "ae": "æ", "n-with-hat": "Ҋ", "omega": "Ω"}


def _wire(x1, y1, x2, y2, colour: str, cut: bool, cls: str) -> list[str]:
    """One wire (outlined, so a white wire shows on the face); a cut wire has a gap."""
    ends = ([(x1, y1, x1 + (x2 - x1) * 0.42, y1 + (y2 - y1) * 0.42),
             (x1 + (x2 - x1) * 0.58, y1 + (y2 - y1) * 0.58, x2, y2)] if cut
            else [(x1, y1, x2, y2)])
    out = [line(*e, INK, stroke_width=7) for e in ends]
    return out + [line(*e, colour, stroke_width=5, class_=f"{cls} cut" if cut else cls)
                  for e in ends]


def _wires(d, x, y) -> list[str]:
    out = []
    for i, (c, cut) in enumerate(zip(d["colors"], d["cut"], strict=True)):
        yy = y + 12 + 20 * i
        out += [circle(x + 14, yy, 4, INK), circle(x + FACE_W - 14, yy, 4, INK)]
        if c is not None:
            out += _wire(x + 14, yy, x + FACE_W - 14, yy, FILL[c], cut, "wire")
    return out


def _button(d, x, y) -> list[str]:
    strip = d["strip"]
    return [circle(x + 70, y + 62, 48, FILL[d["color"]], stroke=INK,
                   stroke_width=4 if d["held"] else 2, class_="button held" if d["held"]
                   else "button"),
            text(x + 70, y + 67, d["label"].upper(), 13, fill="#ffffff" if d["color"] in
                 ("red", "blue") else INK, anchor="middle", font_weight="bold"),
            rect(x + 150, y + 10, 20, 104, FILL[strip] if strip else OFF, stroke=INK, rx=3,
                 class_="strip" if strip else "strip off"),
            text(x + 160, y + 124, "held" if d["held"] else "", 9, anchor="middle")]


def _keypad(d, x, y) -> list[str]:
    out = []
    for i, (sym, on) in enumerate(zip(d["symbols"], d["pressed"], strict=True)):
        kx, ky = x + 40 + (i % 2) * 66, y + 4 + (i // 2) * 62
        out += [rect(kx, ky, 58, 56, "#f1ead8", stroke=INK, rx=4, class_="key"),
                rect(kx + 21, ky + 4, 16, 5, LIT if on else OFF, stroke=INK,
                     class_="key-light on" if on else "key-light"),
                text(kx + 29, ky + 36, GLYPH[sym], 22, anchor="middle", class_="glyph"),
                text(kx + 29, ky + 51, sym, 7, anchor="middle")]
    return out


def _simon(d, x, y) -> list[str]:
    out = [rect(x + 20 + 34 * i, y + 6, 28, 28, FILL[c], stroke=INK, rx=4, opacity=0.85)
           for i, c in enumerate(("blue", "yellow", "red", "green"))]
    out.append(text(x + 4, y + 56, f"flashes (stage {d['stage']}, {d['entered']} entered):",
                    9))
    for i, c in enumerate(d["sequence"]):
        now = i < d["stage"]
        out.append(circle(x + 16 + 26 * i, y + 76, 9, FILL[c] if now else OFF, stroke=INK,
                          stroke_width=3 if i < d["entered"] else 1,
                          class_="flash" if now else "flash later"))
    return out


def _display(x, y, w, body, size=14) -> list[str]:
    return [rect(x, y, w, 26, "#10261a", rx=3),
            text(x + w / 2, y + 19, body, size, fill="#7dff9b", anchor="middle",
                 class_="display")]


def _stages(x, y, done: int, n: int) -> list[str]:
    return [rect(x, y + 8 * (n - 1 - i), 10, 6, LIT if i < done else OFF, stroke=INK,
                 class_="stage done" if i < done else "stage") for i in range(n)]


def _whos_on_first(d, x, y) -> list[str]:
    out = _display(x + 20, y + 2, 140, d["display"] or " ")
    for i, label in enumerate(d["buttons"]):
        bx, by = x + 20 + (i % 2) * 72, y + 36 + (i // 2) * 30
        out += [rect(bx, by, 66, 24, "#f1ead8", stroke=INK, rx=3, class_="word-button"),
                text(bx + 33, by + 16, label, 10, anchor="middle")]
    return out + _stages(x + 180, y + 60, d["stage"] - 1, 3)


def _memory(d, x, y) -> list[str]:
    out = _display(x + 40, y + 2, 80, str(d["display"]), 20)
    for i, label in enumerate(d["labels"]):
        out += [rect(x + 20 + 32 * i, y + 44, 26, 48, "#f1ead8", stroke=INK, rx=3,
                     class_="memory-button"),
                text(x + 33 + 32 * i, y + 74, label, 16, anchor="middle")]
    return out + _stages(x + 170, y + 40, d["stage"] - 1, 5)


def _morse(d, x, y) -> list[str]:
    units = d["light_units"]
    step = (FACE_W - 8) / max(len(units), 1)
    out = [circle(x + 20, y + 20, 12, "#ffd25a", stroke=INK, class_="morse-light"),
           text(x + 40, y + 24, "the light's units over one loop (lit: on)", 9)]
    out += [rect(x + 4 + k * step, y + 42, step, 12, "#ffd25a", class_="unit")
            for k, u in enumerate(units) if u == "1"]
    out += [rect(x + 4, y + 42, FACE_W - 8, 12, "none", stroke=INK),
            *_display(x + 40, y + 70, 110, f"{d['dial']} MHz"),
            rect(x + 160, y + 70, 36, 26, "#f1ead8", stroke=INK, rx=3),
            text(x + 178, y + 88, "TX", 11, anchor="middle")]
    return out


def _complicated_wires(d, x, y) -> list[str]:
    out = []
    for i, w in enumerate(d["wires"]):
        wx = x + 18 + 34 * i
        out.append(circle(wx, y + 8, 6, "#fff3a0" if w and w["led"] else OFF, stroke=INK,
                          class_="led on" if w and w["led"] else "led"))
        if w is None:
            continue
        cols = w["color"].split("+")
        for k, c in enumerate(cols):
            dx = (k - (len(cols) - 1) / 2) * 5
            out += _wire(wx + dx, y + 20, wx + dx, y + 100, FILL[c], w["cut"], "cwire")
        out.append(text(wx, y + 120, "★" if w["star"] else "", 13, anchor="middle",
                        class_="star"))
    return out


def _wire_sequence(d, x, y) -> list[str]:
    p = d["panel"] - 1
    out = [text(x + 4, y + 10, f"panel {d['panel']} / {T.WS_PANELS}", 9)]
    for k, t in enumerate(T.WS_TARGETS):
        out += [text(x + FACE_W - 10, y + 34 + 34 * k, t, 11, anchor="middle"),
                text(x + 8, y + 34 + 34 * k, str(3 * p + k + 1), 10)]
    for k, w in enumerate(d["wires"][3 * p: 3 * p + 3]):
        if w is not None:
            out += _wire(x + 26, y + 30 + 34 * k, x + FACE_W - 20,
                         y + 30 + 34 * T.WS_TARGETS.index(w["target"]), FILL[w["color"]],
                         w["cut"], "wire")
    return out


def _maze(d, x, y) -> list[str]:
    cell = 20
    at = lambda c, r: (x + 50 + (c - 0.5) * cell, y + 2 + (r - 0.5) * cell)  # noqa: E731
    out = [rect(x + 50, y + 2, 6 * cell, 6 * cell, "#1d232b", rx=3)]
    out += [circle(*at(c, r), 2, "#8a96a3") for c in range(1, 7) for r in range(1, 7)]
    out += [circle(*at(*m), 7, "none", stroke="#2e9e4f", stroke_width=3, class_="marker")
            for m in d["markers"]]
    gx, gy = at(*d["goal"])
    return out + [rect(gx - 5, gy - 5, 10, 10, "#d64541", class_="goal"),
                  circle(*at(*d["light"]), 5, "#ffffff", class_="maze-light")]


def _passwords(d, x, y) -> list[str]:
    out = []
    for k, (col, i) in enumerate(zip(d["columns"], d["index"], strict=True)):
        cx = x + 20 + 34 * k
        out += [text(cx + 14, y + 16, "▲", 10, anchor="middle"),
                rect(cx, y + 24, 28, 40, "#10261a", rx=3),
                text(cx + 14, y + 52, col[i].upper(), 20, fill="#7dff9b", anchor="middle",
                     class_="letter"),
                text(cx + 14, y + 78, "▼", 10, anchor="middle")]
    return out + [rect(x + 60, y + 92, 80, 22, "#f1ead8", stroke=INK, rx=3),
                  text(x + 100, y + 107, "SUBMIT", 10, anchor="middle")]


#: One drawer per module registry name (:func:`face`).
DRAWERS: dict[str, Callable[[Mapping, float, float], list[str]]] = {
    "wires": _wires, "button": _button, "keypad": _keypad, "simon": _simon,
    "whos_on_first": _whos_on_first, "memory": _memory, "morse": _morse,
    "complicated_wires": _complicated_wires, "wire_sequence": _wire_sequence, "maze": _maze,
    "passwords": _passwords}


def face(name: str, facts: Mapping, x: float, y: float) -> list[str]:
    """The face of module ``name`` (a registry name) from its ``describe`` facts, in the box at
    ``(x, y)`` (module docstring).

    Raises:
        KeyError: ``name`` is not one of the 11 vanilla modules (the names listed).
    """
    if name not in DRAWERS:
        raise KeyError(f"no face for module {name!r}; faces: {sorted(DRAWERS)}")
    return DRAWERS[name](facts, x, y)


__all__ = ["DRAWERS", "FACE_H", "FACE_W", "GLYPH", "face"]
