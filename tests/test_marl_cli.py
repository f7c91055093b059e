"""The MARL command lines as subprocesses: train/marl.py (tiny preset, then a resuming rerun;
a Keep-Talking module) and eval/rollout.py agent=learned on the teams they wrote."""

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
    assert "protocol" not in res and (out / "team" / "config.json").is_file()
    played = tmp_path / "played"  # the Keep-Talking plug-in offers the learned team too
    _run("eval/rollout.py", "env=ktane/wires", "agent=learned", f"checkpoint={out}",
         "episodes=8", f"seed={res['config']['eval_seed']}", f"out_dir={played}",
         cwd=request.config.rootpath)
    rolled = json.loads((played / "results.json").read_text())
    assert rolled["agent"] == "learned" and rolled["episodes"] == 8
    assert rolled["success_rate"] == res["success_rate"]  # the same held-out episodes
    assert sum(res["heldout"]["outcomes"].values()) == 8
