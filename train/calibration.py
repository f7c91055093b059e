"""Trained conversations with biased reports and post-hoc calibration (spec §4, paper R2).

    python train/calibration.py experiment=parity_calibration preset=cpu [out_dir=DIR]
    python train/calibration.py experiment=maze_calibration preset=cpu [out_dir=DIR]

Composes ``configs/collab.yaml`` (task, model, train, presets) plus the experiment's ``bias``
and ``calibration`` blocks. Trains a ``biased`` probability conversation with the round trainer
(every message passed through the bias model before it is appended,
:func:`~jaxcollab.collab.biased_rounds.bias_transform`) and, with
``calibration.unbiased_run=true``, an ``unbiased`` one (plain messages) — then fits self
and conversation calibrators per round on half of the test set and scores the other half
(:mod:`jaxcollab.collab.posthoc`). Rerunning with the same ``out_dir`` resumes finished rounds;
a changed config is refused, naming the differing keys.

``results.json`` keys (lists by round, ``rounds`` = 1..K):
    ``treatments.<t>`` for t in ``unbiased`` (the unbiased run's messages; only with
    ``calibration.unbiased_run=true``),
    ``speaker_posterior`` (the biased run's speakers' own posteriors, before the bias),
    ``biased_raw``, ``self``, ``conversation`` (the biased run's reports, raw or calibrated),
    and for mazes ``naive_rare_action`` (the biased reports with up/left arg-maxes replaced by
    0.5 down / 0.5 right, spec §4): ``mse_vs_pstar`` (probability², vs the true class
    probabilities), ``accuracy`` (fraction),
    ``ece`` and ``cce`` (binned self / conversation calibration errors);
    ``calibrator_weights.{self,conversation}``: fitted weights ``[w_k]`` / ``[w_k, w_{k−1}]``
    and per-class ``bias`` by round (the bias model predicts ``[1/β, −γ/β]``);
    ``expected_conversation_weights``; ``theory_mse_vs_pstar`` (parity, unbiased exact);
    ``ideal_decoder`` (parity: the exact ideal-decoder raw / self / conversation curves for the
    same β, γ); ``runs.<name>``: the trainer's per-round metrics of the speakers' posteriors;
    ``config``; ``wall_seconds``. Plots: ``mse.png``, ``reliability.png``,
    ``conversation_cells.png``.
"""

from __future__ import annotations

import time
from pathlib import Path

import hydra
import jax
import jax.numpy as jnp
from omegaconf import DictConfig, OmegaConf

from jaxcollab.collab import tasks, theory
from jaxcollab.collab.bias import safe_log
from jaxcollab.collab.biased_rounds import bias_transform
from jaxcollab.collab.calibration import treatment_messages
from jaxcollab.collab.calibration_plots import (
    plot_conversation_cells,
    plot_error_by_round,
    plot_reliability,
)
from jaxcollab.collab.fit import TrainConfig
from jaxcollab.collab.ideal import exact_reports, message_mse
from jaxcollab.collab.messages import MessageCodec
from jaxcollab.collab.posthoc import (
    calibrate_run,
    fit_rows,
    load_messages,
    naive_rare_action,
    score,
)
from jaxcollab.collab.trainer import RoundTrainer, run_trainers
from jaxcollab.envs.parity import make_alphas
from jaxcollab.io.run import start_run
from jaxcollab.io.schema import ConfigValueError

SCALARS = ("mse_vs_pstar", "accuracy", "ece", "cce")
#: Keys that define the run: a rerun into the same ``out_dir`` must match them to resume.
FROZEN = ("seed", "n_rounds", "task", "model", "train", "protocol", "bias", "calibration")


def check_config(cfg: DictConfig) -> None:
    """Cross-key checks beyond the schema (:class:`jaxcollab.io.schema.Collab`).

    Raises:
        ConfigValueError: no ``bias`` / ``calibration`` block (no calibration experiment), or
            messages other than probabilities.
    """
    for block in ("bias", "calibration"):
        if cfg[block] is None:
            raise ConfigValueError(block, None, "a block from experiment=parity_calibration or "
                                   "experiment=maze_calibration")
    if cfg.protocol.name != "probability" or cfg.protocols not in (None, ["probability"]):
        raise ConfigValueError("protocol.name", cfg.protocol.name,
                               "'probability' (biased reports are probability messages)")


def trainers(cfg: DictConfig, task, out: Path, beta: float, gamma: float) -> dict:
    """The ``unbiased`` (optional) and ``biased`` round trainers, validated before training.

    Both use one key, so their round-1 models are the same: the biased run takes the unbiased
    run's round-1 predictions (trained once) and biases them.
    """
    codec = MessageCodec("probability", task.vocab, task.class_chars, cfg.protocol.digits)
    key = jax.random.fold_in(jax.random.PRNGKey(cfg.seed), 1)
    common = (task, codec, OmegaConf.to_container(cfg.model),
              TrainConfig(**cfg.train), cfg.n_rounds)
    runs = {}
    if cfg.calibration.unbiased_run:
        runs["unbiased"] = RoundTrainer(*common, out / "unbiased", key)
    runs["biased"] = RoundTrainer(
        *common, out / "biased", key, message_transform=bias_transform(codec, beta, gamma),
        first_round_from=out / "unbiased" if "unbiased" in runs else None,
    )
    return runs


def ideal_decoder(cfg: DictConfig, beta: float, gamma: float) -> dict:
    """Exact ideal-decoder curves for the same task and bias (parity only)."""
    alphas = make_alphas(cfg.task.alphas, cfg.task.n_bits, cfg.task.alpha_sum)
    reports = exact_reports(alphas, cfg.n_rounds, beta, gamma)
    messages, _ = treatment_messages(reports.log_r, reports.targets, reports.log_r, reports.weight)
    return {f"{t}_mse": message_mse(reports, m).tolist() for t, m in messages.items()}


def analyse(cfg: DictConfig, out: Path, codec: MessageCodec) -> tuple[dict, dict, dict]:
    """Post-hoc calibration of both runs: ``(treatments, weights, metrics for plots)``.

    Maze runs add the naive rare-action baseline (spec §4) applied to the biased reports.
    """
    c = cfg.calibration
    args = (c.fit_fraction, c.n_bins, c.newton_steps)
    probs, labels, target = load_messages(out / "biased", codec, cfg.n_rounds)
    biased, weights = calibrate_run(probs, labels, target, *args)
    posterior = load_messages(out / "biased", codec, cfg.n_rounds, "test_posterior_messages")
    metrics = {"speaker_posterior": calibrate_run(*posterior, *args)[0]["raw"]}
    if cfg.calibration.unbiased_run:
        unbiased = load_messages(out / "unbiased", codec, cfg.n_rounds)
        metrics["unbiased"] = calibrate_run(*unbiased, *args)[0]["raw"]
    metrics.update(biased_raw=biased["raw"], self=biased["self"],
                   conversation=biased["conversation"])
    if cfg.task.name == "maze":
        cut = fit_rows(len(labels), c.fit_fraction)  # scored on the same rows as the others
        naive = naive_rare_action(probs[:, cut:], codec.class_chars)
        metrics["naive_rare_action"] = score(safe_log(jnp.asarray(naive)), labels[cut:],
                                             target[cut:], c.n_bins)
    treatments = {t: {k: m[k] for k in SCALARS} for t, m in metrics.items()}
    return treatments, weights, metrics


def plots(results: dict, metrics: dict, out: Path) -> None:
    rounds = results["rounds"]
    tag = f"{results['config']['task']['name']}, β={results['beta']:g}, γ={results['gamma']:g}"
    curves = {t: m["mse_vs_pstar"] for t, m in results["treatments"].items()}
    if "theory_mse_vs_pstar" in results:
        curves["theory (unbiased)"] = results["theory_mse_vs_pstar"]
    plot_error_by_round(out / "mse.png", rounds, curves, "E[(m_k − p*)²]", f"Trained, {tag}")
    plot_reliability(out / "reliability.png", rounds, metrics, f"Self reliability, {tag}")
    plot_conversation_cells(out / "conversation_cells.png", rounds, metrics,
                            f"Conversation calibration gap, {tag}")


def run(cfg: DictConfig) -> dict:
    """The whole job on a composed config; returns the results (also in ``results.json``)."""
    start = time.perf_counter()
    job = start_run(cfg, frozen=FROZEN, check=check_config)
    cfg, out, results = job.cfg, job.out, job.results
    beta, gamma = cfg.bias.beta, cfg.bias.gamma
    results.set(("beta",), beta)
    results.set(("gamma",), gamma)
    results.set(("rounds",), list(range(1, cfg.n_rounds + 1)))
    results.set(("expected_conversation_weights",), [1 / beta, -gamma / beta])
    task = tasks.make_task(OmegaConf.to_container(cfg.task),
                           jax.random.split(jax.random.PRNGKey(cfg.seed))[0])
    runs = trainers(cfg, task, out, beta, gamma)
    if task.name == "parity":
        alphas = make_alphas(cfg.task.alphas, cfg.task.n_bits, cfg.task.alpha_sum)
        curve = theory.parity_curves(alphas, cfg.n_rounds)["prob_excess_mse"][1:]
        results.set(("theory_mse_vs_pstar",), curve)
        results.set(("ideal_decoder",), ideal_decoder(cfg, beta, gamma))
    def on_round(name: str, done: list[dict]) -> None:
        results.set(("runs", name), done)
        print(f"{name} round {done[-1]['round']}: speaker posterior "
              f"test_mse_vs_pstar={done[-1]['test_mse_vs_pstar']:.5g}")

    run_trainers(runs, job.logger.progress, on_round)
    treatments, weights, metrics = analyse(cfg, out, runs["biased"].codec)
    results.set(("treatments",), treatments)
    results.set(("calibrator_weights",), weights)
    results.set(("wall_seconds",), time.perf_counter() - start)
    plots(results.data, metrics, out)
    job.finish()
    for t, m in treatments.items():
        print(f"{t:>14}: mse_vs_pstar " + " ".join(f"{v:.5f}" for v in m["mse_vs_pstar"]))
    print(f"wrote {out / 'results.json'}, mse.png, reliability.png, conversation_cells.png")
    return results.data


main = hydra.main(version_base=None, config_path="../configs", config_name="collab")(run)




if __name__ == "__main__":
    main()
