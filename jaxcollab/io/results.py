"""``results.json``: a JSON document rewritten atomically every time a value is added.

A run appends each round's numbers as the round ends, so a crash loses nothing finished, and a
resumed run continues the same file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path


class ResultsFile:
    """A JSON object at ``path``, loaded if it exists, saved after every change."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.data: dict = json.loads(self.path.read_text()) if self.path.exists() else {}

    def set(self, keys: tuple[str, ...], value) -> None:
        """Set ``data[k0][k1]…[kn] = value`` (creating objects on the way) and save."""
        node = self.data
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        node[keys[-1]] = value
        self.save()

    def save(self) -> None:
        """Write to a temporary file and rename it over ``path`` (atomic on POSIX)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.data, indent=2) + "\n")
        os.replace(tmp, self.path)
