"""The README's commands, run as a user runs them: ``python <script> <overrides>`` in a child
process from the repository root, at tiny sizes, checking what they write.

Default tier: one cheap command per entry point family (export, rollout, calibration, LLM run
against the local test server). Under ``-m slow``: the costlier rows (Keep-Talking compiles, the
bank protocol, every team). Already subprocess-tested elsewhere, so not repeated here:
``eval/theory.py`` (tests/test_theory.py), the main job ``train/collab.py
experiment=parity_separation preset=cpu`` (tests/test_trainer_entry.py) and a resumed
``eval/rollout.py`` (tests/test_scale.py).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.llm_server import LLMServer

ROOT = Path(__file__).resolve().parent.parent


def run(script: str, *overrides: str, timeout: int = 600) -> str:
    """Run ``python script overrides`` from the repository root; its stdout + stderr.

    Raises:
        AssertionError: a non-zero exit (the message holds the end of its output).
    """
    env = dict(os.environ, JAX_PLATFORMS="cpu", WANDB_MODE="disabled")
    done = subprocess.run([sys.executable, script, *overrides], cwd=ROOT, env=env, text=True,
                          capture_output=True, timeout=timeout)
    log = done.stdout + done.stderr
    assert done.returncode == 0, f"{script} {' '.join(overrides)} exited {done.returncode}:\n" \
                                 f"{log[-3000:]}"
    return log


def results(out_dir: Path) -> dict:
    return json.loads((out_dir / "results.json").read_text())


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# --- default tier -----------------------------------------------------------------------------


@pytest.mark.full  # long: the default tier's time (issue 36)
def test_export_mazes(tmp_path):
    """``python eval/export.py env=maze/split-6x6 n=100 out=mazes.jsonl`` at n=3."""
    run("eval/export.py", "env=maze/split-6x6", "n=3", f"out={tmp_path / 'mazes.jsonl'}")
    records = jsonl(tmp_path / "mazes.jsonl")
    assert [r["index"] for r in records] == [0, 1, 2]
    steps = {"d": (1, 0), "u": (-1, 0), "r": (0, 1), "l": (0, -1)}
    for r in records:
        path, grid = r["path"], r["grid"]
        assert path[0] == [0, 0] and path[-1] == [5, 5] and len(r["moves"]) == len(path) - 1
        for (a, b), m in zip(zip(path, path[1:]), r["moves"]):
            assert (b[0] - a[0], b[1] - a[1]) == steps[m]
        assert all(grid[i][j] == "." for i, j in path)
        masks = np.array(r["masks"])
        assert (masks.sum(0) == 1).all() and masks.sum(1).tolist() == [18, 18]
        assert set(r["text"]) == {"agent0", "agent1"}


@pytest.mark.full  # long: the default tier's time (issue 36)
def test_rollout_bomb_oracle(tmp_path):
    """``python eval/rollout.py env=bomb/all agent=oracle episodes=600 …`` on one variant."""
    out = tmp_path / "run"
    run("eval/rollout.py", "env=bomb/base-1", "agent=oracle", "episodes=6", f"out_dir={out}")
    r = results(out)
    assert (r["env"], r["agent"], r["episodes"]) == ("bomb/base-1", "oracle", 6)
    assert r["success_rate"] == 1.0 and r["endings"]["defused"] == 6  # the oracle solves all
    assert r["rejected_acts"] == 0 and r["never_acted"] == 0


@pytest.mark.full  # long: the default tier's time (issue 36)
def test_calibration_ideal_decoders(tmp_path):
    """``python eval/calibration.py task=parity decoder=ideal bias.beta=1 bias.gamma=0.5 …``."""
    out = tmp_path / "calib"
    run("eval/calibration.py", "task=parity", "decoder=ideal", "bias.beta=1", "bias.gamma=0.5",
        f"out_dir={out}")
    r = results(out)
    assert r["rounds"] == [1, 2, 3, 4, 5] and all(r["converged"]["conversation"])
    # The conversation calibrator undoes the bias: its MSE is the unbiased speakers' MSE.
    np.testing.assert_allclose(r["conversation_mse"], r["unbiased_mse"], atol=1e-6)
    assert all(c <= raw + 1e-9 for c, raw in zip(r["conversation_mse"], r["raw_mse"]))
    assert (out / "reliability.png").stat().st_size > 0


@pytest.mark.full  # long: the default tier's time (issue 36)
def test_llm_run_against_a_local_server(tmp_path):
    """``python eval/llm.py env=bomb/base-1 llm.base_url=… llm.model=… episodes=9 …`` at 2
    episodes against the scripted OpenAI-compatible test server, after a first try with a
    model the server does not serve: that one fails before any work, naming the model, and
    its out_dir takes the corrected command (no collision)."""
    out = tmp_path / "llm"
    with LLMServer() as server:
        with pytest.raises(AssertionError, match="model 'nosuch' is not served"):
            run("eval/llm.py", "env=bomb/base-1", f"llm.base_url={server.url}",
                "llm.model=nosuch", "episodes=2", f"out_dir={out}")
        run("eval/llm.py", "env=bomb/base-1", f"llm.base_url={server.url}", "llm.model=good",
            "episodes=2", f"out_dir={out}")
        assert server.requests  # the run talked to the server
    r = results(out)
    assert r["episodes"] == 2 and r["parse_errors"] == {} and r["model"] == "good"
    assert sum(r["endings"].values()) == 2


# --- slow tier --------------------------------------------------------------------------------


@pytest.mark.slow
def test_export_bomb_and_ktane(tmp_path):
    """``eval/export.py env=bomb/all n=5`` and ``env=ktane/morse n=100`` at n=1."""
    run("eval/export.py", "env=bomb/all", "n=1", f"out={tmp_path / 'bomb.jsonl'}")
    bomb = jsonl(tmp_path / "bomb.jsonl")
    assert len(bomb) == 24 and all(len(r["solution"]) == r["variant"]["steps"] for r in bomb)
    run("eval/export.py", "env=ktane/morse", "n=2", f"out={tmp_path / 'morse.jsonl'}")
    assert [r["index"] for r in jsonl(tmp_path / "morse.jsonl")] == [0, 1]


@pytest.mark.slow
def test_rollout_ktane_oracle_and_talking(tmp_path):
    """``eval/rollout.py env=ktane/all agent=oracle …`` and ``agent=talking …`` on one module."""
    run("eval/rollout.py", "env=ktane/wires", "agent=oracle", "episodes=8",
        f"out_dir={tmp_path / 'oracle'}")
    assert results(tmp_path / "oracle")["success_rate"] == 1.0
    run("eval/rollout.py", "env=ktane/wires", "agent=talking", "ruleset=random",
        "ruleset_seed=0", "episodes=8", f"out_dir={tmp_path / 'talking'}")
    assert results(tmp_path / "talking")["episodes"] == 8


@pytest.mark.slow
def test_bank_protocol_with_a_solo_baseline(tmp_path):
    """``eval/rollout.py env=bomb/all agent=solo bank=true repeats=3`` then ``agent=symbol …
    solo=…/results.json`` on one family."""
    solo = tmp_path / "solo"
    run("eval/rollout.py", "env=bomb/base", "agent=solo", "bank=true", "repeats=1",
        f"out_dir={solo}")
    run("eval/rollout.py", "env=bomb/base", "agent=symbol", "bank=true", "repeats=1",
        f"solo={solo / 'results.json'}", f"out_dir={tmp_path / 'symbol'}")
    r = results(tmp_path / "symbol")
    assert r["episodes"] == 5 * 3 and "gap" in r["summary"]


@pytest.mark.slow
def test_protocols_table(tmp_path):
    """``python eval/protocols.py episodes=60 out_dir=…`` on one variant and two teams."""
    out = tmp_path / "protocols"
    run("eval/protocols.py", "env=bomb/base-1", "teams=[onebit,oracle]", "episodes=6",
        f"out_dir={out}")
    teams = results(out)["teams"]
    assert list(teams) == ["onebit", "oracle"] and teams["oracle"]["success_rate"] == 1.0
    assert all(t["episodes"] == 6 for t in teams.values())
    assert (out / "protocols.md").read_text() and (out / "protocols.png").stat().st_size > 0
