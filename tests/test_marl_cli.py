"""The MARL command lines as subprocesses: train/marl.py (tiny preset, then a resuming rerun;
a Keep-Talking module; per-episode rulesets), eval/rollout.py agent=learned on the teams they
wrote and eval/crossplay.py on a run's seeds."""

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # three processes, each compiling the env inside a training loop


def _run(*args, cwd):
    out = subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True,
                         env=os.environ, timeout=1800)
    assert out.returncode == 0, out.stderr[-3000:]
    return out


def test_train_resume_and_play_the_learned_team(tmp_path, request):
    root = request.config.rootpath
    out = tmp_path / "run"
    _run("train/marl.py", "env=bomb/base-1", "preset=tiny", f"out_dir={out}", cwd=root)
    res = json.loads((out / "results.json").read_text())
    assert res["curve"]["updates"] == [1, 2]
    assert len(res["curve"]["heldout_success"][0]) == 2          # two seeds vmapped
    assert res["success_over_seeds"]["per_seed"] == res["success_rate_per_seed"]
    assert 0.0 <= res["success_rate"] <= 1.0
    assert sum(res["heldout"]["endings"].values()) == res["config"]["eval_episodes"]
    assert (out / "learning_curve.png").stat().st_size > 0
    _run("train/marl.py", "env=bomb/base-1", "preset=tiny", f"out_dir={out}", cwd=root)
    again = json.loads((out / "results.json").read_text())
    assert again["curve"] == res["curve"] and again["success_rate"] == res["success_rate"]
    played = tmp_path / "played"
    _run("eval/rollout.py", "env=bomb/base-1", "agent=learned", f"checkpoint={out}/team",
         "episodes=12", f"out_dir={played}", cwd=root)
    rolled = json.loads((played / "results.json").read_text())
    assert rolled["agent"] == "learned" and rolled["episodes"] == 12


def test_train_on_a_keep_talking_module(tmp_path, request):
    out = tmp_path / "wires"
    _run("train/marl.py", "env=ktane/wires", "preset=tiny", "eval_episodes=8", f"out_dir={out}",
         cwd=request.config.rootpath)
    res = json.loads((out / "results.json").read_text())
    assert res["curve"]["updates"] == [1, 2] and 0.0 <= res["success_rate"] <= 1.0
    assert (out / "team" / "config.json").is_file() and (out / "protocol.png").is_file()
    bits = res["protocol"]["expert"]
    assert 0.0 <= bits["mutual_information_bits"] <= bits["action_entropy_bits"] + 1e-9
    played = tmp_path / "played"  # the Keep-Talking plug-in offers the learned team too
    _run("eval/rollout.py", "env=ktane/wires", "agent=learned", f"checkpoint={out}",
         "episodes=8", f"seed={res['config']['eval_seed']}", f"out_dir={played}",
         cwd=request.config.rootpath)
    rolled = json.loads((played / "results.json").read_text())
    assert rolled["agent"] == "learned" and rolled["episodes"] == 8
    assert rolled["success_rate"] == res["success_rate"]  # the same held-out episodes
    assert sum(res["heldout"]["outcomes"].values()) == 8


def test_per_episode_rulesets_and_the_cross_play_of_their_seeds(tmp_path, request):
    root, out = request.config.rootpath, tmp_path / "wires"
    _run("train/marl.py", "env=ktane/wires", "preset=tiny", "ppo.rulesets=episode",
         "eval_episodes=8", f"out_dir={out}", cwd=root)
    res = json.loads((out / "results.json").read_text())
    assert res["heldout"] == {"episodes": 8, "rulesets": "heldout pool", "pool": 128}
    assert res["success_rate"] == res["success_rate_per_seed"][0]
    assert res["protocol"]["expert"]["turns"] > 0
    cp = tmp_path / "cp"
    _run("eval/crossplay.py", "env=ktane/wires", f"checkpoint={out}", "episodes=8",
         f"out_dir={cp}", cwd=root)
    got = json.loads((cp / "results.json").read_text())
    assert got["roles"] == ["defuser", "expert"] and got["seeds"] == 2
    rates = [a["success_rate"] for a in got["assignments"]]
    assert got["matrix"]["values"] == [rates[:2], rates[2:]]
    assert got["self_play"] == (rates[0] + rates[3]) / 2
    assert got["cross_play"] == (rates[1] + rates[2]) / 2
    assert rates[0] == res["success_rate_per_seed"][0]   # seed 0 with itself: its own team
    assert (cp / "crossplay.png").stat().st_size > 0
    bad = subprocess.run([sys.executable, "eval/crossplay.py", "env=ktane/keypad",
                          f"checkpoint={out}", f"out_dir={tmp_path / 'bad'}"], cwd=root,
                         capture_output=True, text=True, env=os.environ, timeout=600)
    assert bad.returncode == 1 and "env" in bad.stderr + bad.stdout
    assert not (tmp_path / "bad").exists()
