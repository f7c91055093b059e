"""Task data for the round trainer, prefixes, and the cross-fitting plan.

A :class:`CollabTask` is everything the trainer needs from a task: its vocabulary, the label
classes, and for each split each agent's view tokens, the labels, and (where known) the true
class probabilities. Parity and the maze task build one; the trainer never looks inside. A
family's :attr:`~jaxcollab.core.family.Family.task` builds it from ``task=<family>``
(:func:`task_data`, :func:`check_task`).

Prefix of round r (Narrowing the Collaboration Gap, Probably, App. E): the agent's view, then for
each earlier round ``|`` and that round's message tokens in order, then ``=``; the model predicts
the label character next.

Cross-fitting (no model labels examples it trained on) *(ours)*: the training set is
cut into ``n_rounds`` disjoint contiguous chunks; round r fits (and validates) only on chunk r
and labels chunks r+1.. and the test set. So the messages in every prefix a round trains on
come from models that never saw those examples, and test messages come from the same models.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import jax
import numpy as np

from jaxcollab.core.family import RoundTask
from jaxcollab.core.registry import family, family_names


@dataclasses.dataclass(frozen=True)
class TaskSplit:
    """One split of a task.

    Attributes:
        views: per agent, uint8 token ids ``[N, L_a]`` of what that agent sees.
        labels: int32 ``[N]`` class index of the label.
        target: float32 ``[N, C]`` true class probabilities (parity: ``[1 − p*, p*]``).
    """

    views: tuple[np.ndarray, ...]
    labels: np.ndarray
    target: np.ndarray

    def __len__(self) -> int:
        return len(self.labels)


@dataclasses.dataclass(frozen=True)
class CollabTask:
    """A collaborative-prediction task as the round trainer sees it.

    Attributes:
        name: task name (``"parity"``).
        vocab: character vocabulary; token id = index. Must contain ``sep`` and ``answer``.
        class_chars: label character per class, in class order.
        train, test: the splits.
        sep, answer: the separator before each message and the delimiter before the label.
    """

    name: str
    vocab: str
    class_chars: str
    train: TaskSplit
    test: TaskSplit
    sep: str = "|"
    answer: str = "="

    @property
    def n_agents(self) -> int:
        return len(self.train.views)

    @property
    def class_tokens(self) -> np.ndarray:
        """Token id of each class character, int32 ``[C]``."""
        return np.array([self.vocab.index(c) for c in self.class_chars], np.int32)

    def prefix_length(self, agent: int, n_messages: int, width: int) -> int:
        """Tokens in agent's prefix after ``n_messages`` messages of ``width`` tokens."""
        return self.train.views[agent].shape[1] + n_messages * (1 + width) + 1


def build_prefix(task: CollabTask, view: np.ndarray, messages: list[np.ndarray]) -> np.ndarray:
    """View ``[N, L]`` plus earlier messages (each ``[N, w]``, in round order) → int32 prefix.

    Returns ``[N, L + Σ(1 + w) + 1]``: the view, ``sep`` + message per earlier round, ``answer``.
    """
    n = len(view)
    sep = np.full((n, 1), task.vocab.index(task.sep), np.int32)
    parts = [view.astype(np.int32)]
    for message in messages:
        parts += [sep, message.astype(np.int32)]
    parts.append(np.full((n, 1), task.vocab.index(task.answer), np.int32))
    return np.concatenate(parts, axis=1)


def round_chunks(n_train: int, n_rounds: int) -> list[slice]:
    """The disjoint training chunk of each round: ``n_rounds`` contiguous slices of ``n_train``.

    Raises:
        ValueError: fewer than two examples per chunk.
    """
    if n_train < 2 * n_rounds:
        raise ValueError(f"{n_train} training examples cannot be cut into {n_rounds} round chunks")
    edges = np.linspace(0, n_train, n_rounds + 1).astype(int)
    return [slice(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:], strict=True)]


def round_task(cfg: Mapping) -> RoundTask:
    """The round-trainer task named ``cfg["name"]``: the plug-in's
    :attr:`~jaxcollab.core.family.Family.task` of the family of that name.

    Raises:
        ValueError: no family of that name has a task (lists those that do).
    """
    name = cfg.get("name")
    plugin = _family_or_none(str(name))
    if plugin is None or plugin.task is None:
        raise ValueError(f"unknown task {name!r}; expected one of {task_names()}")
    return plugin.task


def task_names(where: Callable[[RoundTask], bool] = lambda task: True) -> list[str]:
    """The names of the known round-trainer tasks for which ``where(task)`` holds, sorted
    (e.g. those with an exact theory, for an error message)."""
    return sorted(n for n in family_names()
                  if (p := _family_or_none(n)) is not None and p.task is not None
                  and where(p.task))


def _family_or_none(name: str):
    try:
        return family(name)
    except KeyError:
        return None


def task_data(cfg: Mapping, key: jax.Array) -> tuple[CollabTask, Any]:
    """``(task, source)`` of the task named ``cfg["name"]``: its
    :attr:`~jaxcollab.core.family.RoundTask.build` (source: what it was made from, e.g. the maze
    split; None).

    Raises:
        ValueError: unknown task name (lists the valid ones), or the builder's refusal.
    """
    return round_task(cfg).build(cfg, key)


def make_task(cfg: Mapping, key: jax.Array) -> CollabTask:
    """The :class:`CollabTask` of the task named ``cfg["name"]`` (:func:`task_data`'s first).

    Raises:
        ValueError: as :func:`task_data`.
    """
    return task_data(cfg, key)[0]


def check_task(cfg: Mapping) -> None:
    """The up-front check (:attr:`~jaxcollab.core.family.RoundTask.check`) of the task named
    ``cfg["name"]``, e.g. that the maze sampler reaches its mazes.

    Raises:
        ConfigValueError: a value the task's generator cannot serve (named).
        ValueError: unknown task name (lists the valid ones).
    """
    round_task(cfg).check(cfg)
