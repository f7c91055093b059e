"""The trained calibration experiment of paper R2 ("Narrowing the Collaboration Gap, Probably",
§5, Figure 5) as conversations.

    python train/calibration.py experiment=parity_calibration preset=cpu [out_dir=DIR]
    python train/calibration.py experiment=maze_calibration preset=cpu [out_dir=DIR]

Composes ``configs/collab.yaml`` (task, model, train, presets) plus the experiment's ``data``,
``bias`` and ``calibration`` blocks, and runs
:func:`jaxcollab.collab.calibration_experiment.run`: the ``unbiased`` conversation and, for each
bias condition (``global``: γ = 0; ``global_anchoring``: γ > 0), the ``biased_raw``,
``biased_self`` and ``biased_conversation`` conversations (round 1 shared), where calibrated
messages are what the next agent trains on and reads; then post-hoc treatments. β, γ:
``bias.beta=B bias.gamma=G`` (or ``bias.conditions.<name>.beta=…``); data plan:
``data.cross_fit=true|false``. Rerunning with the same ``out_dir`` resumes finished rounds; a
changed config is refused, naming the differing keys. The ``results.json`` layout and plots are
documented in that module.
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig, OmegaConf

from jaxcollab.collab import calibration_experiment
from jaxcollab.io.run import start_run
from jaxcollab.io.schema import ConfigValueError

#: Keys that define the run: a rerun into the same ``out_dir`` must match them to resume.
FROZEN = calibration_experiment.FROZEN


def check_config(cfg: DictConfig) -> None:
    """Cross-key checks beyond the schema (:class:`jaxcollab.io.schema.Collab`).

    Raises:
        ConfigValueError: no ``bias`` (with ``conditions``) / ``calibration`` block (not a
            calibration experiment), messages other than probabilities, or ``seeds`` (one seed
            per run here).
    """
    if cfg.seeds is not None:
        raise ConfigValueError("seeds", list(cfg.seeds), "null: this entry point trains one "
                               "seed per run (seed=); train/collab.py trains several at once")
    for block in ("bias", "calibration"):
        if cfg[block] is None:
            raise ConfigValueError(block, None, "a block from experiment=parity_calibration or "
                                   "experiment=maze_calibration")
    if not cfg.bias.conditions:
        raise ConfigValueError("bias.conditions", cfg.bias.conditions,
                               "a mapping of condition name -> {beta, gamma}")
    if cfg.protocol.name != "probability" or cfg.protocols not in (None, ["probability"]):
        raise ConfigValueError("protocol.name", cfg.protocol.name,
                               "'probability' (biased reports are probability messages)")


def run(cfg: DictConfig) -> dict:
    """The whole job on a composed config; returns the results (also in ``results.json``)."""
    job = start_run(cfg, frozen=FROZEN, check=check_config)
    results = calibration_experiment.run(OmegaConf.to_container(job.cfg), job.out,
                                         job.logger.progress)
    job.finish()
    metric = "mse_vs_pstar" if job.cfg.task.name == "parity" else "maze_success"
    for cond, data in results["conditions"].items():
        print(f"{cond} (β={data['beta']:g}, γ={data['gamma']:g}): {metric} by round")
        for t, m in data["treatments"].items():
            print(f"  {t:>22}: " + " ".join(f"{v:.5f}" for v in m[metric]))
    print(f"wrote {job.out / 'results.json'} ({results['wall_seconds']:.0f} s)")
    return results


main = hydra.main(version_base=None, config_path="../configs", config_name="collab")(run)


if __name__ == "__main__":
    main()
