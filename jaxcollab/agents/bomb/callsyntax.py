"""SANZARU's call syntax: ``speak(to="mute", text="…")``, ``gesture(to="deaf",
symbols=[point_up, fist])``, ``act(op="cut", position=3)``, ``wait()`` (SANZARU Table 1 prints
the calls this way), read into the same call dicts as the JSON format
(``{"call": "speak", "to": "mute", "text": "…"}``).

Nothing is evaluated: the argument list is read by Python's parser (``ast``, no execution) and,
when that fails (an unescaped quote inside the text, emoji symbols), by a lenient reader that
splits on the known keywords. Bare names stand for themselves (``to=mute``,
``symbols=[thumbs_up]``, as Table 1 prints them). :func:`read_calls` never raises.
"""

from __future__ import annotations

import ast
import re

#: Each call's positional parameters (``speak("hi")`` is speech to everyone who can hear).
POSITIONAL = {"speak": (("text",), ("to", "text")), "gesture": (("symbols",), ("to", "symbols")),
              "act": (("op", "position"),), "wait": ((),)}
KEYWORDS = ("to", "text", "symbols", "op", "position")
_CALL = re.compile(r"(?<![\w.])(speak|gesture|act|wait)\s*\(")
_KEYWORD = re.compile(r"(?:^|,)\s*(" + "|".join(KEYWORDS) + r")\s*=\s*")
_QUOTES = {'"': '"', "'": "'", "“": "”", "‘": "’"}
#: Work bounds on a pathological reply: characters read, calls taken.
MAX_CHARS = 20_000
MAX_CALLS = 8


def _close(text: str, i: int) -> int | None:
    """Index of the ``)`` closing the call whose arguments start at ``i`` (quotes, escapes and
    nested brackets respected), or None."""
    depth, quote = 0, None
    j = i
    while j < len(text):
        ch = text[j]
        if quote:
            if ch == "\\":
                j += 1
            elif ch == quote:
                quote = None
        elif ch in _QUOTES:
            quote = _QUOTES[ch]
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                return j if ch == ")" else None
            depth -= 1
        j += 1
    return None


def _encodable(text: str) -> str:
    """``text`` with a lone surrogate (from a ``\\ud800`` escape) as ``?``: the environment
    UTF-8-encodes speech."""
    return text.encode("utf-8", "replace").decode("utf-8")


def _value(node):
    """A literal, a bare name (itself), or a list of them; ValueError otherwise."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return _encodable(node.value)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return node.value
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_value(node.operand)
    if isinstance(node, ast.List | ast.Tuple):
        return [_value(e) for e in node.elts]
    raise ValueError("not a literal")


def _parsed(name: str, inner: str) -> dict | None:
    """The arguments by Python's parser, or None when it cannot read them."""
    try:
        call = ast.parse(f"f({inner})", mode="eval").body
        args = [_value(a) for a in call.args]
        kwargs = {k.arg: _value(k.value) for k in call.keywords}
    except Exception:  # noqa: BLE001  (SyntaxError, RecursionError, ...: the lenient reader)
        return None
    if None in kwargs:  # **kwargs
        return None
    names = next((p for p in (*POSITIONAL[name], ()) if len(p) == len(args)), None)
    if names is None:
        return None
    return dict(zip(names, args)) | kwargs


def _unquote(text: str) -> str:
    text = text.strip().rstrip(",").strip()
    if len(text) >= 2 and _QUOTES.get(text[0]) == text[-1]:
        return text[1:-1]
    return text


def _lenient(inner: str) -> dict | None:
    """The arguments split on the known keywords (each value runs to the next keyword)."""
    marks = list(_KEYWORD.finditer(inner))
    if not marks or inner[:marks[0].start()].strip():
        return None if inner.strip() else {}
    out = {}
    for m, nxt in zip(marks, [*marks[1:], None]):
        raw = inner[m.end(): nxt.start() if nxt else len(inner)].strip()
        if m.group(1) == "symbols":
            body = raw.strip().rstrip(",").strip()
            body = body[1:-1] if body[:1] in "[(" and body[-1:] in "])" else body
            out["symbols"] = [_unquote(s) for s in re.split(r"[,\s]+", body) if _unquote(s)]
        else:
            out[m.group(1)] = _unquote(raw)
    return out


def read_calls(text: str) -> list[dict] | None:
    """The calls written in ``text`` in call syntax (module docstring), in order, as
    ``{"call": name, **arguments}``; None when there are none. Never raises."""
    text = text[:MAX_CHARS] if isinstance(text, str) else ""
    calls, pos = [], 0
    for m in _CALL.finditer(text):
        if m.start() < pos:
            continue
        end = _close(text, m.end())
        if end is None:
            continue
        name, inner = m.group(1), text[m.end(): end]
        args = _parsed(name, inner)
        if args is None:
            args = _lenient(inner)
        if args is not None:
            calls.append({"call": name, **{k: v for k, v in args.items() if k != "call"}})
        pos = end + 1
        if len(calls) == MAX_CALLS:
            break
    return calls or None


__all__ = ["read_calls"]
