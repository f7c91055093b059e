"""The trained calibration experiment, end to end ("Narrowing the Collaboration Gap, Probably",
§5 R2 and Figure 5): every conversation of :mod:`jaxcollab.collab.conversations` for one task
and every bias condition, scored by round, with ``results.json`` and the plots.

``results.json`` (lists by round, ``rounds`` = 1..K; written as each round ends):

* ``conditions.<global|global_anchoring>``: ``beta``, ``gamma``;
  ``treatments.<name>.{accuracy, ece, cce}`` plus ``maze_success`` (mazes) or ``mse_vs_pstar``
  (parity), for ``unbiased``, ``biased_raw``, ``biased_self``, ``biased_conversation``,
  ``posthoc_self``, ``posthoc_conversation`` and, on mazes, ``naive_rare_action``;
  ``calibrators.<treatment>.round_<r>``: per fold (fitted on one half of the round's
  held-out validation rows) the fitted ``weights``
  (``[w_k]`` / ``[w_k, w_{k−1}]``), class-1.. ``bias`` and ``converged``;
  ``expected_conversation_weights`` ``[1/β, −γ/β]``; on parity ``ideal_decoder.<treatment>``:
  the exact ideal-decoder conversation curve (:func:`jaxcollab.collab.ideal.conversation_mse`);
* ``calibrators_converged``: false if any calibrator fit failed its gradient-norm check;
* ``theory_mse_vs_pstar`` (parity): the exact unbiased curve; ``runs.<name>``: each
  conversation's trainer metrics by round (the speakers' own posteriors);
* ``cross_fit``, ``config``, ``wall_seconds``.

Plots: ``success.png`` (mazes: maze success) or ``mse.png`` (parity: E[(m − p*)²]) — one panel
per bias condition, one line per treatment.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path

import jax
import numpy as np

from jaxcollab.collab import conversations as conv
from jaxcollab.collab import theory
from jaxcollab.collab.calibration_plots import plot_by_condition
from jaxcollab.collab.fit import TrainConfig
from jaxcollab.collab.ideal import conversation_mse
from jaxcollab.collab.maze_task import collab_task, maze_split
from jaxcollab.collab.messages import MessageCodec
from jaxcollab.collab.tasks import make_task
from jaxcollab.collab.trainer import run_trainers
from jaxcollab.envs.parity import make_alphas
from jaxcollab.io.results import ResultsFile

#: Config keys a resumed run must share with the run that wrote ``results.json``.
FROZEN = ("seed", "n_rounds", "task", "model", "train", "protocol", "data", "bias")
IDEAL = {"unbiased": None, "biased_raw": None, "biased_self": "self",
         "biased_conversation": "conversation"}


def build_task(task_cfg: Mapping, seed: int):
    """``(task, maze_ids)``: the task's data (key ``split(PRNGKey(seed))[0]``, as the other
    entry points) and, for mazes, each test example's maze index (``None`` for parity)."""
    key = jax.random.split(jax.random.PRNGKey(seed))[0]
    if task_cfg["name"] != "maze":
        return make_task(task_cfg, key), None
    train, test, _ = maze_split(task_cfg, key)
    return collab_task(train, test), test.examples()["maze"]


def _fit_logger(results: ResultsFile) -> Callable:
    def for_run(name: str):
        cond, treatment = name.split("/")

        def log(r: int, cals) -> None:
            entry = {"weights": np.asarray(cals.weights).tolist(),
                     "bias": np.asarray(cals.bias[:, 1:]).tolist(),
                     "converged": np.asarray(cals.converged).tolist()}
            results.set(("conditions", cond, "calibrators", treatment, f"round_{r}"), entry)
            if not all(entry["converged"]):
                results.set(("calibrators_converged",), False)
                print(f"WARNING: {name} round {r}: a calibrator fit did not converge")

        return log

    return for_run


def _plot(results: dict, out: Path, metric: str) -> None:
    panels = {c: {t: m[metric] for t, m in d.get("treatments", {}).items()}
              for c, d in results["conditions"].items()}
    if metric == "maze_success":
        plot_by_condition(out / "success.png", results["rounds"], panels, "maze success", False)
    else:
        plot_by_condition(out / "mse.png", results["rounds"], panels, "E[(m_k − p*)²]", True)


def run(cfg: Mapping, out: Path, progress: Callable | None = None) -> dict:
    """Train and score the experiment described by ``cfg`` into ``out``; returns results.

    ``cfg`` (resolved mapping): ``seed``, ``n_rounds``, ``task``, ``model``, ``train``,
    ``protocol.digits``, ``data.cross_fit``, ``bias.conditions`` (name → ``beta``, ``gamma``),
    ``calibration.{n_bins, newton_steps}``.

    Raises:
        ValueError: a bad condition, train or model value, or an ``out`` whose results.json was
            written with a different config (all before any training).
    """
    start = time.perf_counter()
    conditions = conv.check_conditions(cfg["bias"]["conditions"])
    old = ResultsFile(out / "results.json").data.get("config")
    if old is not None and any(old.get(k) != cfg.get(k) for k in FROZEN):
        raise ValueError(f"{out / 'results.json'} was written with a different config "
                         f"(one of {FROZEN}); use a new out_dir")
    cal = cfg["calibration"]
    n_rounds = int(cfg["n_rounds"])
    task, maze_ids = build_task(cfg["task"], int(cfg["seed"]))
    codec = MessageCodec("probability", task.vocab, task.class_chars, cfg["protocol"]["digits"])
    results = ResultsFile(out / "results.json")
    common = {"task": task, "codec": codec, "model": dict(cfg["model"]),
              "train": TrainConfig(**cfg["train"]), "n_rounds": n_rounds,
              "key": jax.random.fold_in(jax.random.PRNGKey(cfg["seed"]), 1),
              "cross_fit": bool(cfg["data"]["cross_fit"])}
    runs = conv.make_trainers(common, out, conditions, int(cal["newton_steps"]),
                              _fit_logger(results))
    results.set(("config",), dict(cfg))
    results.set(("rounds",), list(range(1, n_rounds + 1)))
    results.set(("cross_fit",), common["cross_fit"])
    results.data.setdefault("calibrators_converged", True)
    for cond, (beta, gamma) in conditions.items():
        results.set(("conditions", cond, "beta"), beta)
        results.set(("conditions", cond, "gamma"), gamma)
        results.set(("conditions", cond, "expected_conversation_weights"),
                    [1 / beta, -gamma / beta])
    if task.name == "parity":
        alphas = make_alphas(cfg["task"]["alphas"], cfg["task"]["n_bits"],
                             cfg["task"].get("alpha_sum"))
        curve = theory.parity_curves(alphas, n_rounds)["prob_excess_mse"][1:]
        results.set(("theory_mse_vs_pstar",), [float(v) for v in curve])
        for cond, (beta, gamma) in conditions.items():
            ideal = {t: np.asarray(conversation_mse(alphas, n_rounds, beta, gamma, k)).tolist()
                     for t, k in IDEAL.items()}
            ideal["unbiased"] = [float(v) for v in curve]
            results.set(("conditions", cond, "ideal_decoder"), ideal)

    def on_round(name: str, done: list[dict]) -> None:
        results.set(("runs", name), done)
        print(f"{name} round {done[-1]['round']}: speaker posterior "
              f"test_mse_vs_pstar={done[-1]['test_mse_vs_pstar']:.5g}", flush=True)

    run_trainers(runs, progress, on_round)
    test = task.test
    for cond in conditions:
        scores = conv.condition_treatments(runs, cond, test.labels, test.target,
                                           int(cal["n_bins"]), maze_ids,
                                           int(cal["newton_steps"]))
        results.set(("conditions", cond, "treatments"), scores)
    results.set(("wall_seconds",), time.perf_counter() - start)
    _plot(results.data, out, "mse_vs_pstar" if maze_ids is None else "maze_success")
    return results.data
