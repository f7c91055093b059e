"""The maze as a round-trainer task, and its results plot (issue 4)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from jaxcollab.agents.maze.plots import maze_success_plot
from jaxcollab.agents.maze.task import collab_task, maze_split
from jaxcollab.collab.data import build_prefix, check_task
from jaxcollab.core.errors import ConfigValueError
from jaxcollab.envs.maze import text


@pytest.fixture(scope="module")
def split():
    return maze_split({"n_examples": 400, "view": "masked"}, jax.random.key(0))


def test_collab_task_reads_the_chosen_roles(split):
    train, test, stats = split
    assert stats["accepted"] >= len(train) + len(test)
    task = collab_task(train, test, (1, text.SOLO))
    views = test.views()
    labels = test.examples()["label"]
    np.testing.assert_array_equal(task.test.views[0], views[:, 1])
    np.testing.assert_array_equal(task.test.views[1], views[:, text.SOLO])
    np.testing.assert_array_equal(task.test.labels, labels)
    np.testing.assert_array_equal(task.test.target, np.eye(4)[labels])
    assert task.class_chars == "drul" and len(task.train) == train.n_moves.sum()
    # the trainer's prefix of round 1 is the view then "=": the example text without the label
    prefix = build_prefix(task, task.train.views[1], [])
    assert text.decode(prefix[0]) == train.strings(text.SOLO)[0][:-1]


def test_bad_roles_and_views_are_refused(split):
    train, test, _ = split
    with pytest.raises(ValueError, match=r"\[0, 3\]"):
        collab_task(train, test, (0, 3))
    with pytest.raises(ValueError, match="'own'"):
        maze_split({"n_examples": 100, "view": "own"}, jax.random.key(0))


def test_the_task_plug_in_checks_its_sampler_up_front(split):
    """``train/collab.py``'s up-front check is the task plug-in's (:func:`check_task`): the maze
    sampler must reach its mazes (the split's own draw: accepted); parity's is its coefficient
    rule (the schema's too)."""
    check_task({"name": "maze", "n_examples": 400})
    check_task({"name": "parity", "alphas": [0.2, 0.15], "n_bits": 8, "alpha_sum": 0.49})
    with pytest.raises(ConfigValueError, match=r"task\.alphas=\[0\.6\] is invalid; expected "
                       r"coefficients >= 0 summing to at most task\.alpha_sum=0\.49"):
        check_task({"name": "parity", "alphas": [0.6], "n_bits": 2, "alpha_sum": 0.49})
    with pytest.raises(ConfigValueError, match=r"task\.wall_prob=0\.95 is invalid; expected a "
                       r"wall probability whose 6x6 grids have exactly one path often enough: "
                       r"0 of 16384 candidates do, so 42 mazes need about inf rejection rounds"):
        check_task({"name": "maze", "n_examples": 400, "wall_prob": 0.95})
    with pytest.raises(ValueError, match=r"unknown task 'maze9'; expected one of \['maze'"):
        check_task({"name": "maze9"})


def test_success_plot_is_written(tmp_path):
    results = {
        "protocols": {
            "action": {"rounds": [1, 2], "maze_success": [0.1, 0.2], "step_accuracy": [0.8, 0.85]}
        },
        "baselines": {
            "solo": {"maze_success": 0.5, "step_accuracy": 0.95},
            "half_view": {"agent0": {"maze_success": 0.05, "step_accuracy": 0.7}},
        },
    }
    maze_success_plot(results, tmp_path / "m.png")
    assert (tmp_path / "m.png").read_bytes()[:4] == b"\x89PNG"
