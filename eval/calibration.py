"""Ideal-decoder calibration analysis on parity (Narrowing the Collaboration Gap, Probably,
Equation 1, Algorithm 1).

``python eval/calibration.py task=parity decoder=ideal bias.beta=B bias.gamma=G out_dir=DIR``

The round-k speaker is an ideal decoder (:mod:`jaxcollab.agents.parity.ideal`): it knows
``S_1..S_{k−1}`` from the message history plus its own bit, forms ``q_k``, and sends the biased
report ``r_k`` (:mod:`jaxcollab.collab.bias`). Self and conversation calibrators are fitted per
round (``fit=exact``: population optimum over the 2^K sign patterns; ``fit=samples``:
``n_fit`` held-out draws with true labels, scored on ``n_eval`` other draws).

Writes ``DIR/results.json`` with (lists indexed by round, ``rounds = [1..K]``):

* ``raw_mse``, ``self_mse``, ``conversation_mse`` — squared error vs p* of the round-k message
  (probability units²) for raw reports and the two calibrated treatments;
* ``conversation_weights`` — ``[w_k, w_{k−1}]`` per round (``w_{k−1}`` is ``null`` in round 1,
  where ``r_0`` is uniform and the weight is unidentifiable); ``expected_conversation_weights``
  ``[1/β, −γ/β]``; ``self_weights`` ``[w_k]``; ``*_bias`` the fitted bias of class 1;
* ``<treatment>_ece`` / ``<treatment>_cce`` — binned self- and conversation-calibration errors
  (:mod:`jaxcollab.collab.metrics`, ``n_bins`` bins per axis);
* ``unbiased_mse`` — the exact unbiased curve Σ_{j>k} α_j² (theory);
* ``converged.<self|conversation>`` — per round, whether the calibrator fit passed the
  gradient-norm check (:attr:`~jaxcollab.collab.calibration.Calibrator.converged`); a fit that
  did not is also printed as a warning;
* ``reference_check`` — only for the paper's seed α (App. E), ``fit=exact`` and a (β, γ) in
  ``REFERENCE`` (our ideal-decoder table): each printed entry, the computed value and whether it
  rounds to the printed digits;
* ``config`` — the resolved configuration.

and the plots ``mse.png``, ``reliability.png`` (self) and ``conversation_cells.png``.
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from jaxcollab.collab.calibration import TREATMENTS
from jaxcollab.collab.data import round_task, task_names
from jaxcollab.core.errors import ConfigValueError
from jaxcollab.core.family import Theory
from jaxcollab.io.plots import (
    plot_conversation_cells,
    plot_error_by_round,
    plot_reliability,
)
from jaxcollab.io.run import hydra_main, start_run


def _has_ideal(task) -> bool:
    return task.theory is not None and task.theory.ideal is not None


def theory_of(cfg: DictConfig) -> Theory:
    """The task's exact theory with its ideal decoders (:attr:`~jaxcollab.core.family.Theory.
    ideal`), for a checked config (schema :class:`jaxcollab.io.schema.CalibrationEval`).

    Raises:
        ConfigValueError: a task without ideal decoders, or more rounds than its theory has.
    """
    task = round_task({"name": cfg.task.name})
    if not _has_ideal(task):
        raise ConfigValueError("task", cfg.task.name, f"a task with ideal decoders: one of "
                               f"{task_names(_has_ideal)}")
    task.theory.check_rounds(OmegaConf.to_container(cfg.task), int(cfg.n_rounds))
    return task.theory


def plots(results: dict, metrics: dict, out: Path, task: str) -> None:
    """Write the three PNG plots into ``out`` (``task``: the task's name, in a title)."""
    rounds, tag = results["rounds"], f"β={results['beta']:g}, γ={results['gamma']:g}"
    curves = {t: results[f"{t}_mse"] for t in TREATMENTS}
    curves["unbiased"] = results["unbiased_mse"]
    plot_error_by_round(out / "mse.png", rounds, curves, "E[(p* − m_k)²]",
                        f"{task}, {tag}")
    plot_reliability(out / "reliability.png", rounds, metrics, f"Self reliability, {tag}")
    plot_conversation_cells(
        out / "conversation_cells.png", rounds, metrics, f"Conversation calibration gap, {tag}"
    )


def run(cfg: DictConfig) -> dict:
    """Check, analyse and write ``results.json`` and the plots; returns the results."""
    job = start_run(cfg, check=theory_of)
    results, metrics = theory_of(job.cfg).ideal(job.cfg)
    job.results.update(results)
    out = job.out
    plots(results, metrics, out, job.cfg.task.name)
    print("round " + "".join(f"{t + '_mse':>18}" for t in TREATMENTS) + "   conversation_weights")
    for i, k in enumerate(results["rounds"]):
        row = "".join(f"{results[f'{t}_mse'][i]:18.6g}" for t in TREATMENTS)
        print(f"{k:5d} {row}   {results['conversation_weights'][i]}")
    for t, flags in results["converged"].items():
        failed = [k for k, ok in zip(results["rounds"], flags, strict=True) if not ok]
        if failed:
            print(f"WARNING: the {t} calibrator fit did not converge in rounds {failed} "
                  "(converged: false in results.json)")
    check = results["reference_check"]
    if check is not None:
        ok = all(e["match"] for entries in check.values() for e in entries)
        print(f"ideal-decoder reference table: {'all entries match' if ok else 'MISMATCH'}")
    print(f"-> {out}/results.json, mse.png, reliability.png, conversation_cells.png")
    return job.results.data


main = hydra_main(run, "../configs", "calibration")


if __name__ == "__main__":
    main()
