"""Information in a learned protocol, in bits, from a contingency table of counts (rows: a
feature's values, columns: the messages sent): plug-in estimates, the counts taken as the
probabilities (Cover & Thomas, "Elements of Information Theory", eq. 2.28 and 2.43)."""

from __future__ import annotations

import numpy as np


def entropy_bits(counts: np.ndarray) -> float:
    """Entropy in bits of the distribution proportional to ``counts`` (any shape; 0 if
    empty)."""
    p = np.asarray(counts, float).ravel()
    p = p[p > 0] / max(p.sum(), 1)
    return float(-(p * np.log2(p)).sum())


def mutual_information_bits(table: np.ndarray) -> float:
    """Mutual information in bits between the row and the column variable of ``table``
    (counts ``[rows, cols]``; 0 if empty)."""
    p = np.asarray(table, float)
    p = p / max(p.sum(), 1)
    px, py = p.sum(1, keepdims=True), p.sum(0, keepdims=True)
    nz = p > 0
    return float((p[nz] * np.log2(p[nz] / (px @ py)[nz])).sum())
