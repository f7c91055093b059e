"""Run logging (jaxcollab.io.logging): WANDB_MODE=disabled turns wandb off, the progress bar
shows the rate it is given, and train/marl.py logs each chunk's curve point and losses (and
reports its seeds' mean with an interval)."""

from pathlib import Path

import numpy as np
import pytest
from hydra import compose, initialize_config_dir

from jaxcollab.io import schema
from jaxcollab.io.logging import RunLogger

ROOT = Path(__file__).resolve().parents[1]


def test_wandb_mode_disabled_overrides_the_config(monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "disabled")
    assert RunLogger("offline").run is None and RunLogger("online").run is None
    with pytest.raises(ValueError, match="unknown logger.mode 'cloud'"):
        RunLogger("cloud")


def test_progress_shows_the_given_rate(capsys):
    with RunLogger().progress("bomb/base-1 ippo", 40) as bar:
        bar(20, 0.25, 12345.6)
    out = capsys.readouterr().out
    assert "20/40" in out and "12,345.6 steps/s" in out and "loss 0.2500" in out


def test_marl_entry_point_defaults_to_offline_wandb():
    schema.register()  # the configs' schemas (registered on import)
    with initialize_config_dir(str(ROOT / "configs" / "marl"), version_base=None):
        for name in ("marl", "learned"):
            assert compose(name, overrides=["out_dir=x"]).logger.mode == "offline"


@pytest.mark.full  # compiles a tiny trainer
def test_train_marl_logs_every_chunk(tmp_path, monkeypatch):
    from jaxcollab.marl.run import run

    logged = []
    monkeypatch.setattr(RunLogger, "log", lambda self, m, step=None: logged.append((step, m)))
    with initialize_config_dir(str(ROOT / "configs" / "marl"), version_base=None):
        cfg = compose("marl", overrides=["preset=tiny", "eval_episodes=8",
                                         f"out_dir={tmp_path}"])
    res = run(cfg)
    curve = res["curve"]
    assert [s for s, _ in logged] == curve["updates"] == [1, 2]
    for (_, m), steps, held in zip(logged, curve["env_steps"], curve["heldout_success"],
                                   strict=True):
        assert m["env_steps"] == steps and m["heldout_success"] == pytest.approx(np.mean(held))
        assert {"policy_loss", "value_loss", "entropy"} <= set(m)
    assert "env_steps_per_second" not in logged[0][1]  # the first chunk compiles: untimed
    assert logged[1][1]["env_steps_per_second"] == pytest.approx(res["env_steps_per_second"])
    over = res["success_over_seeds"]  # the tiny preset's two seeds, mean and 90 % interval
    assert over["per_seed"] == curve["heldout_success"][-1] and over["seeds"] == 2
    assert over["mean"] == pytest.approx(np.mean(over["per_seed"]))
