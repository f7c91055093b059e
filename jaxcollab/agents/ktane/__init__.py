"""Scripted Keep-Talking teams, their rollouts (``eval/rollout.py env=ktane/...``) and the
family's plug-in (:data:`FAMILY`), played through the generic rollout
:func:`jaxcollab.core.rollout.rollout`; any :class:`~jaxcollab.core.family.Team` (an LLM team)
plays through the same :func:`evaluate`."""

from __future__ import annotations

import bisect
import functools
from collections.abc import Mapping, Sequence
from pathlib import Path

import jax
import numpy as np

from jaxcollab.agents.ktane import analysis, draw
from jaxcollab.agents.ktane.config import KtaneConfig, RulesetConfig
from jaxcollab.agents.ktane.export import export_instances
from jaxcollab.agents.ktane.policies import TEAMS, oracle_team, random_team, team
from jaxcollab.core.config import typed
from jaxcollab.core.family import (
    RL,
    Analysis,
    Draw,
    Family,
    LLMGame,
    ScriptedTeam,
    Spec,
    Team,
)
from jaxcollab.core.registry import make, register_family
from jaxcollab.core.rollout import episode_keys, rollout
from jaxcollab.envs.ktane import KtaneEnv
from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane.ruleset import RULESETS, Ruleset, make_ruleset, ruleset_info
from jaxcollab.scale import preempt

__all__ = ["FAMILY", "RULESETS", "TEAMS", "export_instances", "oracle_team", "play",
           "random_team", "evaluate", "run_env", "scripted", "team"]


def play(env: KtaneEnv, agent: str, keys: jax.Array, rules: Ruleset | None = None):
    """Play one episode per key ``[B]`` with team ``agent`` to its end under ``rules``
    (default: vanilla); the final states. Rulesets are runtime params: a new one reuses the
    compiled rollout, except for a team whose Expert is handed the manual (``talking``).

    Uses :func:`~jaxcollab.core.rollout.rollout` with ``until_done`` (a while-loop over turns
    that stops once every episode has an outcome, at most ``env.max_episode_steps``).
    """
    params = env.default_params if rules is None else env.ruleset_params(rules)
    return rollout(env, team(agent, env, rules), keys, params, max_steps=env.max_episode_steps,
                   until_done=True).state


#: The final-state fields the summary reads (kept per episode, and saved per chunk).
FIELDS = ("outcome", "solved", "turn", "n_messages", "strikes", "time_left_cs", "n_actions")


def _summary(final: dict, episodes_per_second: float | None) -> dict:
    """GPTNT's metrics of a batch of final states (:data:`FIELDS` arrays; §4 and App. E):
    success, strikes, outcome counts, time left, modules solved (partial credit) and the
    communication rate."""
    outcome = final["outcome"]
    n = len(outcome)
    solved = final["solved"]
    cycles = np.maximum((final["turn"] + 1) // 2, 1)  # Defuser cycles played
    messages = final["n_messages"]
    return {
        "episodes": n,
        "success_rate": float(np.mean(outcome == T.SOLVED)),
        "mean_strikes": float(np.mean(final["strikes"])),
        "outcomes": {name: int(np.sum(outcome == i)) for i, name in enumerate(T.OUTCOMES)},
        "mean_time_left_s": float(np.mean(np.maximum(final["time_left_cs"], 0)) / 100),
        "mean_modules_solved": float(np.mean(solved.sum(1))),
        "modules_solved_fraction": float(np.mean(solved)),
        "mean_defuser_actions": float(np.mean(final["n_actions"])),
        "messages_per_defuser_cycle": float(np.mean(messages.sum(1) / cycles)),
        "messages_per_module": float(np.mean(messages.sum(1)) / solved.shape[1]),
        "mean_messages": [float(x) for x in messages.mean(0)],
        "episodes_per_second": episodes_per_second,
    }


def scripted(name: str, rules: Ruleset | None = None) -> ScriptedTeam:
    """Team ``name`` under ``rules`` as a :class:`~jaxcollab.core.family.Team`.

    Raises:
        ValueError: unknown name; the message lists the valid ones.
    """
    if name not in TEAMS:
        raise ValueError(f"unknown ktane agent {name!r}; valid: {', '.join(TEAMS)}")
    return ScriptedTeam(name, functools.partial(_policy, name, rules))


def _policy(name: str, rules: Ruleset | None, env: KtaneEnv):
    return team(name, env, rules)


def run_env(env: KtaneEnv, agent: str | Team, episodes: int, seed: int, chunk: int = 16_384,
            save_dir: str | Path | None = None, rules: Ruleset | None = None,
            name: str | None = None) -> dict:
    """Roll out ``agent`` (a team name or a :class:`~jaxcollab.core.family.Team`) on ``env``
    under ``rules`` (default vanilla) for ``episodes`` episodes (keys
    :func:`~jaxcollab.core.rollout.episode_keys`), ``chunk`` at a time; ``save_dir`` keeps
    finished chunks so a run stopped by SIGTERM / SIGINT resumes
    (:func:`jaxcollab.scale.preempt.resumable_episodes`). A scripted team's first chunk played
    compiles and is played twice, untimed then timed (``episodes_per_second``: played chunks
    only; None when every chunk was loaded or the team is not scripted). ``name``: the
    environment's registered name (episode ids of teams that keep transcripts)."""
    player = scripted(agent, rules) if isinstance(agent, str) else agent
    params = env.default_params if rules is None else env.ruleset_params(rules)
    keys = np.asarray(episode_keys(seed, episodes))
    label = name or env.name

    def run(rows: np.ndarray) -> dict:
        final = player.play(env, keys[rows], params, [(label, int(r)) for r in rows])
        return {f: np.asarray(getattr(final, f)) for f in FIELDS}

    timed = isinstance(player, ScriptedTeam)
    timer = preempt.ChunkTimer(run) if timed else run
    final = preempt.resumable_episodes(timer, np.arange(episodes), min(chunk, episodes),
                                       save_dir)
    return _summary(final, timer.episodes_per_second if timed else None)


def _overall_rate(runs: list[dict]) -> float | None:
    """Episodes per second over the environments whose chunks were played (None if none)."""
    played = [(r["episodes"], r["episodes_per_second"]) for r in runs
              if r["episodes_per_second"] is not None]
    return sum(n for n, _ in played) / sum(n / rate for n, rate in played) if played else None


def evaluate(env_names: Sequence[str], agent: str | Team, episodes: int, seed: int,
             chunk: int = 16_384,
             save_dir: str | Path | None = None, ruleset: str = "vanilla",
             ruleset_seed: int = 0) -> dict:
    """Roll out a scripted team on each ``ktane/...`` environment under one ruleset.

    Args:
        env_names: registered Keep-Talking environment names (one or several).
        agent: ``oracle``, ``random`` or ``talking`` (see :mod:`jaxcollab.agents.ktane.policies`),
            or any :class:`~jaxcollab.core.family.Team` (e.g. an LLM team).
        episodes: episodes per environment; seed: base seed (episode ``i`` of each env uses
            ``episode_keys(seed, episodes)[i]``, as the exporter does).
        chunk, save_dir: episodes per compiled batch, and where each environment's finished
            chunks are kept (``save_dir/<env name with / as ->``) so that a run stopped by
            SIGTERM / SIGINT resumes (:func:`run_env`); None keeps nothing.
        ruleset, ruleset_seed: ``vanilla`` or ``random`` (every rule table redrawn from
            ``ruleset_seed``; :func:`~jaxcollab.envs.ktane.ruleset.make_ruleset`).

    Returns:
        ``agent``, ``seed``, ``ruleset`` (``name`` and ``seed``, null for vanilla),
        ``episodes`` (total), ``success_rate``, ``mean_strikes``,
        ``outcomes`` (counts of running / solved / strikeout / timeout), ``mean_time_left_s``
        (bomb seconds left, 0 on timeout), ``mean_modules_solved`` and
        ``modules_solved_fraction`` (partial credit), ``mean_defuser_actions``,
        ``messages_per_defuser_cycle`` (both roles' messages / Defuser cycles: GPTNT's
        communication rate), ``messages_per_module`` (both roles' messages per module slot),
        ``episodes_per_second`` (episodes played in this call / their summed run time,
        compile excluded; None if every chunk was loaded) and ``per_module`` (name → the same
        keys plus ``mean_messages`` per role, when several environments are given).
        Where fixed missions are played (seeded, e.g. ``ktane/missions/single`` or
        ``ktane/missions/multi``): ``pass_at_1``, GPTNT's metric (§5, App. I), the mean over
        those missions of each one's success rate (each mission is one fixed bomb: with one
        episode per mission, the fraction solved at the first attempt; with ``n``, the
        unbiased estimate ``c / n`` per mission), ``pass_at_1_missions`` (how many), and
        ``pass_at_1_by_module`` (single-module missions grouped by module type, as GPTNT's
        per-module tables).

    Raises:
        ValueError: unknown agent, ruleset or a bad ruleset seed, or a non-ktane environment;
            KeyError: unknown name.
    """
    rules = make_ruleset(ruleset, ruleset_seed)
    player = scripted(agent, rules) if isinstance(agent, str) else agent
    runs, missions = {}, {}
    for name in env_names:
        env = make(name)
        if not isinstance(env, KtaneEnv):
            raise ValueError(f"{name!r} is not a ktane environment")
        if env.mission.seed is not None:
            missions[name] = env.mission.modules
        runs[name] = run_env(env, player, episodes, seed, chunk,
                             None if save_dir is None else Path(save_dir) / name.replace("/", "-"),
                             rules, name)
    n = sum(r["episodes"] for r in runs.values())
    mean = lambda key: sum(r[key] * r["episodes"] for r in runs.values()) / n  # noqa: E731
    result = {
        "agent": player.name,
        "seed": seed,
        "ruleset": ruleset_info(rules),
        "episodes": n,
        "success_rate": mean("success_rate"),
        "mean_strikes": mean("mean_strikes"),
        "outcomes": {k: sum(r["outcomes"][k] for r in runs.values()) for k in T.OUTCOMES},
        "mean_time_left_s": mean("mean_time_left_s"),
        "mean_modules_solved": mean("mean_modules_solved"),
        "modules_solved_fraction": mean("modules_solved_fraction"),
        "mean_defuser_actions": mean("mean_defuser_actions"),
        "messages_per_defuser_cycle": mean("messages_per_defuser_cycle"),
        "messages_per_module": mean("messages_per_module"),
        "episodes_per_second": _overall_rate(list(runs.values())),
    }
    if missions:
        result |= _pass_at_1({n: runs[n]["success_rate"] for n in missions}, missions)
    if len(runs) > 1:
        result["per_module"] = runs
    return result


def _pass_at_1(success: dict[str, float], modules: dict[str, tuple[str, ...]]) -> dict:
    """GPTNT's pass@1 over fixed missions (:func:`evaluate`): ``success`` mission → success
    rate, ``modules`` mission → its module types."""
    by_module: dict[str, list[float]] = {}
    for name, mods in modules.items():
        if len(mods) == 1:
            by_module.setdefault(mods[0], []).append(success[name])
    return {"pass_at_1": float(np.mean(list(success.values()))),
            "pass_at_1_missions": len(success),
            "pass_at_1_by_module": {m: float(np.mean(v)) for m, v in sorted(by_module.items())}}


def _ruleset_keys(options: Mapping) -> tuple[str, int]:
    """``(ruleset, ruleset_seed)`` of a run's (or an export's) config."""
    o = typed(RulesetConfig, options)
    return str(o.ruleset), o.ruleset_seed


def _rules(options: Mapping) -> Ruleset:
    return make_ruleset(*_ruleset_keys(options))


def _evaluate(env_names: Sequence[str], player: Team, spec: Spec) -> dict:
    return evaluate(env_names, player, spec.episodes, spec.seed, spec.chunk, spec.save_dir,
                    *_ruleset_keys(spec.options))


def _llm_game(env_name: str, env, params, options: Mapping):
    """:class:`~jaxcollab.agents.ktane.llm.KtaneGame` under the run's ruleset, ``ktane.mode``,
    ``ktane.reflection``, ``ktane.view``, ``ktane.solo``, ``ktane.glyphs`` and ``ktane.hud``."""
    from jaxcollab.agents.ktane.llm import KtaneGame

    block = typed(KtaneConfig, options).ktane
    return KtaneGame(env, block.mode, block.reflection, _rules(options), block.view, block.solo,
                     block.glyphs, block.hud)


def _llm_summary(records: list[dict], options: Mapping) -> dict:
    """Counted by the host from the message queues: ``messages_sent`` (messages each player
    sent, per episode) and ``messages_per_defuser_cycle`` (every message either player queued
    / the Defuser's decision cycles, per episode: in async mode an Expert may send several
    between two Defuser cycles, which the environment records as one per step, and a Defuser
    cycle may span four steps, not two; in sync mode both counts agree), and
    ``mean_defuser_actions`` (the Defuser's cycles that sent no message, per episode: the
    environment's count would add each async cycle's wait while it thought)."""
    if not records:
        return {}
    sent = [r["data"].get("messages_sent", {}) for r in records]
    players = sorted({p for s in sent for p in s})
    cycles = [len(r["agents"].get("defuser", [])) for r in records]
    return {"messages_sent": {p: float(np.mean([s.get(p, 0) for s in sent])) for p in players},
            "messages_per_defuser_cycle": float(np.mean([sum(s.values()) / max(c, 1)
                                                         for s, c in zip(sent, cycles)])),
            "mean_defuser_actions": float(np.mean([c - s.get("defuser", 0)
                                                   for s, c in zip(sent, cycles)]))}


def _outcome(state) -> tuple[bool, str]:
    outcome = T.OUTCOMES[int(state.outcome)]
    return outcome == "solved", outcome


def _communication(record: dict) -> tuple[int, int]:
    """``(Defuser cycles with a message from either player, Defuser cycles)`` of one LLM
    transcript record: GPTNT Table 7's "% game steps with messages", a game step being one
    Defuser decision cycle and the Expert's turns until the next (sync: its turn and the
    Expert's after it; async: also the steps of its wait while it thought)."""
    starts = sorted(int(t["step"]) for t in record["agents"].get("defuser", []))
    sent = {max(bisect.bisect_right(starts, int(turn["step"])) - 1, 0)
            for turns in record["agents"].values() for turn in turns
            if turn["ok"] and isinstance(turn["action"], dict)
            and (turn["action"].get("result") or {}).get("kind") == "send_message"}
    return len(sent), max(len(starts), 1)


def _check(env_names: Sequence[str], options: Mapping) -> None:
    from jaxcollab.agents.ktane.perception import GLYPHS, HUDS
    from jaxcollab.core.errors import ConfigValueError

    block = typed(KtaneConfig, options).ktane
    for key, valid in (("mode", ("sync", "async")), ("view", ("gptnt", "full")),
                       ("solo", (None, "with_manual", "no_manual")), ("glyphs", GLYPHS),
                       ("hud", HUDS)):
        if getattr(block, key) not in valid:
            raise ConfigValueError(f"ktane.{key}", getattr(block, key),
                                   " or ".join("null" if v is None else v for v in valid))
    for name in env_names:
        if not isinstance(make(name), KtaneEnv):
            raise ConfigValueError("env", name, "a Keep-Talking environment")


def _rl_view(env_name: str, symbols: int, alphabet: int, rulesets: str):
    """:func:`~jaxcollab.agents.ktane.rl_view.make_ktane_view` (imported on use: it loads
    :mod:`jaxcollab.marl`)."""
    from jaxcollab.agents.ktane.rl_view import make_ktane_view

    return make_ktane_view(env_name, symbols, alphabet, rulesets)


def _rl_protocol(policy, view, episodes: int, seed: int) -> dict:
    """:func:`~jaxcollab.agents.ktane.rl_protocol.message_information` (imported on use)."""
    from jaxcollab.agents.ktane.rl_protocol import message_information

    return message_information(policy, view, episodes, seed)


def _rl_protocol_plot(tables: dict, path) -> None:
    """:func:`~jaxcollab.agents.ktane.plots.protocol_plot` (imported on use: matplotlib)."""
    from jaxcollab.agents.ktane.plots import protocol_plot

    protocol_plot(tables, path)


def _report():
    """The report sections of :mod:`jaxcollab.agents.ktane.report` (imported on use: the
    report's modules)."""
    from jaxcollab.agents.ktane.report import SECTIONS

    return SECTIONS


def _tables():
    """GPTNT's tables, :mod:`jaxcollab.agents.ktane.paper` (imported on use, as the report's)."""
    from jaxcollab.agents.ktane.paper import TABLES

    return TABLES


#: The Keep-Talking family's plug-in (:mod:`jaxcollab.core.family`).
FAMILY = Family(
    name="ktane",
    teams={name: functools.partial(lambda name, options: scripted(name, _rules(options)), name)
           for name in TEAMS},
    evaluate=_evaluate,
    export=lambda name, n, seed, options: export_instances(
        name, n, seed, *_ruleset_keys(options)),
    # GPTNT: temperature 0.6 (app. H), a 1,000-token reply budget and thinking off (§4)
    llm=LLMGame(game=_llm_game, outcome=_outcome, temperature=0.6, max_tokens=1000,
                thinking_budget=0, roles=("defuser", "expert"), communication=_communication,
                summary=_llm_summary),
    config=KtaneConfig,
    export_config=RulesetConfig,
    check=_check,
    analysis=Analysis(analysis.analyze),  # GPTNT §8, Table 7
    rl=RL(_rl_view, _rl_protocol, _rl_protocol_plot),
    example="ktane/wires",
    report=_report,
    tables=_tables,
    draw=Draw(draw.pictures, draw.reel),
)
register_family(FAMILY)
