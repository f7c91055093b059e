"""train/collab.py: configuration checks that fail before any work, and (slow) the cpu preset."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.hydra_config import HydraConfig
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf, open_dict

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from jaxcollab.io.results import ResultsFile  # noqa: E402
from train.collab import check_config, protocol_names  # noqa: E402


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


def test_bad_config_values_fail_with_the_valid_choices(tmp_path):
    results = ResultsFile(tmp_path / "results.json")
    with pytest.raises(ValueError, match=r"unknown protocol\(s\) \['gesture'\]; expected one of"):
        check_config(_cfg("protocols=[action,gesture]"), results)
    with pytest.raises(ValueError, match="unknown logger.mode 'cloud'"):
        check_config(_cfg("logger.mode=cloud"), results)
    with pytest.raises(ValueError, match="unknown task 'maze9'"):
        check_config(_cfg("task.name=maze9"), results)
    with pytest.raises(ValueError, match="bad train config"):
        check_config(_cfg("train.batch_size=0"), results)
    with pytest.raises(ConfigCompositionException, match="protocol"):
        _cfg("protocol=gesture")
    assert not (tmp_path / "results.json").exists()


def test_resume_with_a_different_config_is_refused(tmp_path):
    results = ResultsFile(tmp_path / "results.json")
    results.set(("config",), OmegaConf.to_container(_cfg("preset=cpu"), resolve=True))
    check_config(_cfg("preset=cpu"), results)  # same config: fine
    with pytest.raises(ValueError, match="different config; use a new out_dir"):
        check_config(_cfg("preset=cpu", "train.steps=70"), results)


@pytest.mark.slow
def test_cpu_preset_shows_the_separation(tmp_path):
    """The README main job (issue 3 item 5): about 10-15 minutes on an idle 2-core CPU."""
    cmd = [sys.executable, "train/collab.py", "experiment=parity_separation", "preset=cpu",
           f"out_dir={tmp_path}"]
    subprocess.run(cmd, cwd=ROOT, check=True)
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["separation"]["passed"], results["separation"]
    assert (tmp_path / "separation.png").stat().st_size > 0
    for name in ("action", "probability"):
        assert results["protocols"][name]["rounds"] == [1, 2, 3, 4, 5]
