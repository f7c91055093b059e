"""The maze experiment of the round-by-round trainer (Narrowing the Collaboration Gap, Probably, §5
and App. E): the protocol conversations of :mod:`jaxcollab.collab.run` scored by maze success,
plus one-round baselines (a solo agent on the full maze, agent 1 alone on its half) and the exact
Bayes first move of each half view; ``results.json`` keys: :mod:`jaxcollab.collab.run`. It is the
maze family's :attr:`jaxcollab.core.family.RoundTask.experiment`.
"""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np
from omegaconf import DictConfig

from jaxcollab.agents.maze.plots import maze_success_plot
from jaxcollab.agents.maze.task import collab_task, maze_scores
from jaxcollab.collab import messages
from jaxcollab.collab.run import protocol_names, task_data, trainer
from jaxcollab.envs.maze import reference, text
from jaxcollab.io.results import ResultsFile
from jaxcollab.scale.distributed import is_main

#: Maze baselines besides agent 0 alone (round 1 of the conversation): name -> roles.
BASELINES = {"solo": (text.SOLO,), "agent1": (1,)}


class Mazes:
    """Mazes: the protocol conversations plus one-round baselines, scored by maze success."""

    def __init__(self, cfg: DictConfig, out: Path, results: ResultsFile, logger):
        self.cfg, self.out, self.results, self.logger = cfg, out, results, logger
        key_data, self.key = jax.random.split(jax.random.PRNGKey(cfg.seed))
        self.task, (self.train, self.test, stats) = task_data(cfg, key_data)
        self.maze_ids = self.test.examples()["maze"]
        results.set(("dataset",), {
            "train_mazes": len(self.train), "test_mazes": len(self.test),
            "train_examples": int(self.train.n_moves.sum()),
            "test_examples": int(self.test.n_moves.sum()), **stats})
        self.names = protocol_names(cfg)
        self.scores: dict[str, list[dict]] = {}

    def conversations(self) -> dict:
        first = self.names[0]
        # Protocols share one key (round 1 is trained once, RoundTrainer.first_round_from).
        runs = {name: trainer(self.cfg, self.task, name, self.out / name, self.key,
                              self.logger.progress,
                              first_round_from=None if name == first else self.out / first)
                for name in self.names}
        round_mazes = self.train.subset(slice(0, len(self.train) // self.cfg.n_rounds))
        for b, roles in BASELINES.items():
            runs[b] = trainer(self.cfg, collab_task(round_mazes, self.test, roles), "action",
                              self.out / f"baseline_{b}", self.key, self.logger.progress, 1)
        self.runs = runs
        return runs

    def record(self, name: str, metrics: dict) -> None:
        r = metrics["round"]
        with np.load(self.runs[name].round_dir(r) / "round.npz") as z:
            got = {"round": r, "train_seconds": metrics["train_seconds"],
                   **maze_scores(z["test_probs"], z["test_labels"], self.maze_ids,
                                 len(self.test))}
        self.scores.setdefault(name, []).append(got)
        scores = {k: got[k] for k in ("maze_success", "step_accuracy")}
        if name in self.names:
            entry = {k: [d[k] for d in self.scores[name]] for k in got}
            entry["rounds"] = entry.pop("round")
            self.results.set(("protocols", name), entry)
            if name == self.names[0] and r == 1:
                self.results.set(("baselines", "half_view", "agent0"), scores)
        else:
            where = ("solo",) if name == "solo" else ("half_view", name)
            self.results.set(("baselines", *where), scores)
        self.logger.log({f"{name}/{k}": got[k] for k in ("round", "maze_success",
                                                         "step_accuracy")})
        if is_main():  # one process draws (multi-host)
            maze_success_plot(self.results.data, self.out / "maze_success.png")
        print(f"{name} round {r}: maze_success={got['maze_success']:.4f}, "
              f"step_accuracy={got['step_accuracy']:.4f}")

    def finish(self) -> None:
        if self.cfg.bayes_mazes > 0:
            self.results.set(("bayes_first_move",), self.bayes_first_move(self.cfg.bayes_mazes))
            print(f"bayes first move: {self.results.data['bayes_first_move']}")

    def bayes_first_move(self, n: int) -> dict:
        """Exact Bayes vs trained first-move accuracy of each half view on the first n test
        mazes (agent a's trained half view: round 1 of the conversation for a = 0, else the
        ``agent1`` baseline)."""
        head = self.test.subset(slice(0, n))  # the first n mazes' examples open the test set
        ex = head.examples()
        first = np.flatnonzero(ex["step"] == 0)
        views = head.views()
        half_views = {0: self.runs[self.names[0]], 1: self.runs["agent1"]}
        out = {"n_mazes": len(first)}
        for agent, run in half_views.items():
            bayes = [reference.bayes_first_move(views[j, agent], self.test.shape)[0]
                     for j in first]
            with np.load(run.round_dir(1) / "round.npz") as z:
                trained = z["test_probs"][first]
            labels = ex["label"][first]
            out[f"agent{agent}"] = {
                "bayes_accuracy": float(np.mean(np.argmax(bayes, -1) == labels)),
                "trained_accuracy": float(np.mean(np.asarray(messages.decide(trained))
                                                  == labels)),
            }
        return out
