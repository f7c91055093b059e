"""Exact chained-parity theory curves: ``python eval/theory.py task=parity out_dir=DIR``.

Writes ``DIR/results.json`` and ``DIR/theory.png``. Keys of results.json (lists are indexed by
round k = 0..K; squared errors are in probability units², accuracies are fractions):

* ``alphas`` — the full coefficient vector α_1..α_n;
* ``rounds`` — ``[0, 1, …, K]``;
* ``prob_excess_mse`` / ``action_excess_mse`` — E[(p* − q_k)²] of the round-k speaker under
  probability / action exchange;
* ``prob_label_mse`` — E[(Y − q_k)²] under probability exchange;
* ``prob_accuracy`` / ``action_accuracy`` — P(Y = 1{q_k >= 1/2});
* ``bayes_accuracy`` — the full-information ceiling; ``action_bayes_disagreement``;
* ``method`` — ``closed_form`` or ``enumeration``.

Overrides: ``task.alphas=[0.2,0.15,0.1] task.n_bits=3 task.n_rounds=3`` gives the paper's K = 3
instance; with fewer alphas than ``task.n_bits`` the tail is filled to ``task.alpha_sum``.
"""

from __future__ import annotations

from pathlib import Path

import hydra
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from omegaconf import DictConfig  # noqa: E402

from jaxcollab.collab.theory import parity_curves, parity_curves_enumerated  # noqa: E402
from jaxcollab.envs.parity import make_alphas  # noqa: E402
from jaxcollab.io.run import start_run  # noqa: E402
from jaxcollab.io.schema import ConfigValueError  # noqa: E402

METHODS = {"closed_form": parity_curves, "enumeration": parity_curves_enumerated}


def check_config(cfg: DictConfig) -> None:
    """Cross-key checks beyond the schema (:class:`jaxcollab.io.schema.Theory`).

    Raises:
        ConfigValueError: a task other than parity.
    """
    if cfg.task.name != "parity":
        raise ConfigValueError("task", cfg.task.name, "'parity' (the exact theory is chained "
                               "parity's)")


def compute(cfg: DictConfig) -> dict:
    """Theory curves for a checked config.

    Raises:
        ValueError: invalid α / rounds (from the theory module).
    """
    alphas = make_alphas(list(cfg.task.alphas), int(cfg.task.n_bits), cfg.task.alpha_sum)
    return {"method": cfg.method, **METHODS[cfg.method](alphas, int(cfg.n_rounds))}


def plot(results: dict, path: Path) -> None:
    """Excess squared error (log scale) and decision accuracy by round, both protocols."""
    rounds = results["rounds"]
    fig, (ax_err, ax_acc) = plt.subplots(1, 2, figsize=(10, 4))
    for key, label, style in (
        ("prob_excess_mse", "probability exchange", "o-"),
        ("action_excess_mse", "action exchange", "s--"),
    ):
        ax_err.plot(rounds, [max(v, 1e-12) for v in results[key]], style, label=label)
    ax_err.set(yscale="log", xlabel="round k", ylabel="E[(p* − q_k)²]", title="Posterior error")
    ax_acc.plot(rounds, results["prob_accuracy"], "o-", label="probability exchange")
    ax_acc.plot(rounds, results["action_accuracy"], "s--", label="action exchange")
    ax_acc.axhline(results["bayes_accuracy"], color="gray", ls=":", label="Bayes (full info)")
    ax_acc.set(xlabel="round k", ylabel="decision accuracy", title="Accuracy")
    for ax in (ax_err, ax_acc):
        ax.set_xticks(rounds)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle("Chained parity: exact theory")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run(cfg: DictConfig) -> dict:
    """Check, compute and write ``results.json`` and ``theory.png``; returns the results."""
    job = start_run(cfg, check=check_config)
    results = compute(job.cfg)
    job.results.update(results)
    out = job.out
    plot(results, out / "theory.png")
    rows = zip(results["rounds"], results["prob_excess_mse"], results["action_excess_mse"])
    print("round  prob_excess_mse  action_excess_mse")
    for k, p, a in rows:
        print(f"{k:5d}  {p:15.6g}  {a:17.6g}")
    print(f"bayes_accuracy={results['bayes_accuracy']:.6g}  -> {out}/results.json, theory.png")
    return job.results.data


main = hydra.main(version_base=None, config_path="../configs", config_name="theory")(run)


if __name__ == "__main__":
    main()
