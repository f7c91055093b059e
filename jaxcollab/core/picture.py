"""Tiny SVG builders for the families' state pictures (:attr:`jaxcollab.core.family.Family.draw`).

A picture is a self-contained ``<svg>`` string: no fonts, scripts or images fetched, so a report
page can inline it under its Content-Security-Policy. Every text passes through
:func:`html.escape`; a family builds its picture from :func:`rect`, :func:`circle`, :func:`line`
and :func:`text` and wraps it with :func:`svg`. :data:`UNSEEN` is the one grey of every part a
role does not perceive, so "greyed out" means the same on every family's picture.
"""

from __future__ import annotations

import html
from collections.abc import Iterable

#: Fill of a part the role whose view is drawn does not perceive.
UNSEEN = "#c9ced6"
#: Stroke of outlines and the default text colour.
INK = "#1d232b"
#: Fill of each colour name a game's parts carry (wires, buttons, lights).
FILL = {"red": "#d64541", "green": "#2e9e4f", "blue": "#2f6fb3", "yellow": "#e8c31a",
        "white": "#ffffff", "black": "#222222"}


def _attrs(**attrs) -> str:
    out = []
    for key, value in attrs.items():
        if value is None:
            continue
        out.append(f'{key.rstrip("_").replace("_", "-")}="{html.escape(str(value), quote=True)}"')
    return " ".join(out)


def rect(x: float, y: float, w: float, h: float, fill: str = "none", **attrs) -> str:
    """A rectangle at ``(x, y)`` of ``w`` by ``h`` (user units); ``attrs`` as SVG attributes
    (``stroke``, ``rx``, ``class_``, ...)."""
    return f"<rect {_attrs(x=x, y=y, width=w, height=h, fill=fill, **attrs)}/>"


def circle(cx: float, cy: float, r: float, fill: str = "none", **attrs) -> str:
    """A circle centred at ``(cx, cy)`` of radius ``r``."""
    return f"<circle {_attrs(cx=cx, cy=cy, r=r, fill=fill, **attrs)}/>"


def line(x1: float, y1: float, x2: float, y2: float, stroke: str = INK, **attrs) -> str:
    """A straight line from ``(x1, y1)`` to ``(x2, y2)``."""
    return f"<line {_attrs(x1=x1, y1=y1, x2=x2, y2=y2, stroke=stroke, **attrs)}/>"


def text(x: float, y: float, body, size: float = 12, fill: str = INK, anchor: str = "start",
         **attrs) -> str:
    """``body`` (escaped) with its baseline at ``(x, y)``, ``size`` user units high."""
    return (f"<text {_attrs(x=x, y=y, font_size=size, fill=fill, text_anchor=anchor, **attrs)}>"
            f"{html.escape(str(body))}</text>")


def svg(width: float, height: float, parts: Iterable[str], title: str = "") -> str:
    """The picture: ``parts`` inside an ``<svg>`` of ``width`` by ``height`` user units (its
    ``viewBox``; it scales to its box), ``title`` as its accessible name."""
    head = f"<title>{html.escape(title)}</title>" if title else ""
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
            f'width="{width}" height="{height}" font-family="sans-serif" role="img">'
            f"{head}{''.join(parts)}</svg>")


__all__ = ["FILL", "INK", "UNSEEN", "circle", "line", "rect", "svg", "text"]
