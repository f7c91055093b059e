"""Chained parity as a round-trainer task (Narrowing the Collaboration Gap, Probably, §3):
config → :class:`~jaxcollab.collab.data.CollabTask`, the parity plug-in's
:attr:`~jaxcollab.core.family.Family.task` (:data:`TASK`).
"""

from __future__ import annotations

from collections.abc import Mapping

import jax
import numpy as np

from jaxcollab.agents.parity.config import ParityTask, check_alphas
from jaxcollab.collab.data import CollabTask, TaskSplit
from jaxcollab.core.config import typed
from jaxcollab.core.family import RoundTask
from jaxcollab.envs import parity

PARITY_VIEWS = ("masked", "own")


def _parity_split(data: parity.ParityDataset, masks: np.ndarray, view: str) -> TaskSplit:
    if view == "masked":
        views = tuple(np.where(m, data.bits, parity.MASK).astype(np.uint8) for m in masks)
    else:
        views = tuple(np.ascontiguousarray(data.bits[:, m]) for m in masks)
    pstar = data.pstar.astype(np.float32)
    return TaskSplit(views, data.label.astype(np.int32), np.stack([1 - pstar, pstar], axis=1))


def _parity_build(cfg: Mapping, key: jax.Array) -> tuple[CollabTask, None]:
    return parity_task(cfg, key), None


def parity_task(cfg: Mapping, key: jax.Array) -> CollabTask:
    """Chained parity (the paper's §3) from a ``configs/task/parity.yaml``-style mapping.

    Keys: ``alphas, n_bits, alpha_sum, split, n_examples, test_fraction`` and ``view``:
    ``"masked"`` (the agent's n-character string with ``?`` where unseen, as in the paper) or
    ``"own"`` (only the agent's own bits; measured on a 2-core CPU: far easier to learn on a CPU
    budget).

    Raises:
        ValueError: unknown view or split, or invalid coefficients.
    """
    task = typed(ParityTask, cfg)  # a missing key at the schema's default
    view, split = task.view, task.split
    if view not in PARITY_VIEWS:
        raise ValueError(f"unknown parity view {view!r}; expected one of {PARITY_VIEWS}")
    alphas = parity.make_alphas(cfg["alphas"], cfg["n_bits"], cfg.get("alpha_sum"))
    masks = parity.split_masks(cfg["n_bits"], split)
    train, test = parity.build_dataset(key, cfg["n_examples"], alphas, split,
                                       cfg["test_fraction"])
    return CollabTask(
        name="parity",
        vocab=parity.VOCAB,
        class_chars="01",
        train=_parity_split(train, masks, view),
        test=_parity_split(test, masks, view),
    )


#: The parity plug-in's round-trainer task: exact theory curves and ideal decoders exist for it.
TASK = RoundTask(ParityTask, _parity_build, check_alphas, theory=True)
