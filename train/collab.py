"""Round-by-round collaborative training (issue 3): ``python train/collab.py [overrides]``.

    python train/collab.py task=parity protocol=action preset=cpu
    python train/collab.py experiment=parity_separation preset=cpu

Writes into ``out_dir``: ``results.json`` (updated as each round ends), ``separation.png``
(parity), ``config.yaml``, and per protocol ``<protocol>/round_<r>/`` (checkpoint, messages,
test predictions; see :mod:`jaxcollab.collab.trainer`). Rerunning with the same ``out_dir``
resumes at the first unfinished round; a changed config is refused.

``results.json`` keys:
    ``config``; ``wall_seconds``; ``theory`` (parity: exact curves by round k = 0..K, see
    :func:`jaxcollab.collab.theory.parity_curves`); ``protocols.<name>``: lists by round —
    ``rounds`` (1-based), ``test_mse_vs_pstar`` (E[(p − p*)²], probability²),
    ``test_accuracy`` (fraction), ``test_ce`` (nats), ``theory_mse_vs_pstar``,
    ``best_val_loss`` (nats), ``train_seconds`` — and ``per_round`` (every metric of each
    round); ``separation`` (experiment checks, with ``passed``).

Several seeds in one job, vmapped (every seed's models train together in one compiled call,
rounds in lockstep; seed s gives the results of ``seed=s`` to float tolerance)::

    python train/collab.py task=parity protocol=probability preset=cpu seeds=[0,1,2,3]

``seeds`` replaces ``seed``. Each seed's rounds go to ``<protocol>/seed_<s>/round_<r>/``;
``protocols.<name>`` then holds ``rounds``, ``seeds``, each listed metric as ``{per_seed
[seeds][rounds], mean, std, min, max}`` (as :func:`jaxcollab.io.seeds.summarise`; ``train_seconds``
is the shared fit's), ``theory_mse_vs_pstar`` and ``per_round`` (by round, a list by seed); the
plot is ``seeds.png`` (per-seed curves, mean ± std); separation checks use the mean curves.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import hydra
import jax
from omegaconf import DictConfig, OmegaConf

from jaxcollab.collab import messages, tasks, theory
from jaxcollab.collab.fit import TrainConfig
from jaxcollab.collab.trainer import RoundTrainer, SeedTrainers, run_trainers
from jaxcollab.envs.parity import make_alphas
from jaxcollab.io.plots import THEORY_KEYS, separation_plot
from jaxcollab.io.results import ResultsFile
from jaxcollab.io.run import start_run
from jaxcollab.io.schema import ConfigValueError
from jaxcollab.io.seeds import seeds_plot, spread
from jaxcollab.scale.distributed import is_main

LISTED = ("test_mse_vs_pstar", "test_accuracy", "test_ce", "best_val_loss", "train_seconds")
#: Config keys a resumed run must share with the run that wrote ``results.json``.
FROZEN = ("seed", "seeds", "n_rounds", "task", "model", "train", "protocol", "data")


def protocol_names(cfg: DictConfig) -> list[str]:
    """The protocols to run: ``protocols`` if set, else ``protocol.name`` (schema-checked)."""
    return list(cfg.protocols) if cfg.protocols else [cfg.protocol.name]


def check_config(cfg: DictConfig) -> None:
    """Cross-key checks beyond the schema (:class:`jaxcollab.io.schema.Collab`).

    Raises:
        ConfigValueError: the separation checks without both protocols, or a separation round
            outside ``1..n_rounds``.
    """
    if cfg.separation is None:
        return
    if set(protocol_names(cfg)) != set(messages.KINDS):
        raise ConfigValueError("protocols", protocol_names(cfg),
                               f"both {list(messages.KINDS)} when separation checks are set")
    rounds = [cfg.separation.round, *cfg.separation.action_rounds]
    if not all(1 <= r <= cfg.n_rounds for r in rounds):
        raise ConfigValueError("separation", rounds, f"rounds in 1..n_rounds={cfg.n_rounds}")


def record_round(results: ResultsFile, name: str, done: list[dict]) -> None:
    """Rewrite ``protocols.<name>`` from the finished rounds' metrics."""
    curve = results.data.get("theory", {}).get(THEORY_KEYS[name])
    entry = {"rounds": [m["round"] for m in done]}
    entry.update({k: [m[k] for m in done] for k in LISTED})
    if curve is not None:
        entry["theory_mse_vs_pstar"] = [curve[m["round"]] for m in done]
    entry["per_round"] = done
    results.set(("protocols", name), entry)


def record_seeds_round(results: ResultsFile, seeds: list[int], name: str,
                       done: list[list[dict]]) -> None:
    """Rewrite ``protocols.<name>`` from the finished rounds' metrics of every seed
    (``done[round][seed]``): each listed metric as per-seed curves and their spread by round."""
    curve = results.data.get("theory", {}).get(THEORY_KEYS[name])
    rounds = [by_seed[0]["round"] for by_seed in done]
    entry = {"rounds": rounds, "seeds": seeds}
    entry.update({k: spread([[by_seed[s][k] for by_seed in done] for s in range(len(seeds))])
                  for k in LISTED})
    if curve is not None:
        entry["theory_mse_vs_pstar"] = [curve[r] for r in rounds]
    entry["per_round"] = done
    results.set(("protocols", name), entry)


def _curve(entry: dict, metric: str) -> list[float]:
    """A metric by round: the list of one seed, or the mean over seeds."""
    values = entry[metric]
    return values["mean"] if isinstance(values, dict) else values


def separation(results: dict, checks: DictConfig) -> dict:
    """The experiment's pass/fail checks on the learned curves (probability vs action; with
    several seeds, their mean curves)."""
    prob, act = ({r: v for r, v in zip(results["protocols"][p]["rounds"],
                                       _curve(results["protocols"][p], "test_mse_vs_pstar"),
                                       strict=True)} for p in ("probability", "action"))
    prob_ok = prob[checks.round] < checks.prob_below
    act_ok = all(act[r] > checks.action_above for r in checks.action_rounds)
    return {
        **OmegaConf.to_container(checks),
        "probability_mse_at_round": prob[checks.round],
        "action_mse_at_rounds": [act[r] for r in checks.action_rounds],
        "passed": bool(prob_ok and act_ok),
    }


def protocol_trainers(cfg: DictConfig, seed: int, run_dir: Callable[[str], Path]
                      ) -> dict[str, RoundTrainer]:
    """Each protocol's trainer for one seed (its task data and key), writing into
    ``run_dir(protocol)``."""
    key_data, key_train = jax.random.split(jax.random.PRNGKey(seed))
    task = tasks.make_task(OmegaConf.to_container(cfg.task), key_data)
    names = protocol_names(cfg)
    # One key for every protocol: round r of each starts from the same weights and batches, so
    # the curves differ by the messages alone, and round 1 (no messages yet) is trained once.
    return {
        name: RoundTrainer(
            task,
            messages.MessageCodec(name, task.vocab, task.class_chars, cfg.protocol.digits),
            OmegaConf.to_container(cfg.model),
            TrainConfig(**cfg.train),
            cfg.n_rounds,
            run_dir(name),
            key_train,
            first_round_from=None if name == names[0] else run_dir(names[0]),
            cross_fit=cfg.data.cross_fit,
        )
        for name in names
    }


def run(cfg: DictConfig) -> dict:
    """The whole job on a composed config; returns the results (also in ``results.json``)."""
    start = time.perf_counter()
    job = start_run(cfg, frozen=FROZEN, check=check_config)
    cfg, out, results = job.cfg, job.out, job.results
    if cfg.task.name == "parity":
        alphas = make_alphas(cfg.task.alphas, cfg.task.n_bits, cfg.task.alpha_sum)
        results.set(("theory",), theory.parity_curves(alphas, cfg.n_rounds))
    seeds = None if cfg.seeds is None else list(cfg.seeds)
    if seeds is None:
        trainers = protocol_trainers(cfg, cfg.seed, lambda name: out / name)
    else:  # one trainer per seed and protocol, each protocol's seeds in lockstep
        per_seed = [protocol_trainers(cfg, s, lambda name, s=s: out / name / f"seed_{s}")
                    for s in seeds]
        trainers = {name: SeedTrainers([t[name] for t in per_seed], out / name)
                    for name in protocol_names(cfg)}

    def on_round(name: str, done: list) -> None:
        if seeds is None:
            record_round(results, name, done)
        else:
            record_seeds_round(results, seeds, name, done)
        entry = results.data["protocols"][name]
        means = {k: _curve(entry, k)[-1] for k in LISTED}
        # "<protocol>/round" is the x-axis: wandb steps must increase across protocols
        job.logger.log({f"{name}/round": entry["rounds"][-1],
                        **{f"{name}/{k}": v for k, v in means.items()}})
        if is_main():  # one process draws (multi-host)
            if seeds is not None:
                seeds_plot(results.data, out / "seeds.png")
            elif cfg.task.name == "parity":
                separation_plot(results.data, out / "separation.png")
        print(f"{name} round {entry['rounds'][-1]}" + (f" (mean of {len(seeds)} seeds)" if seeds
                                                       else "") + ": "
              + ", ".join(f"{k}={v:.5g}" for k, v in means.items()))

    run_trainers(trainers, job.logger.progress, on_round)
    if cfg.separation is not None:
        results.set(("separation",), separation(results.data, cfg.separation))
        print(f"separation: {results.data['separation']}")
    results.set(("wall_seconds",), time.perf_counter() - start)
    job.finish()
    print(f"wrote {out / 'results.json'}")
    return results.data


main = hydra.main(version_base=None, config_path="../configs", config_name="collab")(run)


if __name__ == "__main__":
    main()
