"""The maze as a round-trainer task, and its results plot (issue 4)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from jaxcollab.collab.data import build_prefix
from jaxcollab.collab.maze_task import collab_task, maze_split
from jaxcollab.envs.maze import text
from jaxcollab.io.plots import maze_success_plot


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
