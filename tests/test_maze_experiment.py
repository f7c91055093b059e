"""train/maze.py end to end at toy size (slow): results keys, baselines, shared round 1."""

import json

import pytest


@pytest.mark.slow
def test_maze_messages_end_to_end_tiny(tmp_path, cli):
    cli("train/maze.py", "experiment=maze_messages", "preset=cpu", "task.n_examples=4000",
        "train.steps=10", "train.warmup_steps=2", "train.eval_every=5", "train.val_examples=64",
        "bayes_mazes=2", f"out_dir={tmp_path}")
    results = json.loads((tmp_path / "results.json").read_text())
    for name in ("action", "probability"):
        entry = results["protocols"][name]
        assert entry["rounds"] == [1, 2, 3, 4]
        assert all(0 <= s <= a <= 1 for s, a in zip(entry["maze_success"],
                                                     entry["step_accuracy"], strict=True))
    # agent 0 alone on its half is round 1 of the conversation, shared by both protocols
    first = {k: results["protocols"]["action"][k][0] for k in ("maze_success", "step_accuracy")}
    assert results["baselines"]["half_view"]["agent0"] == first
    assert results["protocols"]["probability"]["train_seconds"][0] == 0.0
    assert set(results["baselines"]["half_view"]) == {"agent0", "agent1"}
    assert 0 <= results["baselines"]["solo"]["maze_success"] <= 1
    assert results["bayes_first_move"]["n_mazes"] == 2
    assert (tmp_path / "maze_success.png").stat().st_size > 0
