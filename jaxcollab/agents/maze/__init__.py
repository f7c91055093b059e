"""The maze family's plug-in (:data:`FAMILY`): the privileged ``oracle`` team, the evaluation
shared by every team (oracle, LLM), the exporter and the LLM game.

``python eval/rollout.py env=maze/split-6x6 agent=oracle episodes=N`` (or ``agent=llm``).
``maze.rollouts=R`` plays each of the ``episodes`` mazes R times (episode ``e`` is rollout
``e % R`` of maze ``e // R``, maze ``m`` the run's instance ``m``: the paper's 30 mazes x 10
rollouts, Narrowing the Collaboration Gap, Probably, §6).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

import jax.numpy as jnp
import numpy as np

from jaxcollab.agents.maze import draw
from jaxcollab.agents.maze.config import RUN_KEYS, Collabgap, MazeConfig, MazeTask
from jaxcollab.agents.maze.task import SCORES, check_sampler, maze_task
from jaxcollab.core.config import typed
from jaxcollab.core.family import Draw, Family, LLMGame, RoundTask, ScriptedTeam, Spec, Team
from jaxcollab.core.registry import make, register_family
from jaxcollab.core.rollout import privileged_policy
from jaxcollab.envs.maze import export_instances
from jaxcollab.envs.maze.env import OUT_OF_STEPS, RUNNING, SUCCESS, WRONG_MOVE, MazeEnv
from jaxcollab.scale import preempt

ENDINGS = {RUNNING: "running", SUCCESS: "success", WRONG_MOVE: "wrong_move",
           OUT_OF_STEPS: "truncated"}
FIELDS = ("ending", "step", "n_moves")


def maze_oracle(key, obs, policy_state, state, params):
    """Both agents propose the true next move (reads the hidden path: a solver)."""
    move = state.moves[jnp.clip(state.step, 0, state.moves.shape[0] - 1)]
    return jnp.stack([move, move]).astype(jnp.int32), policy_state


def scripted(name: str) -> ScriptedTeam:
    """Team ``name`` (``oracle``) as a :class:`~jaxcollab.core.family.Team`.

    Raises:
        KeyError: unknown team.
    """
    if name != "oracle":
        raise KeyError(f"unknown maze team {name!r}; valid: oracle")
    return ScriptedTeam(name, lambda env: _ORACLE)


_ORACLE = privileged_policy(maze_oracle)


def summary(final: Mapping[str, np.ndarray]) -> dict:
    """``episodes``, ``success_rate`` = ``maze_success`` (fraction of episodes reaching the
    goal: every step decided right, Narrowing the Collaboration Gap §5), ``step_accuracy``
    (steps decided right / steps decided) and ``endings`` counts."""
    ending, step = np.asarray(final["ending"]), np.asarray(final["step"])
    correct = step - (ending == WRONG_MOVE)
    rate = float(np.mean(ending == SUCCESS))
    return {"episodes": int(ending.size), "success_rate": rate, "maze_success": rate,
            "step_accuracy": float(correct.sum() / max(step.sum(), 1)),
            "endings": {name: int((ending == i).sum()) for i, name in ENDINGS.items()}}


def evaluate(env_names: Sequence[str], player: Team, spec: Spec) -> dict:
    """Play ``spec.episodes`` mazes (keys ``episode_keys(seed, episodes)``) ``maze.rollouts``
    times each (module docstring) on each maze environment with ``player``, ``spec.chunk``
    episodes at a time (resumable, :func:`~jaxcollab.scale.preempt.resumable_episodes`).

    Returns:
        ``agent``, the :func:`summary` keys over every environment, and ``per_env.<name>`` (the
        same keys) when several environments are given.
    """
    keys = np.asarray(spec.keys())
    rollouts = int(typed(MazeConfig, spec.options).maze.rollouts)
    episodes = np.arange(spec.episodes * rollouts)
    finals = {}
    for name in env_names:
        env = make(name)

        def run(rows, env=env, name=name):
            final = player.play(env, keys[rows // rollouts], env.default_params,
                                [(name, int(r)) for r in rows])
            return {f: np.asarray(getattr(final, f)) for f in FIELDS}

        finals[name] = preempt.resumable_episodes(run, episodes, min(spec.chunk, len(episodes)),
                                                  spec.env_dir(name))
    pooled = {f: np.concatenate([x[f] for x in finals.values()]) for f in FIELDS}
    out = {"agent": player.name, **summary(pooled)}
    if len(finals) > 1:
        out["per_env"] = {name: summary(x) for name, x in finals.items()}
    return out


def _llm_game(env_name: str, env, params, options: Mapping):
    """:class:`~jaxcollab.agents.maze.llm.MazeGame` with ``maze.setting``, ``maze.rounds``,
    ``maze.samples``, ``maze.advance``, ``maze.tell_partner`` (and the calibrator fitted on
    ``maze.calibration_dir``: none when that run gave nothing to fit, :func:`_calibrator`)."""
    from jaxcollab.agents.maze.llm import MazeGame

    block = typed(MazeConfig, options).maze
    cal = _calibrator(env_name, block.calibration_dir, block.rounds)[0] \
        if block.setting == "verbalized_calibrated" else None
    return MazeGame(env, str(block.setting), block.rounds, block.samples, cal,
                    str(block.advance), block.tell_partner)


@functools.lru_cache(maxsize=4)
def _calibrator(env_name: str, calibration_dir: str | None, rounds: int):
    """``(calibrator or None, fit counts)`` fitted once on the ``calibration_dir`` run's
    transcript of ``env_name`` (:func:`~jaxcollab.agents.maze.llm.fit_conversation_calibrator`). A
    model that never reported a vector in every round leaves nothing to fit: the step then
    plays the raw vectors, says so once, and its results record it (``calibration``)."""
    from jaxcollab.agents.maze.llm import fit_conversation_calibrator
    from jaxcollab.llm.run import read_transcripts, transcript_path

    if not calibration_dir:
        raise ValueError("maze.setting='verbalized_calibrated' needs maze.calibration_dir=DIR, "
                         "a finished 'verbalized' run on other mazes (another seed)")
    cal, fit = fit_conversation_calibrator(
        read_transcripts(transcript_path(calibration_dir, env_name)), rounds)
    if cal is None:
        print(f"[maze] no calibrator: no maze step of {calibration_dir} reported a vector in "
              f"all {rounds} rounds ({fit['vectors']} vectors in {fit['records']} records); "
              "verbalized_calibrated passes the raw vectors on", flush=True)
    return cal, fit


def _outcome(state) -> tuple[bool, str]:
    ending = int(state.ending)
    return ending == SUCCESS, ENDINGS[ending]


def _data(state) -> dict:
    return {"labels": np.asarray(state.moves)[: int(state.n_moves)].tolist()}


def _llm_summary(records: list[dict], options: Mapping) -> dict:
    """``protocols.<maze.setting>``: the run's results by round in the layout of the trained
    transformers' maze runs (``rounds``, ``maze_success``, ``step_accuracy``, with 90 %
    bootstrap intervals, calibration loss and confidence histograms;
    :func:`jaxcollab.agents.maze.llm_results.by_round`). With ``maze.advance=path`` the team walked
    the whole path, so ``success_rate`` / ``maze_success``, ``step_accuracy`` and ``endings``
    are those of its last-round decisions (the first wrong one ends the maze), not the walk's;
    with ``team``, ``step_accuracy`` credits only the moves an agent chose, and
    ``fallback_moves`` counts the steps the documented fallback ``d`` played
    (:func:`~jaxcollab.agents.maze.llm_results.team_decisions`).
    ``verbalized_calibrated`` adds ``calibration.<env>``, the fit's counts (``fitted``,
    ``records``, ``vectors``, ``steps``; ``fit_conversation_calibrator``)."""
    from jaxcollab.agents.maze.llm_results import by_round, team_decisions

    block = typed(MazeConfig, options).maze
    setting, advance = str(block.setting), str(block.advance)
    n_rounds = 1 if setting == "solo" else int(block.rounds)
    curves = by_round(records, n_rounds, int(block.rollouts), advance)
    out = {"protocols": {setting: curves}}
    if setting == "verbalized_calibrated":  # what the held-out run gave to fit, per environment
        out["calibration"] = {name: _calibrator(name, block.calibration_dir, n_rounds)[1]
                              for name in sorted({r["env"] for r in records})}
    rate = curves["maze_success"][-1]
    if advance == "path" and rate is not None:
        n = curves["mazes"] * curves["rollouts"]
        out |= {"success_rate": rate, "maze_success": rate,
                "step_accuracy": curves["step_accuracy"][-1],
                "endings": {"running": 0, "success": round(rate * n),
                            "wrong_move": n - round(rate * n), "truncated": 0}}
    if advance == "team":  # the fallback move of a step no round decided is not the model's
        out |= team_decisions(records)
    return out


def _check(env_names: Sequence[str], options: Mapping) -> None:
    from jaxcollab.core.config import check_episode_count
    from jaxcollab.core.errors import ConfigValueError

    for name in env_names:
        if not isinstance(make(name), MazeEnv):
            raise ConfigValueError("env", name, "a maze environment")
    block = typed(MazeConfig, options).maze
    check_episode_count("episodes", options["episodes"], "maze.rollouts", block.rollouts)
    if block.tell_partner and block.setting != "full":
        raise ConfigValueError("maze.tell_partner", True, "false unless maze.setting=full "
                               f"(the setting is {str(block.setting)!r})")


def _collabgap_plots(results, out, names) -> None:
    from jaxcollab.agents.maze.plots import collabgap_plots  # on use: matplotlib

    collabgap_plots(results, out, names)


def _experiment(cfg, out, results, logger):
    """The round trainer's maze experiment (imported on use: it needs the trainer)."""
    from jaxcollab.agents.maze.experiment import Mazes

    return Mazes(cfg, out, results, logger)


#: The maze family's plug-in (:mod:`jaxcollab.core.family`).
def _tables():
    """The collaboration-gap paper's panels, :mod:`jaxcollab.agents.maze.paper` (imported on
    use, as the report's)."""
    from jaxcollab.agents.maze.paper import TABLES

    return TABLES


FAMILY = Family(
    name="maze",
    teams={"oracle": lambda options: scripted("oracle")},
    evaluate=evaluate,
    export=lambda name, n, seed, options: export_instances(name, n, seed),
    llm=LLMGame(game=_llm_game, outcome=_outcome, temperature=1.0,  # the paper's §6
                max_tokens=2048,  # §6: "reasoning (up to 2048 tokens)"
                roles=("agent0", "agent1"), data=_data, summary=_llm_summary,
                plots=_collabgap_plots),
    config=MazeConfig,
    schemas={"collabgap": Collabgap},
    check=_check,
    task=RoundTask(config=MazeTask, build=maze_task, experiment=_experiment, check=check_sampler,
                   run_keys=RUN_KEYS, scores=SCORES),
    example="maze/split-6x6",
    tables=_tables,
    draw=Draw(draw.pictures, draw.reel, draw.rounds_svg),
)
register_family(FAMILY)

__all__ = ["ENDINGS", "FAMILY", "evaluate", "maze_oracle", "scripted", "summary"]
