"""Host-side text: the Defuser's observation as text and the Expert's manual.

The Defuser's text is the observation's words in order, one line per ``|`` or ``;`` group, with
the timer digits joined (``01:21`` / ``59.43``), so tokens and text carry the same facts. The
manual is written by the project, in its own words, from a ruleset's tables
(:mod:`~jaxcollab.envs.ktane.ruleset`); only the Expert ever receives it.
"""

from __future__ import annotations

import re

import jax

from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane import vocab as V
from jaxcollab.envs.ktane.modules import MODULE_TYPES
from jaxcollab.envs.ktane.ruleset import Ruleset, vanilla_ruleset

_TIME = re.compile(r"time (\d) (\d) ([:.]) (\d) (\d)")


def tokens_to_text(tokens) -> str:
    """One observation row (int tokens) → text lines; padding is dropped."""
    lines, line = [], []
    for word in V.decode(tokens):
        if word in ("|", ";"):
            if line:
                lines.append(" ".join(line))
            line = []
        else:
            line.append(word)
    if line:
        lines.append(" ".join(line))
    return _TIME.sub(r"time \1\2\3\4\5", "\n".join(lines))


def manual_text(rules: Ruleset | None = None) -> str:
    """The Expert's manual of ``rules`` (default: vanilla): edgework definitions, then one page
    per module type, each written from the ruleset's tables (so a random ruleset's manual
    states its redrawn rules)."""
    rules = jax.device_get(vanilla_ruleset() if rules is None else rules)
    intro = [
        "BOMB DEFUSAL MANUAL (jaxcollab edition). You cannot see the bomb; the Defuser can.",
        "Edgework: the serial number has 6 characters; its vowels are A, E, I and U. Batteries",
        "are counted one per D holder and two per AA holder. An indicator is a three-letter",
        f"label ({', '.join(T.INDICATOR_LABELS)}), lit or unlit. Port plates show ports",
        f"({', '.join(T.PORT_NAMES)}). The timer shows MM:SS, or SS.cc below one minute, and",
        "runs faster after each strike.",
    ]
    pages = [m.manual(rules) for m in MODULE_TYPES.values()]
    return "\n\n".join(["\n".join(intro), *pages])
