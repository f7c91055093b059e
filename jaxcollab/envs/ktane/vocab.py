"""Word vocabulary of Keep-Talking observations and messages.

A token is an index into :data:`VOCAB`, a tuple of unique words (a "word" may hold a space, e.g.
the Who's on First label ``YOU ARE``). Token 0 is padding. Module code looks tokens up once at
import (:func:`tok`, :func:`toks`) so the jitted functions only index constant arrays.
"""

from __future__ import annotations

import numpy as np

from jaxcollab.envs.ktane import tables as T

_STRUCTURE = (
    "<pad>",
    "|",
    ";",
    ":",
    ".",
    "time",
    "strikes",
    "of",
    "face",
    "zoom",
    "none",
    "last",
    "expert",
    "defuser",
    "says",
    "module",
    "solved",
    "unsolved",
    "wire",
    "empty",
    "cut",
    "intact",
    "battery",
    "indicator",
    "lit",
    "unlit",
    "ports",
    "serial",
    "button",
    "strip",
    "held",
    "idle",
    "key",
    "green",
    "flashes",
    "entered",
    "stage",
    "display",
    "(empty)",
    "ok",
    "strike",
    "invalid",
    "wait",
    "nothing",
    "light",
    "pause",
    "frequency",
    "MHz",
    "TX",
    "LED",
    "star",
    "on",
    "off",
    "panel",
    "to",
    "markers",
    "goal",
    "up",
    "down",
    "submit",
    "10",
    "11",
    "12",
)
MODULE_TITLES = (
    "Wires",
    "The Button",
    "Keypad",
    "Simon Says",
    "Who's on First",
    "Memory",
    "Morse Code",
    "Complicated Wires",
    "Wire Sequence",
    "Maze",
    "Password",
)
#: Set-of-marks labels of interactable elements, letters in reading order (GPTNT App. D.2:
#: letters, so labels are never confused with the digits modules show).
LABELS = tuple(f"[{chr(ord('A') + k)}]" for k in range(T.MAX_SLOTS))


def _unique(words) -> tuple[str, ...]:
    return tuple(dict.fromkeys(words))


#: Every word an observation or a message can hold; a token id is an index into it.
VOCAB: tuple[str, ...] = _unique(
    _STRUCTURE
    + tuple(T.SERIAL_CHARS)
    + LABELS
    + T.FACES
    + MODULE_TITLES
    + T.HOLDERS
    + T.INDICATOR_LABELS
    + T.PORT_NAMES
    + T.WIRE_COLORS
    + T.BUTTON_COLORS
    + T.SIMON_COLORS
    + T.BUTTON_LABELS
    + T.KEYPAD_SYMBOLS
    + T.KEYPAD_POSITIONS
    + T.WOF_POSITIONS
    + tuple(w for w in T.WOF_DISPLAYS if w)
    + T.WOF_LABELS
    + tuple(T.MORSE_CODE.values())
    + T.MORSE_FREQS
    + T.CW_COLORS
    + tuple(T.LETTERS)
    # instruction verbs; a phrase from an earlier turn; the edgework (a request or a report)
    + ("press", "hold", "release", "said", "edgework")
)
_INDEX = {w: i for i, w in enumerate(VOCAB)}
PAD = 0


def tok(word: str) -> int:
    """Token id of ``word``.

    Raises:
        KeyError: ``word`` is not in :data:`VOCAB` (the message shows the word).
    """
    try:
        return _INDEX[word]
    except KeyError:
        raise KeyError(f"word {word!r} is not in the Keep-Talking vocabulary") from None


def toks(words) -> np.ndarray:
    """int32 token ids of a sequence of words (see :func:`tok`)."""
    return np.array([tok(w) for w in words], np.int32)


def decode(tokens) -> list[str]:
    """Token ids → words, dropping padding."""
    return [VOCAB[int(t)] for t in np.asarray(tokens).reshape(-1) if int(t) != PAD]


#: Word naming each role (Defuser, Expert) in the phrase blocks of observations.
ROLE_WORDS = ("defuser", "expert")
#: Frequently used token arrays, indexed by the ids in :mod:`tables`.
DIGIT = toks(T.SERIAL_CHARS[:10])
SERIAL_CHAR = toks(T.SERIAL_CHARS)
LABEL = toks(LABELS)
