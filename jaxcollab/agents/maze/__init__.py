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

from jaxcollab.agents.maze.task import check_sampler, maze_task
from jaxcollab.core.family import Family, LLMGame, RoundTask, ScriptedTeam, Spec, Team
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
    rollouts = int(spec.options.get("maze", {}).get("rollouts", 1))
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
    ``maze.calibration_dir``)."""
    from jaxcollab.agents.maze.llm import MazeGame

    block = options.get("maze", {})
    cal = _calibrator(env_name, block.get("calibration_dir"), block.get("rounds", 4)) \
        if block.get("setting") == "verbalized_calibrated" else None
    return MazeGame(env, block.get("setting", "action"), block.get("rounds", 4),
                    block.get("samples", 5), cal, block.get("advance", "team"),
                    block.get("tell_partner", False))


@functools.lru_cache(maxsize=4)
def _calibrator(env_name: str, calibration_dir: str | None, rounds: int):
    from jaxcollab.agents.maze.llm import fit_conversation_calibrator
    from jaxcollab.llm.run import read_transcripts, transcript_path

    if not calibration_dir:
        raise ValueError("maze.setting='verbalized_calibrated' needs maze.calibration_dir=DIR, "
                         "a finished 'verbalized' run on other mazes (another seed)")
    return fit_conversation_calibrator(
        read_transcripts(transcript_path(calibration_dir, env_name)), rounds)


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
    are those of its last-round decisions (the first wrong one ends the maze), not the walk's."""
    from jaxcollab.agents.maze.llm_results import by_round

    block = options.get("maze", {})
    setting, advance = block.get("setting", "action"), block.get("advance", "team")
    n_rounds = 1 if setting == "solo" else int(block.get("rounds", 4))
    curves = by_round(records, n_rounds, int(block.get("rollouts", 1)), advance)
    out = {"protocols": {setting: curves}}
    rate = curves["maze_success"][-1]
    if advance == "path" and rate is not None:
        n = curves["mazes"] * curves["rollouts"]
        out |= {"success_rate": rate, "maze_success": rate,
                "step_accuracy": curves["step_accuracy"][-1],
                "endings": {"running": 0, "success": round(rate * n),
                            "wrong_move": n - round(rate * n), "truncated": 0}}
    return out


def _check(env_names: Sequence[str], options: Mapping) -> None:
    from jaxcollab.io.schema import ConfigValueError, check_episode_count

    for name in env_names:
        if not isinstance(make(name), MazeEnv):
            raise ConfigValueError("env", name, "a maze environment")
    block = options.get("maze", {})
    check_episode_count("episodes", options.get("episodes", 1), "maze.rollouts",
                        block.get("rollouts", 1))
    if block.get("tell_partner") and block.get("setting") != "full":
        raise ConfigValueError("maze.tell_partner", True, "false unless maze.setting=full "
                               f"(the setting is {block.get('setting')!r})")


#: The maze family's plug-in (:mod:`jaxcollab.core.family`).
FAMILY = Family(
    name="maze",
    teams={"oracle": lambda options: scripted("oracle")},
    evaluate=evaluate,
    export=lambda name, n, seed, options: export_instances(name, n, seed),
    llm=LLMGame(game=_llm_game, outcome=_outcome, temperature=1.0,  # the paper's §6
                max_tokens=2048,  # §6: "reasoning (up to 2048 tokens)"
                roles=("agent0", "agent1"), data=_data, summary=_llm_summary),
    config={"maze": {"setting": "action", "rounds": 4, "samples": 5, "calibration_dir": None,
                     "advance": "team", "rollouts": 1, "tell_partner": False}},
    check=_check,
    task=RoundTask(maze_task, check_sampler, experiment="mazes"),
    example="maze/split-6x6",
)
register_family(FAMILY)

__all__ = ["ENDINGS", "FAMILY", "evaluate", "maze_oracle", "scripted", "summary"]
