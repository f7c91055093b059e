"""The split-mask maze as a round-trainer task (Narrowing the Collaboration Gap, Probably, §5 and
App. E; issue 4).

Each example is one step of a maze's unique path: agent a reads its masked grid with ``@`` on the
current position (:func:`jaxcollab.envs.maze.text.views`), the label is the next move in
``d r u l``, and the target distribution is that move (the full maze determines it). Roles pick
which views the trainer's agents read: ``(0, 1)`` for the two-agent conversation, ``(SOLO,)``
for the full-maze baseline, ``(a,)`` for agent a alone on its half.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import jax
import numpy as np

from jaxcollab.agents.maze.config import MazeTask
from jaxcollab.collab.data import CollabTask, TaskSplit
from jaxcollab.collab.messages import decide
from jaxcollab.core.config import typed
from jaxcollab.core.family import Scores
from jaxcollab.envs.maze import generator, text
from jaxcollab.envs.maze.success import success_from_steps

MAZE_VIEWS = ("masked",)


def _split(mazes: text.MazeSet, roles: Sequence[int]) -> TaskSplit:
    views = mazes.views()
    labels = mazes.examples()["label"]
    target = np.eye(4, dtype=np.float32)[labels]
    return TaskSplit(tuple(np.ascontiguousarray(views[:, r]) for r in roles), labels, target)


def collab_task(train: text.MazeSet, test: text.MazeSet, roles: Sequence[int] = (0, 1)):
    """A :class:`CollabTask` over the examples of ``train`` / ``test`` read by ``roles``.

    Raises:
        ValueError: an unknown role (valid: 0, 1 and ``text.SOLO`` = 2).
    """
    bad = [r for r in roles if r not in (0, 1, text.SOLO)]
    if not roles or bad:
        raise ValueError(f"bad maze roles {list(roles)}; expected a non-empty list of 0, 1, 2")
    return CollabTask(
        name="maze",
        vocab=text.VOCAB,
        class_chars=generator.MOVE_CHARS,
        train=_split(train, roles),
        test=_split(test, roles),
    )


def maze_split(cfg: Mapping, key: jax.Array) -> tuple[text.MazeSet, text.MazeSet, dict]:
    """Train/test mazes from a ``configs/task/maze.yaml``-style mapping.

    Keys: ``height, width, wall_prob, n_examples, test_fraction, view`` (only ``"masked"``).

    Raises:
        ValueError: an unknown view or bad sizes (from the dataset builder).
    """
    view = _task(cfg).view
    if view not in MAZE_VIEWS:
        raise ValueError(f"unknown maze view {view!r}; expected one of {MAZE_VIEWS}")
    return text.build_dataset(key, int(cfg["n_examples"]), float(_task(cfg).test_fraction),
                              _wall_prob(cfg), _shape(cfg))


def _task(cfg: Mapping) -> MazeTask:
    """The task's keys as attributes, each missing one at its schema default."""
    return typed(MazeTask, cfg)


def _shape(cfg: Mapping) -> tuple[int, int]:
    return int(_task(cfg).height), int(_task(cfg).width)


def _wall_prob(cfg: Mapping) -> float:
    return float(_task(cfg).wall_prob)


#: Rejection rounds of :func:`jaxcollab.envs.maze.generator.sample_mazes` a run may need (ours).
MAX_SAMPLER_ROUNDS = 10_000


def check_sampler(cfg: Mapping) -> None:
    """Refuse a wall probability whose grids so rarely have exactly one path that the maze
    split could not be drawn: one rejection round (the generator's, compiled once for the run
    too) predicts how many the split needs.

    Raises:
        ConfigValueError: ``task.wall_prob``, with the candidates accepted and the rounds needed.
    """
    from jaxcollab.core.errors import ConfigValueError

    shape, chunk = _shape(cfg), 1 << 14  # text.make_mazes's rounds
    _, accept = jax.device_get(generator.draw_and_check(jax.random.PRNGKey(0), chunk,
                                                        _wall_prob(cfg), shape))
    n_mazes = int(cfg["n_examples"] / (sum(shape) - 2)) + 2  # text.build_dataset's draw
    rounds = n_mazes / accept.sum() if accept.any() else float("inf")
    if rounds > MAX_SAMPLER_ROUNDS:
        raise ConfigValueError("task.wall_prob", cfg["wall_prob"], f"a wall probability whose "
                               f"{shape[0]}x{shape[1]} grids have exactly one path often enough: "
                               f"{int(accept.sum())} of {chunk} candidates do, so {n_mazes} mazes"
                               f" need about {rounds:.3g} rejection rounds (at most "
                               f"{MAX_SAMPLER_ROUNDS})")


def maze_task(cfg: Mapping, key: jax.Array) -> tuple[CollabTask, tuple]:
    """The two-agent maze task and its source, ``(train, test, stats)`` of :func:`maze_split`
    (the round trainer's task-builder signature: maze scores and baselines read the mazes)."""
    train, test, stats = maze_split(cfg, key)
    return collab_task(train, test), (train, test, stats)


def naive_rare_action(probs, class_chars: str, rare: str = "ul", fallback: str = "dr"):
    """The naive rare-action baseline for maze messages (Narrowing the Collaboration Gap, Probably,
    §6 R4, Figure 8).

    Wherever the arg-max class is a rare move (``rare``, default up or left), the vector is
    replaced by a uniform split over ``fallback`` (default 0.5 down / 0.5 right).

    Args:
        probs: float ``[..., C]`` probability vectors in ``class_chars`` order.

    Returns:
        float32 ``[..., C]``.

    Raises:
        ValueError: a ``rare`` or ``fallback`` character that is not a class.
    """
    missing = sorted(set(rare + fallback) - set(class_chars))
    if missing:
        raise ValueError(f"classes {missing} are not in class_chars={class_chars!r}")
    probs = np.asarray(probs, np.float32)
    replace = np.isin(np.argmax(probs, -1), [class_chars.index(c) for c in rare])
    split = np.zeros(len(class_chars), np.float32)
    split[[class_chars.index(c) for c in fallback]] = 1.0 / len(fallback)
    return np.where(replace[..., None], split, probs)


def success_by_round(correct: np.ndarray, source: tuple) -> list[float]:
    """Maze success by round of the test decisions ``correct`` bool ``[K, N]`` (one row per
    round, one column per path step of ``source``'s test mazes, :func:`maze_task`): the
    fraction of test mazes whose every step is decided right."""
    maze_ids = source[1].examples()["maze"]
    n_mazes = int(np.max(maze_ids)) + 1
    return [success_from_steps(c, maze_ids, n_mazes) for c in correct]


#: The calibration experiment's score of the maze task (paper §5 R2 and §6 R4, Figure 8).
SCORES = Scores("maze_success", "maze success", success_by_round,
                {"naive_rare_action": naive_rare_action})


def maze_scores(probs: np.ndarray, labels: np.ndarray, maze_ids: np.ndarray,
                n_mazes: int) -> dict[str, float]:
    """Maze success and step accuracy of per-step predictions (decision = arg-max).

    Args:
        probs: float ``[N, 4]`` predicted move distributions, one row per path step.
        labels: int ``[N]`` true moves; maze_ids: int ``[N]`` the maze of each step.
        n_mazes: number of mazes the steps cover.

    Returns:
        ``maze_success`` (fraction of mazes whose every step is decided right: the trajectory
        advances one step per conversation and a wrong move ends it; Narrowing the Collaboration
        Gap, Probably, §5) and ``step_accuracy`` (fraction of steps decided right).
    """
    correct = np.asarray(decide(probs)) == labels
    return {"maze_success": success_from_steps(correct, maze_ids, n_mazes),
            "step_accuracy": float(correct.mean())}
