"""eval/learned.py: the sweep's per-environment training configs, its checks and table
(in-process, no training), and the command line on a bomb variant and a Keep-Talking module
(a subprocess: train, play beside the scripted teams, resume without retraining)."""

import json
import os
import subprocess
import sys

import pytest
from hydra import compose, initialize_config_dir

from jaxcollab.core.errors import ConfigValueError
from jaxcollab.io.run import validate

TINY = ("preset=tiny", "updates=1", "chunk=1", "ppo.episodes=8", "ppo.steps=4",
        "ppo.minibatches=1", "ppo.seeds=1", "eval_episodes=6")


def _cfg(request, *overrides):
    from eval import learned

    with initialize_config_dir(str(request.config.rootpath / "configs" / "marl"),
                               version_base=None):
        return learned, compose("learned", overrides=list(overrides))


def test_each_env_gets_train_marl_config(request, tmp_path):
    learned, cfg = _cfg(request, "envs=[bomb/base-1,ktane/wires,bomb/base-1]", "preset=cpu",
                        "updates=7", f"out_dir={tmp_path}")
    cfg = validate(cfg)
    assert learned.env_names(cfg) == ["bomb/base-1", "ktane/wires"]  # once each, in order
    bomb, wires = (learned.train_config(cfg, n) for n in ("bomb/base-1", "ktane/wires"))
    assert (bomb.env, bomb.ppo.env, bomb.updates, bomb.ppo.dial) == (
        "bomb/base-1", "bomb/base-1", 7, True)  # the cpu preset's DIAL, off without an inbox:
    assert (wires.env, wires.ppo.env, wires.ppo.dial) == ("ktane/wires", "ktane/wires", False)
    assert wires.out_dir == str(tmp_path / "runs" / "ktane-wires")
    assert bomb.logger.mode == wires.logger.mode == "offline"  # each run logs as the sweep says
    assert learned.train_config(validate(_cfg(request, "logger.mode=disabled",
                                              f"out_dir={tmp_path}")[1]),
                                "ktane/wires").logger.mode == "disabled"
    learned.check_config(cfg)  # train/marl.py's own checks pass on both


@pytest.mark.parametrize("override, key", [
    ("envs=[maze/split-6x6]", "envs"), ("envs=[bomb/nope]", "envs"),
    ("teams=[talking,nobody]", "teams"), ("ppo.env=bomb/base-1", "ppo.env"),
    ("runs=[/nonexistent/results.json]", "runs")])
def test_bad_sweeps_are_refused_before_any_work(request, tmp_path, override, key):
    learned, cfg = _cfg(request, "envs=[bomb/base-1,ktane/wires]", override,
                        f"out_dir={tmp_path}")
    with pytest.raises(ConfigValueError) as e:  # what start_run does first
        learned.check_config(validate(cfg))
    assert e.value.key == key


def test_markdown_rows():
    from eval.learned import markdown
    from jaxcollab.io.seeds import over_seeds

    def learned(rate, bank=None):
        return {"success_rate": rate, "env_steps": 12_288,
                **({} if bank is None else {"bank_success_rate": bank})}

    envs = {"bomb/base-1": {"learned": {**learned(0.5, 0.25),
                                        "over_seeds": over_seeds([0.5, 0.7, 0.9])}, "runs": {},
                            "teams": {"oracle": {"success_rate": 1.0, "bank_success_rate": 1.0}}},
            "ktane/wires": {"learned": learned(0.75), "runs": {"llm m (r.json)": {
                "success_rate": 0.125}}, "teams": {"oracle": {"success_rate": 1.0}}}}
    lines = markdown(envs).splitlines()
    assert lines[2] == ("| env | learned | learned, seeds | env steps / seed | oracle | "
                        "llm m (r.json) |")
    assert lines[4] == ("| bomb/base-1 | 0.500 / 0.250 | 0.700 [0.363, 1.037] (3) | 12,288 | "
                        "1.000 / 1.000 | – |")
    assert lines[5] == "| ktane/wires | 0.750 | – | 12,288 | 1.000 | 0.125 |"


def _run(root, *args):
    out = subprocess.run([sys.executable, "eval/learned.py", *args], cwd=root,
                         capture_output=True, text=True, env=os.environ, timeout=900)
    return out


@pytest.mark.slow  # three processes, two of them compiling two trainers and eight rollouts
def test_cli_trains_plays_and_resumes(request, tmp_path):
    root, out = request.config.rootpath, tmp_path / "sweep"
    args = ["envs=[bomb/base-1,ktane/wires]", *TINY, "teams=[oracle,solo]", f"out_dir={out}"]
    first = _run(root, *args)
    assert first.returncode == 0, first.stderr[-3000:]
    res = json.loads((out / "results.json").read_text())
    bomb, wires = res["envs"]["bomb/base-1"], res["envs"]["ktane/wires"]
    assert list(bomb["teams"]) == ["oracle", "solo"] and list(wires["teams"]) == ["oracle"]
    oracle = {k: v for k, v in bomb["teams"]["oracle"].items() if k != "results"}
    assert oracle == {"success_rate": 1.0, "episodes": 6, "bank_success_rate": 1.0,
                      "bank_episodes": 9}
    assert bomb["teams"]["oracle"]["results"]["heldout"]["endings"]["defused"] == 6
    assert bomb["teams"]["oracle"]["results"]["bank"]["protocol"]["repeats"] == 3
    oracle = wires["teams"]["oracle"]
    assert (oracle["success_rate"], oracle["episodes"], list(oracle["results"])) == (
        1.0, 6, ["heldout"])  # no bank protocol
    assert oracle["results"]["heldout"]["outcomes"]["solved"] == 6
    for e in (bomb, wires):
        assert e["learned"]["env_steps"] == 8 * 4 and e["learned"]["curve"]["updates"] == [1]
        assert 0.0 <= e["learned"]["success_rate"] <= 1.0 and e["learned"]["episodes"] == 6
    trained = json.loads((out / "runs" / "bomb-base-1" / "results.json").read_text())
    assert bomb["learned"]["success_rate"] == trained["success_rate"]  # the same 6 episodes
    assert trained["config"]["env"] == "bomb/base-1" and trained["config"]["ppo"]["dial"] is False
    table = (out / "learned.md").read_text().splitlines()
    assert table[4].startswith("| bomb/base-1 |") and table[4].endswith(
        "| 32 | 1.000 / 1.000 | 1.000 / 1.000 |")
    assert table[5].endswith("| 32 | 1.000 | – |")
    assert (out / "learned.png").stat().st_size > 0

    # a killed sweep resumes: ktane/wires's row is lost, its finished training run is kept
    del res["envs"]["ktane/wires"]
    (out / "results.json").write_text(json.dumps(res))
    run_file = out / "runs" / "ktane-wires" / "results.json"
    before = run_file.read_text()
    again = _run(root, *args)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "bomb/base-1: done" in again.stdout and "ktane/wires: trained (kept" in again.stdout
    assert run_file.read_text() == before
    assert json.loads((out / "results.json").read_text())["envs"] == {
        "bomb/base-1": bomb, "ktane/wires": wires}

    changed = _run(root, *[a for a in args if not a.startswith("updates=")], "updates=2")
    assert changed.returncode != 0 and "updates: 1 -> 2" in changed.stderr  # refused, named
