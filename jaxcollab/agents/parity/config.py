"""The chained-parity task's config: the Hydra ``task`` group's ``parity_schema``
(``configs/task/parity.yaml``), the round trainer's :attr:`jaxcollab.core.family.RoundTask.config`;
each default is the environment's (:mod:`jaxcollab.envs.parity`), stated there only."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from jaxcollab.collab.messages import KINDS
from jaxcollab.core.config import bounded, count
from jaxcollab.core.errors import ConfigValueError
from jaxcollab.core.family import TaskConfig
from jaxcollab.envs import parity


class ParityView(StrEnum):
    masked = "masked"  # n characters, ? where unseen (the paper)
    own = "own"        # only the agent's own bits (the cpu preset)


class ParitySplit(StrEnum):
    alternate = "alternate"


@dataclass
class ParityTask(TaskConfig):
    """Chained parity (the paper's §1 task): ``alphas`` lead, the tail fills ``alpha_sum``."""

    name: str = "parity"
    n_rounds: int = count(5)
    alphas: list[float] = field(default_factory=lambda: list(parity.SEED_ALPHA_HEAD))
    n_bits: int = count(parity.SEED_N_BITS)
    alpha_sum: float = bounded(parity.SEED_ALPHA_SUM, gt=0.0, lt=0.5)
    split: ParitySplit = ParitySplit.alternate
    view: ParityView = ParityView.masked

    def check(self) -> None:
        if self.name != "parity":
            raise ConfigValueError("task.name", self.name, "'parity' in task/parity")
        if len(self.alphas) > self.n_bits:
            raise ConfigValueError("task.alphas", list(self.alphas),
                                   f"at most task.n_bits={self.n_bits} coefficients")
        check_alphas({"alphas": list(self.alphas), "n_bits": self.n_bits,
                      "alpha_sum": self.alpha_sum})

    def train_examples(self) -> int:
        """Exactly the training examples of the split (the builder's)."""
        return self.n_examples - parity.n_test_examples(self.n_examples, self.test_fraction)

    def check_run(self, run: Any) -> None:
        """Vmapped ``seeds`` play the protocol conversations only, and the ``separation``
        checks need both protocols and rounds of the run.

        Raises:
            ConfigValueError: naming the key.
        """
        if run.seeds is not None and run.calibration is not None:
            raise ConfigValueError("seeds", run.seeds, f"null: {RUN_KEYS['seeds']}")
        if run.separation is None:
            return
        if set(run.protocol_names()) != set(KINDS):
            raise ConfigValueError("protocols", run.protocol_names(),
                                   f"both {list(KINDS)} when separation checks are set")
        rounds = [run.separation.round, *run.separation.action_rounds,
                  *run.separation.ratio_rounds]
        if not all(1 <= r <= run.n_rounds for r in rounds):
            raise ConfigValueError("separation", rounds, f"rounds in 1..n_rounds={run.n_rounds}")


#: The ``train/collab.py`` keys only the parity task reads
#: (:attr:`jaxcollab.core.family.RoundTask.run_keys`).
RUN_KEYS = {
    "seeds": "vmapped seeds run the parity protocol conversations (one seed per maze or "
             "calibration run)",
    "separation": "the separation checks are the parity experiment's (the paper's Figure 3)",
}


def check_alphas(cfg: Mapping) -> None:
    """The coefficients ``cfg["alphas"]`` are valid for ``n_bits`` and ``alpha_sum`` (the
    paper's App. E rule, :func:`jaxcollab.envs.parity.make_alphas`).

    Raises:
        ConfigValueError: ``task.alphas``, naming the rule broken."""
    try:
        parity.make_alphas(list(cfg["alphas"]), cfg["n_bits"], cfg.get("alpha_sum"))
    except ValueError as e:
        raise ConfigValueError("task.alphas", list(cfg["alphas"]), "coefficients >= 0 summing "
                               f"to at most task.alpha_sum={cfg.get('alpha_sum')} ({e})") \
            from None
