"""Task builders for the round trainer: config → :class:`~jaxcollab.collab.data.CollabTask`.

``TASKS`` maps a task name to its plug-in (:class:`Task`: its builder ``(cfg, key) ->
(CollabTask, source)`` and its up-front check): chained parity (Narrowing the Collaboration Gap,
Probably, §3) and the two-agent split-mask maze (the paper's §5 and App. E,
:func:`jaxcollab.agents.maze.task.maze_task`). :func:`make_task` and :func:`check_task` fail
with the list of valid names on an unknown one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from jaxcollab.agents.maze.task import check_sampler, maze_task
from jaxcollab.collab.data import CollabTask, TaskSplit
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
    view = cfg.get("view", "masked")
    if view not in PARITY_VIEWS:
        raise ValueError(f"unknown parity view {view!r}; expected one of {PARITY_VIEWS}")
    alphas = parity.make_alphas(cfg["alphas"], cfg["n_bits"], cfg.get("alpha_sum"))
    masks = parity.split_masks(cfg["n_bits"], cfg.get("split", "alternate"))
    train, test = parity.build_dataset(
        key, cfg["n_examples"], alphas, cfg.get("split", "alternate"), cfg["test_fraction"]
    )
    return CollabTask(
        name="parity",
        vocab=parity.VOCAB,
        class_chars="01",
        train=_parity_split(train, masks, view),
        test=_parity_split(test, masks, view),
    )


def _no_check(cfg: Mapping) -> None:
    """A task whose every config the schema's bounds already make buildable."""


@dataclass(frozen=True)
class Task:
    """A round-trainer task: ``build(cfg, key)`` its :class:`CollabTask` from a task config
    and the source it was made from, for task-specific scores (mazes: the maze split; None),
    and ``check(cfg)`` the checks that need its generator (raise ``ConfigValueError`` naming
    the key; run before any work, after the schema's)."""

    build: Callable[[Mapping, jax.Array], tuple[CollabTask, Any]]
    check: Callable[[Mapping], None] = _no_check


TASKS: dict[str, Task] = {
    "parity": Task(_parity_build),
    "maze": Task(maze_task, check_sampler),
}


def _plug_in(cfg: Mapping) -> Task:
    name = cfg.get("name")
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; expected one of {sorted(TASKS)}")
    return TASKS[name]


def make_task(cfg: Mapping, key: jax.Array) -> CollabTask:
    """Build the task named ``cfg["name"]``.

    Raises:
        ValueError: unknown task name (lists the valid ones).
    """
    return task_data(cfg, key)[0]


def task_data(cfg: Mapping, key: jax.Array) -> tuple[CollabTask, Any]:
    """``(task, source)`` of the task named ``cfg["name"]``: :attr:`Task.build`.

    Raises:
        ValueError: unknown task name (lists the valid ones).
    """
    return _plug_in(cfg).build(cfg, key)


def check_task(cfg: Mapping) -> None:
    """The up-front check (:attr:`Task.check`) of the task named ``cfg["name"]``, e.g. that the
    maze sampler reaches its mazes (:func:`jaxcollab.agents.maze.task.check_sampler`).

    Raises:
        ConfigValueError: a value the task's generator cannot serve (named).
        ValueError: unknown task name (lists the valid ones).
    """
    _plug_in(cfg).check(cfg)
