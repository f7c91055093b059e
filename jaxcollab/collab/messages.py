"""Messages appended to the next agent's prefix
(Narrowing the Collaboration Gap, Probably, App. E, "Conversation loop").

A :class:`MessageCodec` turns a speaker's class probabilities ``[..., C]`` into a fixed-width
token message and back:

* ``action``: one character, the class the speaker would pick (argmax; ties go to the higher
  class index, so for parity the message is ``1{q >= 1/2}``, §3 of the paper).
* ``probability``: the vector in class order, each entry as ``digits`` decimal digits (two digits
  = percent), rounded by largest remainder so the entries sum to ``10**digits``; an entry may not
  exceed ``10**digits - 1`` (it must fit its digits), the excess going to the next-largest entry
  *(ours)*. With two classes only the class-1 entry is sent (the other is implied), so parity
  sends one two-digit number.

Tokens are ids into the task's vocabulary string, which must contain the digits ``0``–``9``
(probability) or the class characters (action). Encoding runs on the host in NumPy (messages
are made once per round from the predictions), so it never compiles.
"""

from __future__ import annotations

import dataclasses

import numpy as np

KINDS = ("action", "probability")


def quantize(probs, digits: int = 2):
    """Probabilities ``[..., C]`` → int32 counts ``[..., C]`` summing to ``10**digits``.

    Largest-remainder rounding; each count is capped at ``10**digits - 1`` (the excess unit goes
    to the largest other entry), so every entry fits in ``digits`` digits.

    Raises:
        ValueError: ``digits < 1`` or fewer than two classes.
    """
    if digits < 1:
        raise ValueError(f"digits={digits} must be >= 1")
    probs = np.asarray(probs, np.float32)
    n_classes = probs.shape[-1]
    if n_classes < 2:
        raise ValueError(f"need at least two classes, got {n_classes}")
    total = 10**digits
    p = probs / np.sum(probs, axis=-1, keepdims=True)
    scaled = p * total
    base = np.floor(scaled).astype(np.int32)
    missing = total - np.sum(base, axis=-1, keepdims=True)
    # rank of each entry by fractional part, largest first (stable: lower index wins ties)
    order = np.argsort(-(scaled - base), axis=-1, kind="stable")
    rank = np.argsort(order, axis=-1, kind="stable")
    counts = base + (rank < missing).astype(np.int32)
    full = counts >= total  # at most one entry, then all others are 0
    others = np.where(full, -1.0, p)
    runner_up = np.argmax(others, axis=-1)[..., None] == np.arange(n_classes)
    return counts - full + (np.any(full, axis=-1, keepdims=True) & runner_up)


def decide(probs):
    """Class index ``[...]`` int32 of the largest probability; ties go to the higher index."""
    probs = np.asarray(probs)
    return (probs.shape[-1] - 1 - np.argmax(probs[..., ::-1], axis=-1)).astype(np.int32)


@dataclasses.dataclass(frozen=True)
class MessageCodec:
    """Encode / parse the messages of one protocol.

    Attributes:
        kind: ``"action"`` or ``"probability"``.
        vocab: the task's character vocabulary (token id = index).
        class_chars: one character per class, in class order (parity ``"01"``, maze ``"drul"``).
        digits: digits per probability entry (resolution ``10**-digits``; 2 is our choice).

    Raises:
        ValueError: unknown ``kind`` (lists the valid ones), fewer than two classes,
            ``digits < 1``, or a needed character missing from ``vocab``.
    """

    kind: str
    vocab: str
    class_chars: str
    digits: int = 2

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown message protocol {self.kind!r}; expected one of {KINDS}")
        if len(self.class_chars) < 2 or self.digits < 1:
            raise ValueError(
                f"need >= 2 classes and digits >= 1, got {self.class_chars!r}, {self.digits}"
            )
        needed = self.class_chars if self.kind == "action" else "0123456789"
        missing = sorted(set(needed) - set(self.vocab))
        if missing:
            raise ValueError(f"characters {missing} are missing from the vocabulary {self.vocab!r}")

    @property
    def n_classes(self) -> int:
        return len(self.class_chars)

    @property
    def width(self) -> int:
        """Message length in tokens."""
        if self.kind == "action":
            return 1
        return self.digits * (1 if self.n_classes == 2 else self.n_classes)

    def _table(self, chars: str) -> np.ndarray:
        return np.array([self.vocab.index(c) for c in chars], np.int32)

    def encode(self, probs):
        """Class probabilities float ``[..., C]`` → message tokens int32 ``[..., width]``."""
        if self.kind == "action":
            return self._table(self.class_chars)[decide(probs)][..., None]
        counts = quantize(probs, self.digits)
        if self.n_classes == 2:
            counts = counts[..., 1:]
        powers = 10 ** np.arange(self.digits - 1, -1, -1)
        digits = (counts[..., None] // powers) % 10  # [..., E, digits]
        tokens = self._table("0123456789")[digits]
        return tokens.reshape(*tokens.shape[:-2], self.width)

    def decode(self, tokens) -> np.ndarray:
        """Message tokens ``[..., width]`` → the probabilities they state, float32 ``[..., C]``.

        Action messages decode to one-hot vectors.

        Raises:
            ValueError: a token that is not a valid message character.
        """
        tokens = np.asarray(tokens)
        chars = self.class_chars if self.kind == "action" else "0123456789"
        lookup = np.full(len(self.vocab), -1, np.int64)
        lookup[self._table(chars)] = np.arange(len(chars))
        values = lookup[tokens]
        if (values < 0).any():
            bad = self.vocab[int(tokens[values < 0].reshape(-1)[0])]
            raise ValueError(f"{bad!r} is not a valid {self.kind} message character ({chars!r})")
        if self.kind == "action":
            return np.eye(self.n_classes, dtype=np.float32)[values[..., 0]]
        entries = values.reshape(*values.shape[:-1], -1, self.digits)
        counts = entries @ (10 ** np.arange(self.digits - 1, -1, -1))
        probs = counts.astype(np.float32) / 10**self.digits
        return np.concatenate([1 - probs, probs], -1) if self.n_classes == 2 else probs

    def serialise(self, tokens) -> list[str]:
        """Message tokens ``[N, width]`` → N strings."""
        table = np.array(list(self.vocab))
        return ["".join(row) for row in table[np.asarray(tokens).reshape(-1, self.width)]]

    def parse(self, text: str) -> np.ndarray:
        """One message string → its probabilities float32 ``[C]``.

        Raises:
            ValueError: wrong length or a foreign character (names the text).
        """
        if len(text) != self.width or any(c not in self.vocab for c in text):
            raise ValueError(
                f"cannot parse {text!r} as a {self.kind} message of {self.width} character(s)"
            )
        return self.decode(np.array([self.vocab.index(c) for c in text]))
