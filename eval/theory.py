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

from omegaconf import DictConfig, OmegaConf

from jaxcollab.collab.data import round_task, task_names
from jaxcollab.core.errors import ConfigValueError
from jaxcollab.core.family import Theory
from jaxcollab.io.run import hydra_main, start_run


def theory_of(cfg: DictConfig) -> Theory:
    """The task's exact theory, from its plug-in (:attr:`~jaxcollab.core.family.RoundTask.
    theory`).

    Raises:
        ConfigValueError: a task without one (parity has it), or a method it lacks.
    """
    theory = round_task({"name": cfg.task.name}).theory
    if theory is None:
        raise ConfigValueError("task", cfg.task.name, "a task with an exact theory: one of "
                               f"{task_names(lambda task: task.theory is not None)}")
    if cfg.method not in theory.methods:
        raise ConfigValueError("method", cfg.method, f"one of {list(theory.methods)}")
    theory.check_rounds(OmegaConf.to_container(cfg.task), int(cfg.n_rounds))
    return theory


def compute(cfg: DictConfig) -> dict:
    """Theory curves for a checked config.

    Raises:
        ValueError: invalid α / rounds (from the theory module).
    """
    curves = theory_of(cfg).curves(OmegaConf.to_container(cfg.task), int(cfg.n_rounds),
                                   cfg.method)
    return {"method": cfg.method, **curves}


def run(cfg: DictConfig) -> dict:
    """Check, compute and write ``results.json`` and ``theory.png``; returns the results."""
    job = start_run(cfg, check=theory_of)
    results = compute(job.cfg)
    job.results.update(results)
    out = job.out
    theory_of(job.cfg).plot(results, out / "theory.png")
    rows = zip(results["rounds"], results["prob_excess_mse"], results["action_excess_mse"])
    print("round  prob_excess_mse  action_excess_mse")
    for k, p, a in rows:
        print(f"{k:5d}  {p:15.6g}  {a:17.6g}")
    print(f"bayes_accuracy={results['bayes_accuracy']:.6g}  -> {out}/results.json, theory.png")
    return job.results.data


main = hydra_main(run, "../configs", "theory")


if __name__ == "__main__":
    main()
