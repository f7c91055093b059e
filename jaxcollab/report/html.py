"""HTML building blocks of the report: escaping, tables, number cells, the page shell.

Every string from a run (transcripts hold arbitrary model output) passes through :func:`h`;
only :class:`Html` values, built here from escaped parts, are inserted as markup. The page's one
script is allowed by its hash in the Content-Security-Policy, so even a markup slip could not run
a script from a transcript, and the policy blocks every network fetch.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
from collections.abc import Iterable, Mapping
from datetime import datetime

from jaxcollab.report.assets import CSS, SCRIPT
from jaxcollab.report.stats import successes, wilson


class Html(str):
    """A string that is already markup (never escaped again)."""


def h(value) -> Html:
    """``value`` as escaped text (an :class:`Html` value passes through unchanged)."""
    return value if isinstance(value, Html) else Html(html.escape(str(value), quote=True))


def tag(name: str, body="", **attrs) -> Html:
    """``<name attrs>body</name>``; attribute values are escaped, ``None`` / ``False`` drop the
    attribute, ``True`` writes it bare; a trailing ``_`` is stripped (``class_``) and ``_``
    becomes ``-`` (``data_value``)."""
    parts = [name]
    for key, value in attrs.items():
        key = key.rstrip("_").replace("_", "-")
        if value is None or value is False:
            continue
        parts.append(key if value is True else f'{key}="{h(value)}"')
    return Html(f"<{' '.join(parts)}>{join(body) if _is_list(body) else h(body)}</{name}>")


def _is_list(x) -> bool:
    return isinstance(x, list | tuple) or (isinstance(x, Iterable) and not isinstance(x, str))


def join(parts: Iterable) -> Html:
    return Html("".join(h(p) for p in parts))


def fmt(value) -> str:
    """A number as a person reads it: integers in full, floats to 4 significant digits."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}".replace(",", "\u2009")  # thin space
    if isinstance(value, float):
        if value == 0 or math.isfinite(value) and 1e-3 <= abs(value) < 1e6:
            return f"{value:.4g}"
        return f"{value:.3e}"
    return str(value)


def num(value, **attrs) -> Html:
    """A table cell holding a number; ``data-value`` keeps the exact stored value."""
    return tag("td", fmt(value), class_="num", data_value=json.dumps(value), **attrs)


def rate(rate: float | None, episodes: int | None) -> Html:
    """A success-rate cell: percent with its 90 % Wilson interval (:mod:`.stats`);
    ``data-value`` holds the stored rate, ``data-episodes`` the count behind it."""
    if rate is None:
        return tag("td", "–", class_="num missing")
    text = [f"{100 * rate:.1f} %"]
    if episodes:
        lo, hi = wilson(successes(rate, episodes), episodes)
        text.append(tag("span", f"[{100 * lo:.1f}, {100 * hi:.1f}]", class_="ci"))
    return tag("td", text, class_="num rate", data_value=json.dumps(rate),
               data_episodes=episodes, style=f"--p:{rate:.4f}")


def cell(value) -> Html:
    """A cell for any stored value: numbers right-aligned, mappings and lists as compact JSON."""
    if isinstance(value, Html):
        return value if value.startswith("<td") else tag("td", value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return num(value)
    if isinstance(value, Mapping | list):
        return tag("td", tag("code", json.dumps(value, ensure_ascii=False)), class_="json")
    return tag("td", "–" if value is None else fmt(value))


def table(header: list, rows: Iterable[list], caption: str | None = None, **attrs) -> Html:
    """A table: header cells as text, body cells through :func:`cell`; the first column is a
    row header."""
    head = tag("thead", tag("tr", [tag("th", x, scope="col") for x in header]))
    body = tag("tbody", [tag("tr", [tag("th", r[0], scope="row"), *map(cell, r[1:])])
                         for r in rows])
    cap = tag("caption", caption) if caption else ""
    return tag("div", tag("table", [cap, head, body], **attrs), class_="scroll")


def keyvalue(mapping: Mapping, caption: str | None = None, **attrs) -> Html:
    """A two-column key/value table; nested mappings are flattened to dotted keys."""
    attrs["class_"] = " ".join(["kv", attrs.get("class_", "")]).strip()
    return table(["key", "value"], [[k, v] for k, v in flatten(mapping).items()], caption,
                 **attrs)


def flatten(tree: Mapping, prefix: str = "") -> dict:
    """Nested mappings as ``{"a.b.c": leaf}`` (lists stay leaves)."""
    out: dict = {}
    for key, value in tree.items():
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def png(data: bytes, alt: str) -> Html:
    """An ``<img>`` holding a PNG inline (base64 data URL)."""
    src = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
    return tag("img", src=src, alt=alt, loading="lazy")


def page(title: str, subtitle: str, sections: list[tuple[str, str, Html]]) -> str:
    """The whole document: ``sections`` are ``(id, heading, body)``; inline CSS and script."""
    digest = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
    csp = (f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
           f"script-src 'sha256-{digest}'")
    nav = tag("nav", tag("ul", [tag("li", tag("a", head, href=f"#{sid}"))
                                for sid, head, _ in sections]))
    body = [tag("section", [tag("h2", head), content], id=sid) for sid, head, content in sections]
    stamp = datetime.now().strftime("%Y-%m-%d %H:%M")
    header = tag("header", [tag("h1", title), tag("p", subtitle, class_="sub"),
                            tag("p", "loading…", id="report-status", data_state="loading"),
                            tag("pre", "", id="report-errors", hidden=True)])
    footer = tag("footer", f"jaxcollab report, written {stamp}")
    return ("<!doctype html>\n" + tag("html", [
        tag("head", [Html('<meta charset="utf-8">'),
                     Html(f'<meta http-equiv="Content-Security-Policy" content="{h(csp)}">'),
                     Html('<meta name="viewport" content="width=device-width, initial-scale=1">'),
                     tag("title", title), tag("style", Html(CSS))]),
        tag("body", [header, tag("div", [nav, tag("main", body)], class_="layout"), footer,
                     tag("script", Html(SCRIPT))])], lang="en") + "\n")
