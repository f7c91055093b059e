"""The trained calibration experiment of paper R2 (§5, Figure 5; spec §4) as conversations.

    python train/calibration.py experiment=parity_calibration preset=cpu [out_dir=DIR]
    python train/calibration.py experiment=maze_calibration preset=cpu [out_dir=DIR]

Composes ``configs/collab.yaml`` (task, model, train, presets) plus the experiment's ``data``,
``bias`` and ``calibration`` blocks, and runs
:func:`jaxcollab.collab.calibration_experiment.run`: the ``unbiased`` conversation and, for each
bias condition (``global``: γ = 0; ``global_anchoring``: γ > 0), the ``biased_raw``,
``biased_self`` and ``biased_conversation`` conversations (round 1 shared), where calibrated
messages are what the next agent trains on and reads; then post-hoc treatments. β, γ:
``bias.beta=B bias.gamma=G`` (or ``bias.conditions.<name>.beta=…``); data plan:
``data.cross_fit=true|false``. Rerunning with the same ``out_dir`` resumes finished rounds.
The ``results.json`` layout and plots are documented in that module.
"""

from __future__ import annotations

import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jaxcollab.collab import calibration_experiment  # noqa: E402
from jaxcollab.io.logging import RunLogger  # noqa: E402


@hydra.main(version_base=None, config_path="../configs", config_name="collab")
def main(cfg: DictConfig) -> None:
    if "bias" not in cfg or "calibration" not in cfg or "data" not in cfg:
        raise ValueError("train/calibration.py needs experiment=parity_calibration or "
                         "experiment=maze_calibration (data, bias and calibration blocks)")
    resolved = OmegaConf.to_container(cfg, resolve=True)
    out = Path(cfg.out_dir)
    logger = RunLogger(cfg.logger.mode, cfg.logger.project, cfg.experiment_name, resolved,
                       str(out))
    results = calibration_experiment.run(resolved, out, logger.progress)
    logger.finish()
    metric = "mse_vs_pstar" if cfg.task.name == "parity" else "maze_success"
    for cond, data in results["conditions"].items():
        print(f"{cond} (β={data['beta']:g}, γ={data['gamma']:g}): {metric} by round")
        for t, m in data["treatments"].items():
            print(f"  {t:>22}: " + " ".join(f"{v:.5f}" for v in m[metric]))
    print(f"wrote {out / 'results.json'} ({results['wall_seconds']:.0f} s)")


if __name__ == "__main__":
    main()
