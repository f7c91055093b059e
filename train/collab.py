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

import sys
import time
from pathlib import Path

import hydra
import jax
from omegaconf import DictConfig, OmegaConf

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jaxcollab.collab import messages, tasks, theory  # noqa: E402
from jaxcollab.collab.fit import TrainConfig  # noqa: E402
from jaxcollab.collab.trainer import RoundTrainer, run_trainers  # noqa: E402
from jaxcollab.envs.parity import make_alphas  # noqa: E402
from jaxcollab.io.logging import MODES, RunLogger  # noqa: E402
from jaxcollab.io.plots import THEORY_KEYS, separation_plot  # noqa: E402
from jaxcollab.io.results import ResultsFile  # noqa: E402

LISTED = ("test_mse_vs_pstar", "test_accuracy", "test_ce", "best_val_loss", "train_seconds")
FROZEN = ("seed", "n_rounds", "task", "model", "train", "protocol")  # must match on resume


def protocol_names(cfg: DictConfig) -> list[str]:
    """The protocols to run. Raises ValueError on an unknown name (lists the valid ones)."""
    names = list(cfg.protocols) if cfg.protocols else [cfg.protocol.name]
    bad = [n for n in names if n not in messages.KINDS]
    if bad:
        raise ValueError(f"unknown protocol(s) {bad}; expected one of {messages.KINDS}")
    return names


def check_config(cfg: DictConfig, results: ResultsFile) -> None:
    """Fail before any work on bad values, or on resuming a run with a different config."""
    if cfg.task.name not in tasks.TASKS:
        raise ValueError(f"unknown task {cfg.task.name!r}; expected one of {sorted(tasks.TASKS)}")
    if cfg.logger.mode not in MODES:
        raise ValueError(f"unknown logger.mode {cfg.logger.mode!r}; expected one of {MODES}")
    protocol_names(cfg)
    TrainConfig(**cfg.train)
    frozen = {k: OmegaConf.to_container(cfg[k], resolve=True) if isinstance(cfg[k], DictConfig)
              else cfg[k] for k in FROZEN}
    old = results.data.get("config")
    if old is not None and {k: old.get(k) for k in FROZEN} != frozen:
        raise ValueError(
            f"{results.path} was written with a different config; use a new out_dir "
            f"(old: { {k: old.get(k) for k in FROZEN} }, new: {frozen})"
        )


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


@hydra.main(version_base=None, config_path="../configs", config_name="collab")
def main(cfg: DictConfig) -> None:
    start = time.perf_counter()
    out = Path(cfg.out_dir)
    results = ResultsFile(out / "results.json")
    check_config(cfg, results)
    results.set(("config",), OmegaConf.to_container(cfg, resolve=True))
    key_data, key_train = jax.random.split(jax.random.PRNGKey(cfg.seed))
    task = tasks.make_task(OmegaConf.to_container(cfg.task, resolve=True), key_data)
    if task.name == "parity":
        alphas = make_alphas(cfg.task.alphas, cfg.task.n_bits, cfg.task.get("alpha_sum"))
        results.set(("theory",), theory.parity_curves(alphas, cfg.n_rounds))
    names = protocol_names(cfg)
    # One key for every protocol: round r of each starts from the same weights and batches, so
    # the curves differ by the messages alone, and round 1 (no messages yet) is trained once.
    trainers = {
        name: RoundTrainer(
            task,
            messages.MessageCodec(name, task.vocab, task.class_chars, cfg.protocol.digits),
            OmegaConf.to_container(cfg.model, resolve=True),
            TrainConfig(**cfg.train),
            cfg.n_rounds,
            out / name,
            key_train,
            first_round_from=None if name == names[0] else out / names[0],
        )
        for name in names
    }  # every trainer validates its configuration here, before any training
    logger = RunLogger(cfg.logger.mode, cfg.logger.project, cfg.experiment_name,
                       OmegaConf.to_container(cfg, resolve=True), str(out))
    def on_round(name: str, done: list[dict]) -> None:
        metrics = done[-1]
        record_round(results, name, done)
        # "<protocol>/round" is the x-axis: wandb steps must increase across protocols
        logger.log({f"{name}/round": metrics["round"],
                    **{f"{name}/{k}": metrics[k] for k in LISTED}})
        if task.name == "parity":
            separation_plot(results.data, out / "separation.png")
        print(f"{name} round {metrics['round']}: "
              + ", ".join(f"{k}={metrics[k]:.5g}" for k in LISTED))

    run_trainers(trainers, logger.progress, on_round)
    if cfg.separation is not None:
        results.set(("separation",), separation(results.data, cfg.separation))
        print(f"separation: {results.data['separation']}")
    results.set(("wall_seconds",), time.perf_counter() - start)
    logger.finish()
    print(f"wrote {out / 'results.json'}")


if __name__ == "__main__":
    main()
