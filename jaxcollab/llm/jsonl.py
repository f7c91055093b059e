"""Crash-safe JSON Lines files: the request cache and the transcripts of LLM runs.

A run may be killed at any byte. Reading skips a row that does not decode (the torn last line of
a killed write), so its work is simply redone; appending writes each batch of rows with a single
``write`` of whole lines, flushed and synced before it returns, and first ends a torn last line
so that a new row never fuses with a fragment. :func:`write_atomic` replaces a whole file (e.g.
``results.json``) by renaming a finished temporary file over it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path


def read(path: str | Path) -> list[dict]:
    """Every JSON-object row of ``path`` (``[]`` if it does not exist); torn or non-object rows
    are skipped."""
    path = Path(path)
    if not path.exists():
        return []
    rows = []
    for line in path.read_bytes().decode("utf-8", "replace").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def append(path: str | Path, rows: Iterable[dict], **dumps) -> None:
    """Append ``rows`` to ``path`` as whole lines in one flushed and synced write.

    ``dumps`` are passed to ``json.dumps`` (e.g. ``sort_keys=True``). A file whose last line is
    torn gets a newline first, so the torn fragment stays a single unreadable row.
    """
    path = Path(path)
    text = "".join(json.dumps(r, ensure_ascii=False, **dumps) + "\n" for r in rows)
    data = text.encode("utf-8", "replace")  # a lone surrogate becomes "?", never an error
    if not data:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data
        while data:  # a regular file takes it in one write unless the disk is full
            data = data[os.write(fd, data):]
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: str | Path, text: str) -> None:
    """Replace ``path`` with ``text``: written to a temporary file beside it, then renamed, so
    a reader sees the old file or the new one, never half of one."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
