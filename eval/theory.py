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

Overrides: ``task.alphas=[0.2,0.15,0.1] task.n_bits=3 task.n_rounds=3`` gives the spec's K = 3
instance; with fewer alphas than ``task.n_bits`` the tail is filled to ``task.alpha_sum``.
"""

from __future__ import annotations

import json
from pathlib import Path

import hydra
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from omegaconf import DictConfig  # noqa: E402

from jaxcollab.collab.theory import parity_curves, parity_curves_enumerated  # noqa: E402
from jaxcollab.envs.parity import make_alphas  # noqa: E402

METHODS = {"closed_form": parity_curves, "enumeration": parity_curves_enumerated}


def compute(cfg: DictConfig) -> dict:
    """Theory curves for the configured task.

    Raises:
        ValueError: unknown task or method, or invalid α / rounds (from the theory module).
    """
    if cfg.task.name != "parity":
        raise ValueError(f"eval/theory.py supports task=parity only, got task={cfg.task.name!r}")
    if cfg.method not in METHODS:
        raise ValueError(f"unknown method {cfg.method!r}; expected one of {sorted(METHODS)}")
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


@hydra.main(version_base=None, config_path="../configs", config_name="theory")
def main(cfg: DictConfig) -> None:
    results = compute(cfg)
    out = Path(cfg.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    plot(results, out / "theory.png")
    rows = zip(results["rounds"], results["prob_excess_mse"], results["action_excess_mse"])
    print("round  prob_excess_mse  action_excess_mse")
    for k, p, a in rows:
        print(f"{k:5d}  {p:15.6g}  {a:17.6g}")
    print(f"bayes_accuracy={results['bayes_accuracy']:.6g}  -> {out}/results.json, theory.png")


if __name__ == "__main__":
    main()
