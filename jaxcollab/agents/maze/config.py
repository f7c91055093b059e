"""The maze family's config: its run-config keys (:attr:`jaxcollab.core.family.Family.config`:
the ``maze`` block of its LLM protocol, the collaboration-gap paper §6), the schema of
``eval/collabgap.py``, that paper's experiments, and the round trainer's task
(:class:`MazeTask`, the Hydra ``task`` group's ``maze_schema``); each default stated here only,
or read from the environment's constants (:mod:`jaxcollab.envs.maze.generator`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from omegaconf import MISSING

from jaxcollab.core.config import bounded, check_episode_count, count
from jaxcollab.core.errors import ConfigValueError
from jaxcollab.core.family import TaskConfig
from jaxcollab.envs.maze import generator
from jaxcollab.envs.maze.reference import MAX_UNSEEN
from jaxcollab.llm.client import LLMConfig


class MazeSetting(StrEnum):
    full = "full"
    action = "action"
    verbalized = "verbalized"
    verbalized_calibrated = "verbalized_calibrated"
    verbalized_naive = "verbalized_naive"
    sampled = "sampled"
    solo = "solo"


class MazeAdvance(StrEnum):
    team = "team"      # the team's move is applied; a wrong one ends the maze
    path = "path"      # walked along the unique path: every round of every step is scored


@dataclass
class MazeBlock:
    """The maze's LLM protocol (``maze.*``; collaboration-gap paper §6)."""

    # full | action | verbalized | verbalized_calibrated | verbalized_naive | sampled | solo
    setting: MazeSetting = MazeSetting.action
    rounds: int = count(4)               # K rounds of conversation per maze step
    samples: int = count(5)              # M responses per round (sampled); 5 is ours (§6: no M)
    calibration_dir: str | None = None   # verbalized_calibrated: a finished 'verbalized' run
    # team (its move; a wrong one ends the maze) | path (walked along the path: every round
    # scored)
    advance: MazeAdvance = MazeAdvance.team
    rollouts: int = count(1)             # rollouts per maze: episode e is maze e // rollouts
    tell_partner: bool = False           # full: also ask for a message to the partner (R7)


@dataclass
class MazeConfig:
    """Every run-config key the maze family reads, beside the common ones."""

    maze: MazeBlock = field(default_factory=MazeBlock)


class CollabgapPlot(StrEnum):
    maze_success = "maze_success"          # by round, 90 % intervals (Figs. 7a, 8, 9, 11)
    step_accuracy = "step_accuracy"        # by round
    calibration_loss = "calibration_loss"  # by round, 90 % intervals (Fig. 7b)
    confidence = "confidence"              # top-probability histograms (Fig. 10)


@dataclass
class CollabgapStep:
    """One run of a collaboration-gap experiment: ``eval/rollout.py agent=llm`` into
    ``out_dir/<name>/``."""

    name: str = MISSING
    setting: MazeSetting = MazeSetting.action
    held_out: bool = False           # play the calibration mazes (calibration_seed), not plotted
    calibration: str | None = None   # verbalized_calibrated: the held-out step it is fitted on


@dataclass
class Collabgap:
    """``configs/collabgap/collabgap.yaml``: ``eval/collabgap.py`` (the collaboration-gap
    paper's LLM experiments, one ``experiment=`` each)."""

    experiment: str = MISSING
    steps: list[CollabgapStep] = MISSING
    plots: list[CollabgapPlot] = field(default_factory=lambda: [CollabgapPlot.maze_success])
    env: str = "maze/split-6x6"
    mazes: int = count(30)                # test mazes (the paper's 30)
    rollouts: int = count(10)             # rollouts per maze (the paper's 10)
    seed: int = count(0, 0)               # seed of the test mazes
    # held-out mazes the calibrators are fitted on (ours: the paper does not say what its LLM
    # calibrators are trained on)
    calibration_mazes: int = count(30)
    calibration_seed: int = count(1, 0)   # their seed (must differ from seed)
    rounds: int = count(MazeBlock.rounds)
    samples: int = count(MazeBlock.samples)
    advance: MazeAdvance = MazeAdvance.path
    tell_partner: bool = MazeBlock.tell_partner  # full steps: ask for a message to the partner
    chunk: int = count(10)                # episodes per kept chunk of each run
    llm: LLMConfig = field(default_factory=LLMConfig)
    out_dir: str = MISSING

    def check(self) -> None:
        check_episode_count("mazes", self.mazes, "rollouts", self.rollouts)
        check_episode_count("calibration_mazes", self.calibration_mazes, "rollouts",
                            self.rollouts)
        if self.seed == self.calibration_seed:
            raise ConfigValueError("calibration_seed", self.calibration_seed,
                                   f"a seed other than seed={self.seed} (the calibrator is "
                                   "fitted on other mazes)")
        names = [s.name for s in self.steps]
        for s in self.steps:
            if not s.name or "/" in s.name or names.count(s.name) > 1:
                raise ConfigValueError("steps.name", s.name, "a unique name without '/'")
            fitted = s.setting == MazeSetting.verbalized_calibrated
            if fitted != (s.calibration is not None):
                raise ConfigValueError(f"steps.{s.name}.calibration", s.calibration,
                                       "the name of a held-out verbalized step, given exactly "
                                       "for verbalized_calibrated")
            if fitted and s.calibration not in names[: names.index(s.name)]:
                raise ConfigValueError(f"steps.{s.name}.calibration", s.calibration,
                                       f"an earlier step of {names}")


class MazeView(StrEnum):
    masked = "masked"  # the agent's 36-character grid, ? where unseen


@dataclass
class MazeTask(TaskConfig):
    """Split-mask mazes (the paper's §2 task) for the round trainer: the generator's grids."""

    name: str = "maze"
    n_rounds: int = count(4)
    height: int = count(generator.HEIGHT, generator.MIN_SIDE)
    width: int = bounded(generator.WIDTH, ge=generator.MIN_SIDE, le=generator.MAX_WIDTH)
    wall_prob: float = bounded(generator.WALL_PROB, ge=0.0, lt=1.0)
    view: MazeView = MazeView.masked

    def check(self) -> None:
        if self.name != "maze":
            raise ConfigValueError("task.name", self.name, "'maze' in task/maze")
        if self.height * self.width % 2:  # jaxcollab.envs.maze.text.sample_masks
            raise ConfigValueError("task.height", self.height, f"an even number with the odd "
                                   f"task.width={self.width}: each agent sees half the cells")

    def check_run(self, run: Any) -> None:
        """The exact Bayes first move (``bayes_mazes``) enumerates every completion of a half
        view: 2^(cells an agent does not see), at most 2^MAX_UNSEEN
        (:func:`jaxcollab.envs.maze.reference.bayes_first_move`); each agent sees half the
        cells.

        Raises:
            ConfigValueError: naming the key.
        """
        if not run.bayes_mazes:
            return
        if run.calibration is not None:
            raise ConfigValueError("bayes_mazes", run.bayes_mazes, f"0: {RUN_KEYS['bayes_mazes']}")
        h, w, most = self.height, self.width, 2 * MAX_UNSEEN
        if h * w > most:
            key, value, other = (("task.height", h, f"task.width={w}") if most // w >= 4 else
                                 ("task.width", w, f"task.height={h}"))
            limit = most // (w if key == "task.height" else h)
            raise ConfigValueError(key, value, f"an integer in 4..{limit} with {other} and "
                                   f"bayes_mazes={run.bayes_mazes} (the exact Bayes first move "
                                   f"enumerates the 2^(H·W/2) completions of a half view: "
                                   f"H·W <= {most}), or bayes_mazes=0")


#: The ``train/collab.py`` keys only the maze task reads
#: (:attr:`jaxcollab.core.family.RoundTask.run_keys`).
RUN_KEYS = {"bayes_mazes": "the exact-Bayes first-move check belongs to the maze protocol "
                           "experiment (task=maze without calibration)"}
