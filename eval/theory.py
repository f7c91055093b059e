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

from omegaconf import DictConfig

from jaxcollab.agents.parity.plots import theory_plot
from jaxcollab.agents.parity.theory import parity_curves, parity_curves_enumerated
from jaxcollab.collab.data import round_task
from jaxcollab.core.errors import ConfigValueError
from jaxcollab.envs.parity import make_alphas
from jaxcollab.io.run import hydra_main, start_run

METHODS = {"closed_form": parity_curves, "enumeration": parity_curves_enumerated}


def check_config(cfg: DictConfig) -> None:
    """Cross-key checks beyond the schema (:class:`jaxcollab.io.schema.Theory`).

    Raises:
        ConfigValueError: a task other than parity.
    """
    if not round_task({"name": cfg.task.name}).theory:
        raise ConfigValueError("task", cfg.task.name, "'parity' (the exact theory is chained "
                               "parity's)")


def compute(cfg: DictConfig) -> dict:
    """Theory curves for a checked config.

    Raises:
        ValueError: invalid α / rounds (from the theory module).
    """
    alphas = make_alphas(list(cfg.task.alphas), int(cfg.task.n_bits), cfg.task.alpha_sum)
    return {"method": cfg.method, **METHODS[cfg.method](alphas, int(cfg.n_rounds))}


def run(cfg: DictConfig) -> dict:
    """Check, compute and write ``results.json`` and ``theory.png``; returns the results."""
    job = start_run(cfg, check=check_config)
    results = compute(job.cfg)
    job.results.update(results)
    out = job.out
    theory_plot(results, out / "theory.png")
    rows = zip(results["rounds"], results["prob_excess_mse"], results["action_excess_mse"])
    print("round  prob_excess_mse  action_excess_mse")
    for k, p, a in rows:
        print(f"{k:5d}  {p:15.6g}  {a:17.6g}")
    print(f"bayes_accuracy={results['bayes_accuracy']:.6g}  -> {out}/results.json, theory.png")
    return job.results.data


main = hydra_main(run, "../configs", "theory")


if __name__ == "__main__":
    main()
