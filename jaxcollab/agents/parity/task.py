"""Chained parity as a round-trainer task (Narrowing the Collaboration Gap, Probably, §3):
config → :class:`~jaxcollab.collab.data.CollabTask`, the parity plug-in's
:attr:`~jaxcollab.core.family.Family.task` (:data:`TASK`).
"""

from __future__ import annotations

from collections.abc import Mapping

import jax
import numpy as np

from jaxcollab.agents.parity import theory
from jaxcollab.agents.parity.config import RUN_KEYS, ParityTask, check_alphas
from jaxcollab.collab.data import CollabTask, TaskSplit
from jaxcollab.core.config import typed
from jaxcollab.core.errors import ConfigValueError
from jaxcollab.core.family import RoundTask, Theory
from jaxcollab.envs import parity

PARITY_VIEWS = ("masked", "own")


def _parity_split(data: parity.ParityDataset, masks: np.ndarray, view: str) -> TaskSplit:
    if view == "masked":
        views = tuple(np.where(m, data.bits, parity.MASK).astype(np.uint8) for m in masks)
    else:
        views = tuple(np.ascontiguousarray(data.bits[:, m]) for m in masks)
    pstar = data.pstar.astype(np.float32)
    return TaskSplit(views, data.label.astype(np.int32), np.stack([1 - pstar, pstar], axis=1))


def _parity_build(cfg: Mapping, key: jax.Array) -> tuple[CollabTask, None]:
    return parity_task(cfg, key), None


def parity_task(cfg: Mapping, key: jax.Array) -> CollabTask:
    """Chained parity (the paper's §3) from a ``configs/task/parity.yaml``-style mapping.

    Keys: ``alphas, n_bits, alpha_sum, split, n_examples, test_fraction`` and ``view``:
    ``"masked"`` (the agent's n-character string with ``?`` where unseen, as in the paper) or
    ``"own"`` (only the agent's own bits; measured on a 2-core CPU: far easier to learn on a CPU
    budget).

    Raises:
        ValueError: unknown view or split, or invalid coefficients.
    """
    task = typed(ParityTask, cfg)  # a missing key at the schema's default
    view, split = task.view, task.split
    if view not in PARITY_VIEWS:
        raise ValueError(f"unknown parity view {view!r}; expected one of {PARITY_VIEWS}")
    alphas = parity.make_alphas(cfg["alphas"], cfg["n_bits"], cfg.get("alpha_sum"))
    masks = parity.split_masks(cfg["n_bits"], split)
    train, test = parity.build_dataset(key, cfg["n_examples"], alphas, split,
                                       cfg["test_fraction"])
    return CollabTask(
        name="parity",
        vocab=parity.VOCAB,
        class_chars="01",
        train=_parity_split(train, masks, view),
        test=_parity_split(test, masks, view),
    )


def _alphas(cfg: Mapping) -> np.ndarray:
    return parity.make_alphas(list(cfg["alphas"]), int(cfg["n_bits"]), cfg["alpha_sum"])


#: ``eval/theory.py``'s methods: the closed form, or enumeration of every sign pattern.
METHODS = {"closed_form": theory.parity_curves, "enumeration": theory.parity_curves_enumerated}


def theory_curves(cfg: Mapping, n_rounds: int, method: str) -> dict:
    """The exact curves (:func:`jaxcollab.agents.parity.theory.parity_curves`' keys) of the
    task ``cfg`` by ``method`` (:data:`METHODS`).

    Raises:
        ValueError: invalid α / rounds (from the theory module).
    """
    return METHODS[method](_alphas(cfg), n_rounds)


#: The ideal-decoder curve of each conversation of the calibration experiment: the calibrator
#: kind it sends through (:func:`jaxcollab.agents.parity.ideal.conversation_mse`).
IDEAL = {"unbiased": None, "biased_raw": None, "biased_self": "self",
         "biased_conversation": "conversation"}


def calibration_theory(cfg: Mapping, n_rounds: int,
                       conditions: Mapping[str, tuple[float, float]]) -> dict:
    """The calibration experiment's exact curves (:class:`jaxcollab.core.family.Theory`):
    ``theory_mse_vs_pstar`` (the unbiased E[(p* − q_k)²] by round 1..K) and, per condition
    (name → ``(β, γ)``), ``conditions.<name>.ideal_decoder.<conversation>`` (its messages'
    squared error vs p* when every speaker is an ideal decoder)."""
    from jaxcollab.agents.parity.ideal import conversation_mse  # on use: the calibrators

    alphas = _alphas(cfg)
    curve = [float(v) for v in theory.parity_curves(alphas, n_rounds)["prob_excess_mse"][1:]]
    out = {"theory_mse_vs_pstar": curve, "conditions": {}}
    for cond, (beta, gamma) in conditions.items():
        ideal = {t: np.asarray(conversation_mse(alphas, n_rounds, beta, gamma, k)).tolist()
                 for t, k in IDEAL.items()}
        ideal["unbiased"] = curve
        out["conditions"][cond] = {"ideal_decoder": ideal}
    return out


def _theory_plot(results: dict, path) -> None:
    from jaxcollab.agents.parity.plots import theory_plot  # on use: matplotlib

    theory_plot(results, path)


def check_rounds(cfg: Mapping, n_rounds: int) -> None:
    """At most ``n_bits`` rounds: round k reveals bit k (the paper's §1 chained parity).

    Raises:
        ConfigValueError: ``n_rounds`` above ``cfg["n_bits"]``.
    """
    if n_rounds > cfg["n_bits"]:
        raise ConfigValueError("n_rounds", n_rounds,
                               f"an integer in 1..task.n_bits={cfg['n_bits']}")


def _ideal_calibration(cfg):
    from jaxcollab.agents.parity.ideal_calibration import ideal_calibration  # on use: calibrators

    return ideal_calibration(cfg)


def _experiment(cfg, out, results, logger):
    """The round trainer's parity experiment (imported on use: it needs the trainer)."""
    from jaxcollab.agents.parity.experiment import Protocols

    return Protocols(cfg, out, results, logger)


#: The parity plug-in's round-trainer task: exact theory curves and ideal decoders exist for it.
TASK = RoundTask(config=ParityTask, build=_parity_build, experiment=_experiment,
                 check=check_alphas, run_keys=RUN_KEYS,
                 theory=Theory(theory_curves, tuple(METHODS), _theory_plot, calibration_theory,
                               check_rounds=check_rounds, ideal=_ideal_calibration))
