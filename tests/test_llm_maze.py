"""The collaboration-gap paper's LLM maze experiments (``eval/collabgap.py``, R3-R7 and solo)
end to end against the local test server's exact ``maze`` strategy, and the by-round
statistics (:mod:`jaxcollab.agents.maze.llm_results`) on known inputs.

The ``maze`` strategy answers ``~d`` with (0.55, 0.35, 0.05, 0.05) in odd rounds, ``~u`` with
(0.1, 0.2, 0.6, 0.1) in even rounds and, given the whole maze, the true move: so every round's
decisions, and with them move accuracy, maze success and the histograms, follow from the mazes'
true paths, which the tests read from the environment itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest
from hydra import compose, initialize_config_dir
from llm_server import MAZE_EVEN, MAZE_ODD, MAZE_REASONING

import jaxcollab
from jaxcollab.agents.maze.llm import naive_rare_action, solve_path
from jaxcollab.agents.maze.llm_results import (
    bootstrap_interval,
    by_round,
    confidence_histogram,
    team_decisions,
)
from jaxcollab.core.rollout import episode_keys, split_episode_key

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "configs" / "collabgap"
#: Tiny sizes: 2 test mazes x 2 rollouts, 2 held-out mazes, 2 rounds.
SIZE = ["mazes=2", "rollouts=2", "calibration_mazes=2", "rounds=2", "chunk=4"]
D, R, U = range(3)


def paths(seed: int, n: int) -> list[list[int]]:
    """The true move ids of mazes 0..n-1 of ``seed``, from the environment (episode keys as
    every rollout splits them)."""
    env = jaxcollab.make("maze/split-6x6")
    _, state = jax.vmap(lambda k: env.reset(split_episode_key(k)[0]))(episode_keys(seed, n))
    return [np.asarray(m)[: int(k)].tolist() for m, k in zip(state.moves, state.n_moves)]


def share(labels: list[list[int]], move: int) -> float:
    """The share of path steps whose true move is ``move`` (rollouts repeat every maze, which
    leaves it unchanged)."""
    return float(np.mean(np.concatenate(labels) == move))


def experiment(name: str, server, out: Path, *extra: str) -> dict:
    """``eval/collabgap.py experiment=<name>`` in process (one compiled rollout for all)."""
    from eval.collabgap import run

    with initialize_config_dir(str(CONFIGS), version_base=None):
        cfg = compose("collabgap", [f"experiment={name}", *SIZE, f"llm.base_url={server.url}",
                                    "llm.model=maze", "llm.backoff_s=0.01", f"out_dir={out}",
                                    *extra])
    return run(cfg)


def transcript(out: Path, step: str) -> list[dict]:
    return [json.loads(x) for x in (out / step / "maze-split-6x6.jsonl").read_text().splitlines()]


def prompts(rec: dict, agent: str, k: int) -> str:
    return next(h["prompt"][-1]["content"] for h in rec["agents"][agent] if h["round"] == k)


# --- statistics on known inputs ---------------------------------------------------------------

def test_bootstrap_interval_resamples_rollouts_within_mazes():
    same = bootstrap_interval(np.array([[1, 1], [0, 0]]))  # no spread within a maze
    assert (same["mean"], same["ci_low"], same["ci_high"]) == (0.5, 0.5, 0.5)
    spread = bootstrap_interval(np.array([[1, 0, 1, 0]] * 3))
    assert spread["ci_low"] < spread["mean"] == 0.5 < spread["ci_high"] and spread["level"] == 0.9
    with pytest.raises(ValueError, match=r"shape \(0,\)"):
        bootstrap_interval(np.array([]))


def test_confidence_histogram_counts_and_accuracy():
    rounds = [{"step": s, "round": 0, "move": None, "probs": p} for s, p in enumerate(
        [[0.55, 0.45, 0, 0], [0.25, 0.25, 0.25, 0.25], [0, 1.0, 0, 0], [0.1, 0.2, 0.65, 0.05]])]
    rec = {"episode": 0, "success": False, "data": {"labels": [D, R, R, R], "rounds": rounds}}
    hist = confidence_histogram([rec], 0)
    assert hist["bins"][0] == "0.2-0.3" and hist["bins"][-1] == "1.0" and len(hist["bins"]) == 9
    assert hist["count"] == [1, 0, 0, 1, 1, 0, 0, 0, 1]
    assert hist["accuracy"] == [0.0, None, None, 1.0, 0.0, None, None, None, 1.0]
    assert hist["confidence"][-1] == 1.0 and hist["confidence"][3] == 0.55


def test_by_round_success_is_per_round_and_team_play_decides_only_the_last():
    def rec(e, moves_by_round, success):
        labels = [D, R]
        rounds = [{"step": s, "round": k, "move": m, "probs": np.eye(4)[m].tolist()}
                  for s in range(2) for k, m in enumerate(moves_by_round[s])]
        return {"episode": e, "success": success, "data": {"labels": labels, "rounds": rounds}}

    recs = [rec(0, [(D, D), (U, R)], True), rec(1, [(D, D), (R, R)], True)]
    walked = by_round(recs, 2, rollouts=2, advance="path")
    assert walked["maze_success"] == [0.5, 1.0] and walked["step_accuracy"] == [0.75, 1.0]
    assert walked["maze_success_interval"][1] == [1.0, 1.0] and walked["mazes"] == 1
    played = by_round(recs, 2, rollouts=1, advance="team")
    assert played["maze_success"] == [None, 1.0] and played["maze_success_interval"][0] is None
    stopped = by_round(recs[:1], 2, rollouts=2)  # a maze without all its rollouts: left out
    assert stopped["mazes"] == 0 and stopped["maze_success"] == [None, None]


def test_team_play_credits_only_chosen_moves():
    """Step 0: no round gave a move, the fallback d was played and was right, yet not the
    model's; step 1: round 0's move stands when round 1 gave none; step 2: the last round's."""
    rec = {"episode": 0, "success": True, "data": {"labels": [D, R, D], "rounds": [
        {"step": 0, "round": 0, "move": None}, {"step": 0, "round": 1, "move": None},
        {"step": 1, "round": 0, "move": R}, {"step": 1, "round": 1, "move": None},
        {"step": 2, "round": 0, "move": U}, {"step": 2, "round": 1, "move": D}]}}
    assert team_decisions([rec]) == {"step_accuracy": 2 / 3, "fallback_moves": 1}
    assert team_decisions([]) == {"step_accuracy": None, "fallback_moves": 0}


def test_naive_correction_and_path_solver():
    assert naive_rare_action(np.array([0.1, 0.2, 0.6, 0.1])).tolist() == [0.5, 0.5, 0, 0]
    assert naive_rare_action(np.array([0.2, 0.1, 0.3, 0.4])).tolist() == [0.5, 0.5, 0, 0]
    assert naive_rare_action(np.array([0.3, 0.4, 0.2, 0.1])).tolist() == [0.3, 0.4, 0.2, 0.1]
    env = jaxcollab.make("maze/split-6x6")
    from jaxcollab.agents.maze.llm import merge_views

    for key, truth in zip(episode_keys(3, 4), paths(3, 4)):
        obs, _ = env.reset(split_episode_key(key)[0])
        assert solve_path(merge_views(np.asarray(obs)), env.shape) == truth


# --- the experiments end to end ----------------------------------------------------------------

@pytest.fixture(scope="module")
def r3(server, tmp_path_factory):
    """R3 through the CLI, as a user runs it; then the same command again (a resume)."""
    out = tmp_path_factory.mktemp("r3")
    cmd = [sys.executable, str(ROOT / "eval" / "collabgap.py"), "experiment=r3", *SIZE,
           f"llm.base_url={server.url}", "llm.model=maze", "llm.backoff_s=0.01", f"out_dir={out}"]
    env = os.environ | {"PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu"}
    first = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert first.returncode == 0, first.stderr[-3000:]
    sent = len(server.requests)
    again = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    return out, cmd, env, sent, len(server.requests), first


@pytest.mark.full  # a long run: the default tier's budget (CI runs -m full)
def test_r3_reserves_the_callback_threads_once_for_every_step(r3):
    """The thread pool is sized before JAX starts, for the whole chained experiment: each of
    the four steps used to warn that it started with too few threads (``PJRT_NPROC``)."""
    first = r3[-1]
    assert "PJRT_NPROC" not in first.stdout + first.stderr
    assert first.stdout.count("maze.setting=") == 4  # every step's own progress line stays


@pytest.mark.full  # a long run: the default tier's budget (CI runs -m full)
def test_r3_chains_action_verbalized_fit_and_calibrated(r3):
    out, _, _, sent, resent, _ = r3
    res = json.loads((out / "results.json").read_text())
    assert sent == resent  # the rerun resumed: every step finished, nothing sent again
    assert list(res["steps"]) == ["action", "verbalized", "calibration_fit",
                                  "verbalized_calibrated"]
    assert list(res["protocols"]) == ["action", "verbalized", "verbalized_calibrated"]
    assert (out / "collabgap.png").stat().st_size > 0 and res["model"] == "maze"
    test, held = paths(0, 2), paths(1, 2)
    for name in ("action", "verbalized"):  # rounds decide d, then u
        p = res["protocols"][name]
        assert p["rounds"] == [1, 2] and p["maze_success"] == [0.0, 0.0]
        assert p["step_accuracy"] == [share(test, D), share(test, U)]
        assert p["maze_success_interval"] == [[0.0, 0.0], [0.0, 0.0]]
    for p in res["protocols"].values():
        for mean, (lo, hi) in zip(p["calibration_loss"], p["calibration_loss_interval"]):
            assert lo <= mean <= hi
    # the calibrators were fitted on the held-out mazes only: constant reports per round, so
    # each round's calibrated vector is the held-out mazes' move frequencies
    freq = np.bincount(np.concatenate(held), minlength=4) / sum(map(len, held))
    cal = transcript(out, "verbalized_calibrated")
    for x in cal[0]["data"]["rounds"]:
        assert np.allclose(x["probs"], freq, atol=1e-4)
        assert x["raw"] == list(MAZE_ODD if x["round"] == 0 else MAZE_EVEN)
        assert x["move"] == int(np.argmax(x["probs"]))
    shown = prompts(cal[0], "agent1", 1)
    assert f"down {cal[0]['data']['rounds'][0]['probs'][0]:.2f}" in shown
    assert transcript(out, "calibration_fit")[0]["data"]["labels"] == held[0]
    # episode e is rollout e % 2 of maze e // 2
    assert [(r["episode"], r["data"]["labels"]) for r in transcript(out, "action")] == \
        [(e, test[e // 2]) for e in range(4)]


@pytest.mark.full  # a long run: the default tier's budget (CI runs -m full)
def test_r3_rerun_with_another_model_is_refused(r3):
    out, cmd, env, _, _, _ = r3
    other = subprocess.run([c.replace("llm.model=maze", "llm.model=good") for c in cmd],
                           capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert other.returncode != 0 and "llm.model" in other.stderr + other.stdout


@pytest.mark.full  # long: the default tier's time (issue 36)
def test_r4_naive_rare_action_in_context(server, tmp_path):
    res = experiment("r4", server, tmp_path)
    test = paths(0, 2)
    naive = res["protocols"]["verbalized_naive"]
    assert naive["step_accuracy"] == [share(test, D), share(test, D)]  # u became 0.5 d / 0.5 r
    rec = transcript(tmp_path, "verbalized_naive")[0]
    second = [x for x in rec["data"]["rounds"] if x["round"] == 1][0]
    assert second["raw"] == list(MAZE_EVEN) and second["probs"] == [0.5, 0.5, 0.0, 0.0]
    assert list(res["protocols"]) == ["verbalized", "verbalized_calibrated", "verbalized_naive"]


def test_r6_confidence_histograms(server, tmp_path):
    res = experiment("r6", server, tmp_path, "samples=2")
    test = paths(0, 2)
    steps = 2 * sum(map(len, test))  # two rollouts of every path step
    verbal, sampled = (res["protocols"][n]["confidence"] for n in ("verbalized", "sampled"))
    assert verbal[0]["count"][3] == steps == sum(verbal[0]["count"])  # 0.55: bin 0.5-0.6
    assert verbal[1]["count"][4] == steps  # 0.6: bin 0.6-0.7
    assert verbal[0]["accuracy"][3] == share(test, D) and verbal[1]["accuracy"][4] == share(test, U)
    assert sampled[0]["count"][-1] == steps and sampled[0]["accuracy"][-1] == share(test, D)
    assert (tmp_path / "confidence.png").stat().st_size > 0


def test_r7_full_passes_the_reasoning_text(server, tmp_path):
    res = experiment("r7", server, tmp_path, "tell_partner=true")
    rec = transcript(tmp_path, "full")[0]
    shown = prompts(rec, "agent1", 1)
    assert f"Your partner's latest message: {MAZE_REASONING} 1.\n\nMy move. ~d % 0.55" in shown
    system = rec["agents"]["agent0"][0]["prompt"][0]["content"]
    assert "probability for each move" in system and "write your partner a message" in system
    other = transcript(tmp_path, "action")[0]["agents"]["agent0"][0]["prompt"][0]["content"]
    assert "write your partner a message" not in other  # tell_partner reaches full steps only
    assert res["protocols"]["full"]["step_accuracy"] == res["protocols"]["action"]["step_accuracy"]


def test_solo_full_maze_reference(server, tmp_path):
    res = experiment("solo", server, tmp_path)
    solo = res["protocols"]["solo"]
    assert solo["rounds"] == [1] and solo["maze_success"] == [1.0]
    assert solo["step_accuracy"] == [1.0] and solo["maze_success_interval"] == [[1.0, 1.0]]
    assert res["steps"]["solo"]["success_rate"] == 1.0


def test_r5_sampled_against_verbalized_and_calibrated(server, tmp_path):
    res = experiment("r5", server, tmp_path, "samples=3")
    test = paths(0, 2)
    assert list(res["protocols"]) == ["verbalized", "verbalized_calibrated", "sampled"]
    sampled = res["protocols"]["sampled"]
    assert sampled["step_accuracy"] == [share(test, D), share(test, U)]
    rec = transcript(tmp_path, "sampled")[0]
    assert len([h for h in rec["agents"]["agent0"] if h["step"] == 0]) == 3


def test_bad_experiment_options_are_refused_before_any_request(server, tmp_path):
    from jaxcollab.core.errors import ConfigValueError

    sent = len(server.requests)
    with pytest.raises(ConfigValueError, match="calibration_seed"):
        experiment("r3", server, tmp_path / "a", "calibration_seed=0")
    with pytest.raises(ConfigValueError, match="steps.verbalized_calibrated.calibration"):
        experiment("r3", server, tmp_path / "b", "steps.3.calibration=null")
    from eval.rollout import run

    with initialize_config_dir(str(ROOT / "configs"), version_base=None):
        cfg = compose("rollout", ["env=maze/split-6x6", "agent=llm", "maze.tell_partner=true",
                                  f"llm.base_url={server.url}", f"out_dir={tmp_path / 'c'}"])
    with pytest.raises(ConfigValueError, match="maze.tell_partner"):
        run(cfg)
    assert len(server.requests) == sent and not (tmp_path / "a" / "results.json").exists()
