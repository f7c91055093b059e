"""The chained-parity experiment of the round-by-round trainer (Narrowing the Collaboration Gap,
Probably, §3 and App. E): one conversation per protocol (and seed), scored on p* beside the
exact theory, with the Figure 3 separation checks; ``results.json`` keys:
:mod:`jaxcollab.collab.run`. It is the parity family's
:attr:`jaxcollab.core.family.RoundTask.experiment`.
"""

from __future__ import annotations

from pathlib import Path

import jax
from omegaconf import DictConfig, OmegaConf

from jaxcollab.agents.parity.plots import THEORY_KEYS, separation_plot
from jaxcollab.agents.parity.theory import parity_curves
from jaxcollab.collab.run import protocol_names, task_data, trainer
from jaxcollab.collab.trainer import RoundTrainer, SeedTrainers
from jaxcollab.envs.parity import make_alphas
from jaxcollab.io.phases import phase
from jaxcollab.io.plots import seeds_plot
from jaxcollab.io.results import ResultsFile
from jaxcollab.io.seeds import spread
from jaxcollab.scale.distributed import is_main

#: Metrics listed by round in ``protocols.<name>``.
LISTED = ("test_mse_vs_pstar", "test_accuracy", "test_ce", "best_val_loss", "train_seconds")


def _curve(entry: dict, metric: str) -> list[float]:
    """A metric by round: the list of one seed, or the mean over seeds."""
    values = entry[metric]
    return values["mean"] if isinstance(values, dict) else values


class Protocols:
    """Parity: one conversation per protocol (and seed), scored on p*."""

    def __init__(self, cfg: DictConfig, out: Path, results: ResultsFile, logger):
        self.cfg, self.out, self.results, self.logger = cfg, out, results, logger
        self.seeds = None if cfg.seeds is None else list(cfg.seeds)
        alphas = make_alphas(cfg.task.alphas, cfg.task.n_bits, cfg.task.alpha_sum)
        results.set(("theory",), parity_curves(alphas, cfg.n_rounds))
        self.done: dict[str, list] = {}

    def _one_seed(self, seed: int, run_dir) -> dict[str, RoundTrainer]:
        key_data, key_train = jax.random.split(jax.random.PRNGKey(seed))
        task, _ = task_data(self.cfg, key_data)
        first, *_ = names = protocol_names(self.cfg)
        # One key for every protocol: round r of each starts from the same weights and batches,
        # so the curves differ by the messages alone, and round 1 is trained once.
        return {name: trainer(self.cfg, task, name, run_dir(name), key_train,
                              self.logger.progress,
                              first_round_from=None if name == first else run_dir(first))
                for name in names}

    def conversations(self) -> dict:
        if self.seeds is None:
            return self._one_seed(self.cfg.seed, lambda name: self.out / name)
        per_seed = [self._one_seed(s, lambda name, s=s: self.out / name / f"seed_{s}")
                    for s in self.seeds]
        return {name: SeedTrainers([t[name] for t in per_seed], self.out / name)
                for name in protocol_names(self.cfg)}

    def record(self, name: str, metrics) -> None:
        done = self.done.setdefault(name, [])
        done.append(metrics)
        curve = self.results.data["theory"][THEORY_KEYS[name]]
        if self.seeds is None:
            entry = {"rounds": [m["round"] for m in done]}
            entry.update({k: [m[k] for m in done] for k in LISTED})
        else:
            entry = {"rounds": [by_seed[0]["round"] for by_seed in done], "seeds": self.seeds}
            entry.update({k: spread([[by_seed[s][k] for by_seed in done]
                                     for s in range(len(self.seeds))]) for k in LISTED})
        entry["theory_mse_vs_pstar"] = [curve[r] for r in entry["rounds"]]
        entry["per_round"] = done
        self.results.set(("protocols", name), entry)
        means = {k: _curve(entry, k)[-1] for k in LISTED}
        # "<protocol>/round" is the x-axis: wandb steps must increase across protocols
        self.logger.log({f"{name}/round": entry["rounds"][-1],
                         **{f"{name}/{k}": v for k, v in means.items()}})
        if is_main():  # one process draws (multi-host)
            with phase("plots"):
                if self.seeds is None:
                    separation_plot(self.results.data, self.out / "separation.png")
                else:
                    seeds_plot(self.results.data, self.out / "seeds.png")
        print(f"{name} round {entry['rounds'][-1]}"
              + (f" (mean of {len(self.seeds)} seeds)" if self.seeds else "") + ": "
              + ", ".join(f"{k}={v:.5g}" for k, v in means.items()))

    def finish(self) -> None:
        checks = self.cfg.separation
        if checks is None:
            return
        prob, act = ({r: v for r, v in zip(self.results.data["protocols"][p]["rounds"],
                                           _curve(self.results.data["protocols"][p],
                                                  "test_mse_vs_pstar"), strict=True)}
                     for p in ("probability", "action"))
        ratios = [act[r] / prob[r] if prob[r] > 0 else float("inf") for r in checks.ratio_rounds]
        self.results.set(("separation",), {
            **OmegaConf.to_container(checks),
            "probability_mse_at_round": prob[checks.round],
            "action_mse_at_rounds": [act[r] for r in checks.action_rounds],
            "mse_ratio_at_rounds": ratios,
            "passed": bool(prob[checks.round] < checks.prob_below
                           and all(act[r] > checks.action_above for r in checks.action_rounds)
                           and all(x >= checks.min_ratio for x in ratios)),
        })
        print(f"separation: {self.results.data['separation']}")
