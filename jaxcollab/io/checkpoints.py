"""Orbax checkpoints of model parameters (one directory per round's best-validation model)."""

from __future__ import annotations

from pathlib import Path

import jax
import orbax.checkpoint as ocp
from flax import nnx


def save_params(path: str | Path, params: nnx.State) -> None:
    """Write ``params`` (an ``nnx.State``) to ``path``, replacing any earlier checkpoint there.

    Orbax writes to a temporary directory and renames it, so a killed save leaves no partial
    checkpoint under ``path``.
    """
    with ocp.StandardCheckpointer() as ckpt:
        ckpt.save(Path(path).absolute(), nnx.to_pure_dict(params), force=True)


def load_params(path: str | Path, like: nnx.State) -> nnx.State:
    """Read the checkpoint at ``path`` into a copy of ``like`` (same tree, shapes and dtypes).

    Raises:
        FileNotFoundError: no checkpoint at ``path``.
    """
    path = Path(path).absolute()
    if not path.exists():
        raise FileNotFoundError(f"no checkpoint at {path}")
    with ocp.StandardCheckpointer() as ckpt:
        restored = ckpt.restore(path, nnx.to_pure_dict(like))
    state = jax.tree.map(lambda x: x, like)  # a new tree; ``like`` is left untouched
    nnx.replace_by_pure_dict(state, restored)
    return state
