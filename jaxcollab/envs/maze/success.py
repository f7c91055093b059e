"""Maze success (Narrowing the Collaboration Gap, Probably, §5, App. E): conversations of K rounds
drive the env.

At every step of a maze the two agents hold a conversation of K rounds: in round r the role
``speakers[r]`` reads its view followed by ``|`` + message for each earlier round and ``=``
(the prefix layout of the round trainer), outputs move probabilities, and sends
``encode(probs)``. After the last round the team commits that speaker's most likely move; a
wrong move ends the maze, and **maze success** is the fraction of mazes whose every move is
right. Baselines use one round: ``speakers=(SOLO,)`` (role 2, full maze) or ``(0,)`` / ``(1,)`` (one
agent alone on its half).

A *predictor* is any function ``tokens int32 [B, T] → probabilities float [B, 4]`` (one-hot
for a deterministic policy) in move order ``d r u l``, so scripted policies, the exact Bayes
reference and trained transformers are all evaluated by the same code.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import jax
import numpy as np

from jaxcollab.envs.maze.env import MazeEnv, state_from_maze
from jaxcollab.envs.maze.text import ANSWER, SEP, MazeSet, views

Predictor = Callable[[np.ndarray], np.ndarray]
#: Message encoder: probabilities float ``[B, 4]`` → message tokens int ``[B, width]``.
Encoder = Callable[[np.ndarray], np.ndarray]


def converse(
    role_views: np.ndarray,
    predictors: Mapping[int, Predictor],
    speakers: Sequence[int],
    encode: Encoder,
) -> np.ndarray:
    """Run one conversation on a batch of positions.

    Args:
        role_views: int ``[B, 3, C]`` view tokens of roles 0, 1 and ``SOLO`` (2).
        predictors: role → predictor; must cover every role in ``speakers``.
        speakers: the role speaking in each round (length K ≥ 1).
        encode: message encoder (e.g. ``MessageCodec.encode`` of ``jaxcollab.collab``).

    Returns:
        float32 ``[K, B, 4]``: each round's move probabilities.

    Raises:
        ValueError: no rounds, or a speaker without a predictor (lists the roles given).
    """
    missing = sorted(set(speakers) - set(predictors))
    if not speakers or missing:
        raise ValueError(
            f"speakers {list(speakers)} need predictors; missing roles {missing}, "
            f"given {sorted(predictors)}"
        )
    b = role_views.shape[0]
    sep, answer = np.full((b, 1), SEP, np.int32), np.full((b, 1), ANSWER, np.int32)
    messages, out = [], []
    for role in speakers:
        prefix = np.concatenate([role_views[:, role].astype(np.int32), *messages, answer], 1)
        probs = np.asarray(predictors[role](prefix), np.float32)
        out.append(probs)
        messages += [sep, np.asarray(encode(probs), np.int32)]
    return np.stack(out)


def maze_success(
    mazes: MazeSet,
    predictors: Mapping[int, Predictor],
    speakers: Sequence[int],
    encode: Encoder,
) -> dict[str, float]:
    """Roll every maze through :class:`MazeEnv` with a K-round conversation per step.

    The move committed after the conversation is the last round's argmax (ties → lowest move
    id); a wrong move terminates that maze. Every step converses on the whole batch (fixed
    shapes for jitted predictors) and counts only the mazes still running.

    Returns:
        ``{"maze_success": fraction of mazes reaching the goal, "step_accuracy": fraction of
        attempted moves that were right, "n_mazes": M}``.
    """
    env = MazeEnv(shape=mazes.shape)
    state = jax.vmap(state_from_maze)(
        mazes.open_, mazes.masks, mazes.moves.astype(np.int32), mazes.n_moves
    )
    step = jax.jit(jax.vmap(env.step, in_axes=(None, 0, 0)))
    running = np.ones(len(mazes), bool)
    success = np.zeros(len(mazes), bool)
    attempts = correct = 0
    while running.any():
        role_views = np.asarray(_views(state.open_, state.masks, state.pos))
        probs = converse(role_views, predictors, speakers, encode)[-1]  # fixed batch shape
        move = np.argmax(probs, -1).astype(np.int32)
        _, state, _, terminated, _, info = step(jax.random.key(0), state, np.stack([move, move], 1))
        attempts += int(running.sum())
        correct += int((running & np.asarray(info["correct"])).sum())
        success |= running & np.asarray(info["success"])
        running &= ~np.asarray(terminated)
    return {
        "maze_success": float(success.mean()),
        "step_accuracy": correct / attempts,
        "n_mazes": len(mazes),
    }


def success_from_steps(correct: np.ndarray, maze: np.ndarray, n_mazes: int) -> float:
    """Maze success from per-step correctness along the true path.

    Because the trajectory only advances on a right move, a maze succeeds exactly when every
    step's decision is right, so this equals :func:`maze_success` for the same decisions.

    Args:
        correct: bool ``[N]`` per example (one per path step, any order); maze: int ``[N]`` its
            maze index in ``[0, n_mazes)``.
    """
    wrong = np.bincount(maze, weights=~np.asarray(correct, bool), minlength=n_mazes)
    return float(np.mean(wrong == 0))


def success_by_round(
    mazes: MazeSet, predictors: Mapping[int, Predictor], n_rounds: int, encode: Encoder
) -> dict[str, list[float]]:
    """Maze success and step accuracy when the team decides after 1, 2, …, K rounds.

    Speakers alternate ``0, 1, 0, …``. Returns lists of length K under ``maze_success`` and
    ``step_accuracy`` (element k−1: decision after round k).
    """
    rows = [
        maze_success(mazes, predictors, [r % 2 for r in range(k)], encode)
        for k in range(1, n_rounds + 1)
    ]
    return {key: [row[key] for row in rows] for key in ("maze_success", "step_accuracy")}


_views = jax.jit(jax.vmap(views))
