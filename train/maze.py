"""Split-mask maze experiment (issue 4): ``python train/maze.py experiment=maze_messages
preset=cpu|paper``.

Trains the round-by-round conversation (``jaxcollab.collab.trainer.RoundTrainer``) for each
protocol on the maze task, then one-round baselines — a solo agent on the full maze and each
agent alone on its half — and compares the exact Bayes first move of each half view with the
trained half-view models. Agent 0 alone on its half *is* round 1 of the conversation (no message
yet), so that baseline is round 1; the solo and agent-1 baselines are trained like one round:
same model, steps and key, on the same number of mazes as a round's chunk. Maze success of
round r: a maze succeeds when the decision after r rounds is right at every step of its path
(the trajectory advances one step per conversation and a wrong move ends the maze;
:func:`jaxcollab.collab.maze_task.maze_scores`).

Writes into ``out_dir``: ``results.json`` (updated as each round ends), ``maze_success.png``,
and the trainer's per-round directories under ``<protocol>/`` and ``baseline_<name>/``.
Rerunning with the same ``out_dir`` resumes finished rounds; a changed config is refused.

``results.json`` keys:
    ``config``; ``dataset`` (mazes and examples per split, generator acceptance rate);
    ``protocols.<name>``: lists by round — ``rounds`` (1-based), ``maze_success`` (fraction of
    test mazes), ``step_accuracy`` (fraction of test steps), ``train_seconds``;
    ``baselines.solo`` and ``baselines.half_view.agent0|agent1``: ``maze_success``,
    ``step_accuracy``; ``bayes_first_move``: over the first ``bayes_mazes`` test mazes, per
    agent the first-move accuracy of the exact Bayes posterior (the ceiling for one half view)
    and of the trained half-view model; ``wall_seconds``.
"""

from __future__ import annotations

import time

import hydra
import jax
import numpy as np
from omegaconf import DictConfig, OmegaConf

from jaxcollab.collab import messages
from jaxcollab.collab.fit import TrainConfig
from jaxcollab.collab.maze_task import collab_task, maze_scores, maze_split
from jaxcollab.collab.trainer import RoundTrainer, run_trainers
from jaxcollab.envs.maze import reference, text
from jaxcollab.io.maze_plots import maze_success_plot
from jaxcollab.io.run import start_run
from jaxcollab.io.schema import ConfigValueError
from jaxcollab.scale.distributed import is_main

FROZEN = ("seed", "n_rounds", "task", "model", "train", "protocols", "bayes_mazes", "data")
BASELINES = {"solo": (text.SOLO,), "agent1": (1,)}  # agent 0 alone is round 1


def protocol_names(cfg: DictConfig) -> list[str]:
    """The protocols to run: ``protocols`` if set, else ``protocol.name`` (schema-checked)."""
    return list(cfg.protocols) if cfg.protocols else [cfg.protocol.name]


def check_config(cfg: DictConfig) -> None:
    """Cross-key checks beyond the schema (:class:`jaxcollab.io.schema.Collab`).

    Raises:
        ConfigValueError: a task other than the maze, or ``seeds`` (one seed per run here).
    """
    if cfg.seeds is not None:
        raise ConfigValueError("seeds", list(cfg.seeds), "null: this entry point trains one "
                               "seed per run (seed=); train/collab.py trains several at once")
    if cfg.task.name != "maze":
        raise ConfigValueError("task", cfg.task.name, "'maze' (train/maze.py runs the maze "
                               "task; use experiment=maze_messages or task=maze)")


def round_scores(trainer: RoundTrainer, r: int, maze_ids: np.ndarray, n_mazes: int) -> dict:
    """Maze success and step accuracy of round r's test predictions (decision = argmax)."""
    with np.load(trainer.round_dir(r) / "round.npz") as z:
        probs, labels = z["test_probs"], z["test_labels"]
    return maze_scores(probs, labels, maze_ids, n_mazes)


def bayes_first_move(test: text.MazeSet, half_views: dict, n: int) -> dict:
    """Exact Bayes vs trained first-move accuracy of each half view on the first n test mazes.

    ``half_views["agent<a>"]`` is the round directory of agent a's model alone on its half.
    """
    head = test.subset(slice(0, n))  # the first n mazes' examples open the test set
    ex = head.examples()
    first = np.flatnonzero(ex["step"] == 0)
    views = head.views()
    out = {"n_mazes": len(first)}
    for agent in (0, 1):
        bayes = [reference.bayes_first_move(views[j, agent], test.shape)[0] for j in first]
        with np.load(half_views[f"agent{agent}"] / "round.npz") as z:
            trained = z["test_probs"][first]
        labels = ex["label"][first]
        out[f"agent{agent}"] = {
            "bayes_accuracy": float(np.mean(np.argmax(bayes, -1) == labels)),
            "trained_accuracy": float(np.mean(np.asarray(messages.decide(trained)) == labels)),
        }
    return out


def make_trainer(cfg, train, test, roles, codec_kind, n_rounds, run_dir, key,
                 first_round_from=None) -> RoundTrainer:
    task = collab_task(train, test, roles)
    codec = messages.MessageCodec(codec_kind, task.vocab, task.class_chars, cfg.protocol.digits)
    return RoundTrainer(
        task, codec, OmegaConf.to_container(cfg.model), TrainConfig(**cfg.train),
        n_rounds, run_dir, key, first_round_from=first_round_from,
        cross_fit=cfg.data.cross_fit,
    )


def run(cfg: DictConfig) -> dict:
    """The whole job on a composed config; returns the results (also in ``results.json``)."""
    start = time.perf_counter()
    job = start_run(cfg, frozen=FROZEN, check=check_config)
    cfg, out, results, logger = job.cfg, job.out, job.results, job.logger
    names = protocol_names(cfg)
    key_data, key_train = jax.random.split(jax.random.PRNGKey(cfg.seed))
    train, test, stats = maze_split(OmegaConf.to_container(cfg.task), key_data)
    maze_ids = test.examples()["maze"]
    results.set(
        ("dataset",),
        {
            "train_mazes": len(train),
            "test_mazes": len(test),
            "train_examples": int(train.n_moves.sum()),
            "test_examples": int(test.n_moves.sum()),
            **stats,
        },
    )
    # Protocols share one key (round 1 is trained once, see RoundTrainer.first_round_from).
    trainers = {
        name: make_trainer(cfg, train, test, (0, 1), name, cfg.n_rounds, out / name, key_train,
                           None if name == names[0] else out / names[0])
        for name in names
    }
    round_mazes = train.subset(slice(0, len(train) // cfg.n_rounds))  # about one round chunk
    for b, roles in BASELINES.items():
        trainers[b] = make_trainer(cfg, round_mazes, test, roles, "action", 1,
                                   out / f"baseline_{b}", key_train)
    half_views = {"agent0": trainers[names[0]].round_dir(1),
                  "agent1": trainers["agent1"].round_dir(1)}
    scores: dict[str, list[dict]] = {}

    def on_round(name: str, done: list[dict]) -> None:
        r = done[-1]["round"]
        got = {"round": r, "train_seconds": done[-1]["train_seconds"],
               **round_scores(trainers[name], r, maze_ids, len(test))}
        scores.setdefault(name, []).append(got)
        if name in names:
            entry = {k: [d[k] for d in scores[name]] for k in got}
            entry["rounds"] = entry.pop("round")
            results.set(("protocols", name), entry)
            if name == names[0] and r == 1:
                results.set(("baselines", "half_view", "agent0"),
                            {k: got[k] for k in ("maze_success", "step_accuracy")})
        else:
            where = ("baselines", "solo") if name == "solo" else ("baselines", "half_view", name)
            results.set(where, {k: got[k] for k in ("maze_success", "step_accuracy")})
        logger.log({f"{name}/{k}": got[k] for k in ("round", "maze_success", "step_accuracy")})
        if is_main():  # one process draws (multi-host)
            maze_success_plot(results.data, out / "maze_success.png")
        print(f"{name} round {r}: maze_success={got['maze_success']:.4f}, "
              f"step_accuracy={got['step_accuracy']:.4f}")

    run_trainers(trainers, logger.progress, on_round)
    if cfg.bayes_mazes > 0:
        results.set(("bayes_first_move",), bayes_first_move(test, half_views, cfg.bayes_mazes))
        print(f"bayes first move: {results.data['bayes_first_move']}")
    results.set(("wall_seconds",), time.perf_counter() - start)
    job.finish()
    print(f"wrote {out / 'results.json'}")
    return results.data


main = hydra.main(version_base=None, config_path="../configs", config_name="collab")(run)




if __name__ == "__main__":
    main()
