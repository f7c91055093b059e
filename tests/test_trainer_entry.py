"""train/collab.py: configuration checks that fail before any work, and (slow) the cpu preset."""

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.hydra_config import HydraConfig
from omegaconf import OmegaConf, open_dict

from jaxcollab.collab.run import FROZEN, protocol_names
from jaxcollab.io.run import RunCollision, start_run, validate

ROOT = Path(__file__).resolve().parent.parent


def _cfg(*overrides):
    with initialize_config_dir(str(ROOT / "configs"), version_base=None):
        return compose("collab", overrides=list(overrides))


def test_presets_and_experiment_compose():
    cpu = _cfg("experiment=parity_separation", "preset=cpu")
    assert protocol_names(cpu) == ["action", "probability"]
    assert cpu.task.view == "own" and cpu.model.n_embd == 64
    paper = _cfg("protocol=action")
    assert protocol_names(paper) == ["action"]
    assert (paper.train.steps, paper.train.batch_size, paper.train.lr) == (2000, 1024, 1e-4)
    assert (paper.model.n_layer, paper.model.n_head, paper.model.n_embd) == (4, 6, 240)
    assert paper.task.view == "masked" and paper.n_rounds == 5


def _run_cfg(*overrides):
    """A config as the entry points see it (``${hydra:...}`` resolvable, hydra key dropped)."""
    with initialize_config_dir(str(ROOT / "configs"), version_base=None):
        cfg = compose("collab", overrides=list(overrides), return_hydra_config=True)
    HydraConfig.instance().set_config(cfg)
    with open_dict(cfg):
        del cfg["hydra"]
    return OmegaConf.create(OmegaConf.to_container(cfg, resolve=True))


def test_maze_experiments_compose_per_preset():
    for experiment in ("maze_messages", "maze_calibration"):
        cpu = _run_cfg(f"experiment={experiment}", "preset=cpu")
        paper = _run_cfg(f"experiment={experiment}", "preset=paper")
        for cfg in (cpu, paper):
            assert cfg.task.name == "maze" and cfg.task.view == "masked" and cfg.n_rounds == 4
        assert cpu.model.activation == "relu" and paper.model.activation == "gelu"
        assert paper.train.steps == 50_000 and paper.task.n_examples == 2_000_000
    calibration = _run_cfg("experiment=maze_calibration", "preset=cpu")
    assert calibration.protocol.name == "probability" and calibration.bias.beta == 2.0


def test_every_preset_serves_every_task():
    """A preset is valid with each task it is offered with (issue 17: maze + cpu failed)."""
    for task in ("parity", "maze"):
        for preset in ("cpu", "paper"):
            cfg = validate(_cfg(f"task={task}", f"preset={preset}"))
            assert cfg.task.name == task
    assert validate(_cfg("task=maze", "preset=cpu")).bayes_mazes == 20
    assert validate(_cfg("task=parity", "preset=cpu")).task.view == "own"


def test_resume_guard_names_the_differing_keys(tmp_path):
    out = f"out_dir={tmp_path}"
    start_run(_cfg("preset=cpu", out), frozen=FROZEN)
    (tmp_path / "metrics.jsonl").write_text("{}\n")  # the run did some work
    start_run(_cfg("preset=cpu", out, "logger.project=other"), frozen=FROZEN)  # not frozen
    with pytest.raises(RunCollision, match=r"train\.steps: 600 -> 70; train\.warmup_steps"):
        start_run(_cfg("preset=cpu", out, "train.steps=70", "train.warmup_steps=7"),
                  frozen=FROZEN)
    assert json.loads((tmp_path / "results.json").read_text())["config"]["train"]["steps"] == 600


@pytest.mark.slow
def test_cpu_preset_shows_the_separation(tmp_path):
    """The README main job (issue 3 item 5): about 4.5 minutes on an idle 2-core CPU (273.6 s
    measured with a cold XLA cache)."""
    cmd = [sys.executable, "train/collab.py", "experiment=parity_separation", "preset=cpu",
           f"out_dir={tmp_path}"]
    subprocess.run(cmd, cwd=ROOT, check=True)
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["separation"]["passed"], results["separation"]
    ratios = results["separation"]["mse_ratio_at_rounds"]  # action / probability MSE vs p*
    assert len(ratios) == 3 and min(ratios) >= 10, ratios  # rounds 3-5 (issue 36)
    assert (tmp_path / "separation.png").stat().st_size > 0
    for name in ("action", "probability"):
        assert results["protocols"][name]["rounds"] == [1, 2, 3, 4, 5]


def test_one_driver_under_every_name():
    import train.calibration
    import train.maze
    from train import collab

    assert train.maze.run is train.calibration.run is collab.run


@pytest.mark.parametrize(("overrides", "key"), [
    (["task=maze", "seeds=[0,1]"], "seeds"),
    (["experiment=parity_calibration", "seeds=[0,1]"], "seeds"),
    (["experiment=parity_separation", "protocols=[probability]"], "protocols"),
    (["experiment=parity_separation", "n_rounds=2"], "separation"),
    (["experiment=parity_calibration", "protocol=action"], "protocol.name"),
    (["experiment=parity_calibration", "bias.conditions.global.gamma=0.5"], "bias.conditions"),
    (["experiment=parity_calibration", "calibration=null"], "calibration"),
])
def test_experiment_blocks_are_checked_by_the_schema(overrides, key):
    """Each experiment block's rules live in the schema (jaxcollab.collab.config.Collab), so a
    bad combination fails while validating, naming the key, before any data is built."""
    from jaxcollab.core.errors import ConfigValueError

    with pytest.raises(ConfigValueError, match="^" + re.escape(key) + "="):
        validate(_cfg("preset=cpu", "out_dir=x", *overrides))


def test_defaults_are_stated_once():
    """The YAML files name the schema and override it; they never restate its defaults."""
    from jaxcollab.collab.config import Collab
    from jaxcollab.collab.fit import TrainConfig

    paper = validate(_cfg("out_dir=x"))
    assert OmegaConf.to_container(paper.train) == dataclasses.asdict(TrainConfig())
    assert paper.seed == Collab.seed and paper.data.cross_fit is True
    for name in ("collab.yaml", "model/nanogpt.yaml", "task/parity.yaml", "task/maze.yaml"):
        text = (ROOT / "configs" / name).read_text()
        assert not re.search(r"^(train|seed|data|logger|n_layer|alphas|wall_prob):", text, re.M)


@pytest.mark.parametrize(("script", "experiment"), [
    ("train/maze.py", "maze_messages"),
    # the same five-line alias: one interpreter start per default run is enough
    pytest.param("train/calibration.py", "maze_calibration", marks=pytest.mark.slow),
])
def test_earlier_names_run_the_driver_as_scripts(script, experiment):
    """The README's ``python train/maze.py …`` / ``train/calibration.py …`` compose the one
    driver's config (``--cfg job`` prints it and exits before any work)."""
    done = subprocess.run([sys.executable, script, f"experiment={experiment}", "preset=cpu",
                           "--cfg", "job"], cwd=ROOT, capture_output=True, text=True, check=True)
    printed = OmegaConf.create(done.stdout)
    assert printed.experiment_name == experiment and printed.task.name == "maze"
    assert printed.train.steps == 1000 and printed.n_rounds == 4


def test_a_directory_whose_start_failed_takes_another_config(tmp_path):
    """Only ``start_run``'s own results.json (config and run) and no other file: the start
    failed before any work, so a corrected command may use the directory."""
    out = f"out_dir={tmp_path}"
    start_run(_cfg("preset=cpu", out), frozen=FROZEN)
    start_run(_cfg("preset=cpu", out, "train.steps=70", "train.warmup_steps=7"), frozen=FROZEN)
    assert json.loads((tmp_path / "results.json").read_text())["config"]["train"]["steps"] == 70
