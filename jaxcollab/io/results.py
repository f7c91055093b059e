"""``results.json``: a JSON document rewritten atomically every time a value is added.

A run appends each round's numbers as the round ends, so a crash loses nothing finished, and a
resumed run continues the same file. Only finite numbers are written: a NaN or infinity is
refused with the key that holds it, so no results file ever reports nonsense as a number.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from jaxcollab.scale.distributed import is_main


def check_finite(value: Any, key: str = "") -> None:
    """Raise ``ValueError`` naming the first non-finite float in ``value`` (dicts, lists).

    The key is dotted for objects and indexed for lists, e.g. ``treatments.self.ece[2]``.
    """
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"results key {key or '<root>'} is {value}; results hold finite "
                         "numbers only")
    if isinstance(value, dict):
        for k, v in value.items():
            check_finite(v, f"{key}.{k}" if key else str(k))
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            check_finite(v, f"{key}[{i}]")


class ResultsFile:
    """A JSON object at ``path``, loaded if it exists, saved after every change."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.data: dict = json.loads(self.path.read_text()) if self.path.exists() else {}

    def set(self, keys: tuple[str, ...], value) -> None:
        """Set ``data[k0][k1]…[kn] = value`` (creating objects on the way) and save.

        Raises:
            ValueError: ``value`` holds a NaN or infinity (named by its key); nothing is saved.
        """
        check_finite(value, ".".join(keys))
        node = self.data
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        node[keys[-1]] = value
        self.save()

    def update(self, values: dict) -> None:
        """Set every top-level key of ``values`` and save once (same checks as :meth:`set`)."""
        check_finite(values)
        self.data.update(values)
        self.save()

    def save(self) -> None:
        """Write to a temporary file and rename it over ``path`` (atomic on POSIX); in a
        multi-process job only process 0 writes."""
        if not is_main():
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.data, indent=2, allow_nan=False) + "\n")
        os.replace(tmp, self.path)
