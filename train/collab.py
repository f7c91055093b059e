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
"""

from __future__ import annotations

import time

import hydra
import jax
from omegaconf import DictConfig, OmegaConf

from jaxcollab.collab import messages, tasks, theory
from jaxcollab.collab.fit import TrainConfig
from jaxcollab.collab.trainer import RoundTrainer, run_trainers
from jaxcollab.envs.parity import make_alphas
from jaxcollab.io.plots import THEORY_KEYS, separation_plot
from jaxcollab.io.results import ResultsFile
from jaxcollab.io.run import start_run
from jaxcollab.io.schema import ConfigValueError
from jaxcollab.scale.distributed import is_main

LISTED = ("test_mse_vs_pstar", "test_accuracy", "test_ce", "best_val_loss", "train_seconds")
FROZEN = ("seed", "n_rounds", "task", "model", "train", "protocol", "data")  # must match on resume


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


def separation(results: dict, checks: DictConfig) -> dict:
    """The experiment's pass/fail checks on the learned curves (probability vs action)."""
    prob = dict(zip(results["protocols"]["probability"]["rounds"],
                    results["protocols"]["probability"]["test_mse_vs_pstar"], strict=True))
    act = dict(zip(results["protocols"]["action"]["rounds"],
                   results["protocols"]["action"]["test_mse_vs_pstar"], strict=True))
    prob_ok = prob[checks.round] < checks.prob_below
    act_ok = all(act[r] > checks.action_above for r in checks.action_rounds)
    return {
        **OmegaConf.to_container(checks),
        "probability_mse_at_round": prob[checks.round],
        "action_mse_at_rounds": [act[r] for r in checks.action_rounds],
        "passed": bool(prob_ok and act_ok),
    }


def run(cfg: DictConfig) -> dict:
    """The whole job on a composed config; returns the results (also in ``results.json``)."""
    start = time.perf_counter()
    job = start_run(cfg, frozen=FROZEN, check=check_config)
    cfg, out, results = job.cfg, job.out, job.results
    key_data, key_train = jax.random.split(jax.random.PRNGKey(cfg.seed))
    task = tasks.make_task(OmegaConf.to_container(cfg.task), key_data)
    if task.name == "parity":
        alphas = make_alphas(cfg.task.alphas, cfg.task.n_bits, cfg.task.alpha_sum)
        results.set(("theory",), theory.parity_curves(alphas, cfg.n_rounds))
    names = protocol_names(cfg)
    # One key for every protocol: round r of each starts from the same weights and batches, so
    # the curves differ by the messages alone, and round 1 (no messages yet) is trained once.
    trainers = {
        name: RoundTrainer(
            task,
            messages.MessageCodec(name, task.vocab, task.class_chars, cfg.protocol.digits),
            OmegaConf.to_container(cfg.model),
            TrainConfig(**cfg.train),
            cfg.n_rounds,
            out / name,
            key_train,
            first_round_from=None if name == names[0] else out / names[0],
            cross_fit=cfg.data.cross_fit,
        )
        for name in names
    }

    def on_round(name: str, done: list[dict]) -> None:
        metrics = done[-1]
        record_round(results, name, done)
        # "<protocol>/round" is the x-axis: wandb steps must increase across protocols
        job.logger.log({f"{name}/round": metrics["round"],
                        **{f"{name}/{k}": metrics[k] for k in LISTED}})
        if task.name == "parity" and is_main():  # one process draws (multi-host)
            separation_plot(results.data, out / "separation.png")
        print(f"{name} round {metrics['round']}: "
              + ", ".join(f"{k}={metrics[k]:.5g}" for k in LISTED))

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
