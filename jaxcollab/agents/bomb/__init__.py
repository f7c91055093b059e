"""Scripted bomb teams, their evaluation and the bomb family's plug-in (:data:`FAMILY`):
``python eval/rollout.py env=bomb/all agent=oracle``, played through the generic rollout
:func:`jaxcollab.core.rollout.rollout`.

Teams: ``oracle`` (privileged), ``random``, ``solo``, and the protocol teams ``onebit``,
``symbol``, ``counting`` (see :mod:`jaxcollab.agents.bomb.teams`); any other
:class:`~jaxcollab.core.family.Team` (an LLM team) plays through the same :func:`evaluate`
and :func:`~jaxcollab.agents.bomb.bank.rollout_bank`.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import jax
import numpy as np

from jaxcollab.agents.bomb import analysis
from jaxcollab.agents.bomb.bank import (
    PinnedInstances,
    PinnedParams,
    bank_protocol,
    check_solo,
    rollout_bank,
)
from jaxcollab.agents.bomb.config import BombConfig, BombHint
from jaxcollab.agents.bomb.sanzaru import PROTOCOL_RUBRIC, RUBRIC
from jaxcollab.agents.bomb.teams import PROTOCOL_TEAMS, TEAMS, team, team_policy
from jaxcollab.core.config import typed
from jaxcollab.core.family import (
    RL,
    Analysis,
    Bounds,
    Draw,
    Family,
    LLMGame,
    ScriptedTeam,
    Spec,
    Team,
)
from jaxcollab.core.registry import make, register_family
from jaxcollab.core.rollout import Policy, episode_keys, rollout
from jaxcollab.envs.bomb import export_instances
from jaxcollab.envs.bomb import tables as T
from jaxcollab.envs.bomb.bank import CYCLE, parse_turn_order
from jaxcollab.envs.bomb.env import BombEnv, ending_counts
from jaxcollab.envs.bomb.params import TURN_ORDERS, make_params, stack_params
from jaxcollab.envs.bomb.state import BombState
from jaxcollab.scale import preempt

CHUNK = Spec.chunk  # episodes per compiled batch
#: Message caps (speech bytes, gesture symbols) of an LLM team when ``bomb.speech_bytes`` /
#: ``bomb.gesture_symbols`` are null (ours): room for SANZARU Fig. 11's 138-gesture message and
#: a paragraph of speech. Other teams keep the env's caps (256, 32): their messages are short
#: and every cap byte is a token in each observation row.
LLM_CAPS = (1024, 256)


def message_caps(options: Mapping) -> tuple[int, int]:
    """``(speech bytes, gesture symbols)`` of a run: the bomb block's values, else
    :data:`LLM_CAPS` for ``agent=llm`` and the env's defaults for every other team."""
    block = typed(BombConfig, options).bomb
    default = LLM_CAPS if options.get("agent") == "llm" else (T.DEFAULT_SPEECH_BYTES,
                                                               T.DEFAULT_GESTURE_SYMBOLS)
    return (int(block.speech_bytes or default[0]), int(block.gesture_symbols or default[1]))


def turn_orders(episodes: int, turn_order="cycle") -> np.ndarray:
    """Index into :data:`~jaxcollab.envs.bomb.params.TURN_ORDERS` of episodes
    ``0..episodes-1``: ``e % 6`` under ``"cycle"``, else the one permutation given
    (:func:`~jaxcollab.envs.bomb.bank.parse_turn_order`)."""
    order = parse_turn_order(turn_order)
    if order == CYCLE:
        return np.arange(episodes) % len(TURN_ORDERS)
    return np.full(episodes, TURN_ORDERS.tolist().index(list(order)))


def _batch(env_names: Sequence[str], episodes: int, seed: int, turn_order="cycle"):
    """Keys, stacked params, variant index and episode index of ``episodes`` per variant:
    episode ``e`` has key ``episode_keys(seed, episodes)[e]`` and turn order
    :func:`turn_orders` ``[e]`` (every team and the exporter alike)."""
    variants = [T.variant(name) for name in env_names]
    n_orders = len(TURN_ORDERS)
    table = stack_params([make_params(v, order) for v in variants for order in TURN_ORDERS])
    idx = np.repeat(np.arange(len(variants)), episodes)
    ep = np.tile(np.arange(episodes), len(variants))
    params = jax.tree.map(lambda x: x[idx * n_orders + turn_orders(episodes, turn_order)[ep]],
                          table)
    keys = np.asarray(episode_keys(seed, episodes))[ep]
    return keys, params, idx, ep


def _summary(final: dict[str, np.ndarray], mask: np.ndarray) -> dict:
    n = int(mask.sum())
    ending = final["ending"][mask]
    return {
        "episodes": n,
        "success_rate": float((ending == T.DEFUSED).mean()),
        "endings": ending_counts(ending),
        "mean_rounds": float(final["rounds"][mask].mean()),
        "bounces": float(final["bounces"][mask].mean()),
        "rejected_acts": float(final["rejected"][mask].mean()),
        "never_acted": int((final["acts"][mask] == 0).sum()),
        "wrong_round": int(final["wrong_round"][mask].sum()),
    }


def rounds_used(state: BombState) -> jax.Array:
    """Rounds begun by the end of each episode (a round ended mid-way counts)."""
    return state.round + (state.turn > 0)


@dataclasses.dataclass(frozen=True)
class _Unpinned:
    """A privileged ``act`` reading the variant's params inside the bank's pinned ones; equal
    by value (its ``act``), so every bank run reuses one compiled rollout."""

    act: Callable

    def __call__(self, key, obs, policy_state, state, params):
        return self.act(key, obs, policy_state, state, params.params)


def _policy(name: str, env) -> Policy:
    """Team ``name``'s policy for ``env`` (a privileged one reads the variant's params, not the
    bank's pinned ones, on :class:`~jaxcollab.agents.bomb.bank.PinnedInstances`)."""
    policy = team_policy(name, env.layout)
    if policy.privileged and isinstance(env, PinnedInstances):
        policy = dataclasses.replace(policy, act=_Unpinned(policy.act))
    return policy


def scripted(name: str) -> ScriptedTeam:
    """Team ``name`` as a :class:`~jaxcollab.core.family.Team`.

    Raises:
        KeyError: unknown team; the message lists the valid ones.
    """
    team(name)
    return ScriptedTeam(name, functools.partial(_policy, name))


def play(env: BombEnv, agent: str, keys: jax.Array, params) -> BombState:
    """Play one episode per key ``[B]`` (params ``[B]``, any variants with ``env``'s caps) with
    team ``agent`` to its end; the final states. A while-loop over turns stops once every
    episode has ended (:func:`~jaxcollab.core.rollout.rollout` with ``until_done``)."""
    return rollout(env, team_policy(agent, env.layout), keys, params, batched_params=True,
                   max_steps=env.max_episode_steps, until_done=True).state


def evaluate(env_names: Sequence[str], agent: str | Team, episodes: int, seed: int,
             chunk: int = CHUNK, save_dir: str | Path | None = None,
             turn_order="cycle", caps: tuple[int, int] | None = None) -> dict:
    """Play ``episodes`` episodes of each variant in ``env_names`` with team ``agent`` (a
    team name, or any :class:`~jaxcollab.core.family.Team`, e.g. an LLM team).

    Episode ``e`` of every variant has the key ``episode_keys(seed, episodes)[e]`` (the
    exporter's instance ``e``) and turn order ``TURN_ORDERS[e % 6]`` (``turn_order="cycle"``)
    or the one permutation ``turn_order`` names, under the message ``caps`` (speech bytes,
    gesture symbols; None: the env's defaults).
    Episodes are played ``chunk`` at a time (one compiled batch); with ``save_dir`` each
    finished chunk is kept there, a SIGTERM / SIGINT stops after the current chunk, and a rerun
    loads the finished chunks and plays the rest
    (:func:`jaxcollab.scale.preempt.resumable_episodes`), with the same results.

    Returns:
        ``agent``, ``episodes`` (total), ``success_rate`` (fraction defused), ``endings``
        (counts of ``defused`` / ``wrong_action`` / ``timed_out``), ``mean_rounds`` (rounds
        begun per episode), ``bounces`` (mean dead-channel calls per episode: bounced,
        or a gesture to Blind delivered as blanks),
        ``rejected_acts`` (mean act attempts by Deaf or Mute per episode), ``never_acted``
        (episodes where Blind never tried to act), ``wrong_round`` (episodes ended by a cut that
        matched an earlier round's light), ``episodes_per_second`` (wall time of the chunks
        played in this call after a compiling warm-up; None if all were loaded or the team is
        not scripted, e.g. an LLM team), ``devices``,
        and ``variants.<name>`` with the same per-variant keys.

    Raises:
        KeyError: unknown team or variant (lists the valid ones).
        ValueError: ``episodes < 1`` or ``chunk < 1``.
        jaxcollab.scale.preempt.Preempted: stopped by a signal (finished chunks saved).
    """
    if episodes < 1:
        raise ValueError(f"episodes must be positive, got {episodes!r}")
    player = scripted(agent) if isinstance(agent, str) else agent
    env = make(env_names[0]) if caps is None else BombEnv(env_names[0], *caps)
    keys, params, idx, ep = _batch(env_names, episodes, seed, turn_order)
    total = len(idx)

    def run(rows: np.ndarray) -> dict:
        ids = [(env_names[idx[r]], int(ep[r])) for r in rows]
        state = player.play(env, keys[rows], jax.tree.map(lambda x: x[rows], params), ids,
                            batched_params=True)
        return {"ending": state.ending, "rounds": np.asarray(rounds_used(state)),
                "bounces": state.bounces, "rejected": state.rejected, "acts": state.acts,
                "wrong_round": state.wrong_round}

    timer = preempt.ChunkTimer(run) if isinstance(player, ScriptedTeam) else run
    final = preempt.resumable_episodes(timer, np.arange(total), min(chunk, total), save_dir)
    rate = timer.episodes_per_second if isinstance(player, ScriptedTeam) else None
    out = {"agent": player.name, **_summary(final, np.ones(total, bool)),
           "episodes_per_second": rate,
           "devices": [str(d) for d in jax.devices()]}
    out["variants"] = {name: _summary(final, idx == i) for i, name in enumerate(env_names)}
    return out


def _evaluate(env_names: Sequence[str], player: Team, spec: Spec) -> dict:
    """The family's evaluation: :func:`evaluate`, or with ``bank=true`` the bank protocol
    (:func:`~jaxcollab.agents.bomb.bank.rollout_bank`; ``solo`` a team name or the results
    dict of an earlier bank run)."""
    o = typed(BombConfig, spec.options)
    if o.bank:
        solo = o.solo
        if solo is not None and solo not in TEAMS:
            solo = json.loads(Path(solo).read_text())  # an earlier bank run's results
        return rollout_bank(env_names, player, o.repeats, turn_order=o.turn_order,
                            seed=spec.seed, solo=solo, chunk=spec.chunk, save_dir=spec.save_dir,
                            team_of=scripted, caps=message_caps(spec.options))
    return evaluate(env_names, player, spec.episodes, spec.seed, spec.chunk, spec.save_dir,
                    o.turn_order, message_caps(spec.options))


def _check(env_names: Sequence[str], options: Mapping) -> None:
    from jaxcollab.core.errors import ConfigValueError

    o = typed(BombConfig, options)
    try:
        parse_turn_order(o.turn_order)
    except ValueError as e:
        raise ConfigValueError("turn_order", o.turn_order,
                               "'cycle' or a permutation of deaf, mute, blind") from e
    _check_solo(env_names, options)
    if o.bomb.hint not in tuple(BombHint):
        raise ConfigValueError("bomb.hint", o.bomb.hint, "one of none, weak, strong, playbook")
    for key, cap in zip(("speech_bytes", "gesture_symbols"), message_caps(options),
                        strict=True):
        if not 4 <= cap <= 4096 or cap % 4:
            raise ConfigValueError(f"bomb.{key}", cap, "a multiple of 4 in 4..4096 (messages "
                                   "are packed four bytes / symbols per word)")


def _check_solo(env_names: Sequence[str], options: Mapping) -> None:
    """``solo`` (bank runs only): a team, or an earlier bank run's results.json under the same
    protocol; ``repeats`` likewise belongs to the bank protocol."""
    from jaxcollab.core.errors import ConfigValueError

    o, defaults = typed(BombConfig, options), BombConfig()
    solo = o.solo
    for key in ("solo", "repeats"):
        default = getattr(defaults, key)
        if not o.bank and getattr(o, key) != default:
            raise ConfigValueError(key, getattr(o, key), f"{default or 'null'} without "
                                   "bank=true (it belongs to the bank protocol)")
    if solo is None or solo in TEAMS:
        return
    expected = f"a team ({', '.join(TEAMS)}) or an earlier bank run's results.json"
    try:
        results = json.loads(Path(solo).read_text())
    except FileNotFoundError:
        raise ConfigValueError("solo", solo, f"{expected}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ConfigValueError("solo", solo, f"{expected}: not a JSON file ({e})") from None
    protocol = bank_protocol(env_names, o.repeats, turn_order=o.turn_order,
                             seed=options["seed"])
    try:
        check_solo(results, protocol)
    except ValueError as e:
        raise ConfigValueError("solo", solo, f"{expected}: {e}") from None


def _llm_game(env_name: str, env, params, options: Mapping):
    """:class:`~jaxcollab.agents.bomb.llm.BombGame` of one episode: the variant's env under
    the run's message caps, the episode's turn order (its params), ``bomb.hint``,
    ``bomb.solo_player``
    and ``llm.tools``."""
    from jaxcollab.agents.bomb.llm import BombGame

    params = params.params if isinstance(params, PinnedParams) else params
    block = typed(BombConfig, options).bomb
    order = tuple(int(r) for r in np.asarray(params.turn_order))
    return BombGame(BombEnv(env_name, *message_caps(options)), block.hint, order,
                    block.solo_player, options["llm"]["tools"] == "native")


def _communication(record: dict) -> tuple[int, int]:
    """``(turns with a speak or gesture call, turns played)`` of one LLM transcript record
    (ours: GPTNT Table 7's communication rate counted per bomb turn)."""
    calls = [turn["action"] if isinstance(turn["action"], list) else [turn["action"]]
             for turns in record["agents"].values() for turn in turns if turn["ok"]]
    talked = sum(any(isinstance(c, dict) and c.get("call") in ("speak", "gesture") for c in t)
                 for t in calls)
    return talked, max(int(record["steps"]), 1)


def _outcome(state) -> tuple[bool, str]:
    ending = T.ENDING_NAMES[int(state.ending)]
    return ending == "defused", ending


def _rl_view(env_name: str, symbols: int, alphabet: int, rulesets: str):
    """:func:`~jaxcollab.agents.bomb.rl_view.make_view` (imported on use: it loads
    :mod:`jaxcollab.marl`).

    Raises:
        ValueError: ``rulesets`` other than ``"vanilla"`` (a bomb's manual is fixed, SANZARU
            §3)."""
    from jaxcollab.agents.bomb.rl_view import make_view

    if rulesets != "vanilla":
        raise ValueError(f"rulesets={rulesets!r}: the bomb families have one manual (vanilla)")
    return make_view(env_name, symbols, alphabet)


def _rl_protocol(policy: Policy, view, episodes: int, seed: int) -> dict:
    """:func:`~jaxcollab.agents.bomb.rl_protocol.protocol_tables` (imported on use)."""
    from jaxcollab.agents.bomb.rl_protocol import protocol_tables

    return protocol_tables(policy, view, episodes, seed)


def _rl_protocol_plot(tables: dict, path: Path) -> None:
    """:func:`~jaxcollab.agents.bomb.plots.protocol_plot` (imported on use: matplotlib)."""
    from jaxcollab.agents.bomb.plots import protocol_plot

    protocol_plot(tables, path)


def _pictures(env, state, params):
    """:func:`jaxcollab.agents.bomb.draw.pictures` (imported on use)."""
    from jaxcollab.agents.bomb.draw import pictures

    return pictures(env, state, params)


def _reel(results, run_dir, n):
    """:func:`jaxcollab.agents.bomb.draw.reel` (imported on use)."""
    from jaxcollab.agents.bomb.draw import reel

    return reel(results, run_dir, n)


def _report():
    """The report sections of :mod:`jaxcollab.agents.bomb.report` (imported on use: the
    report's modules)."""
    from jaxcollab.agents.bomb.report import SECTIONS

    return SECTIONS


def _tables():
    """SANZARU's tables, :mod:`jaxcollab.agents.bomb.paper` (imported on use, as the report's)."""
    from jaxcollab.agents.bomb.paper import TABLES

    return TABLES


#: The bomb family's plug-in (:mod:`jaxcollab.core.family`).
FAMILY = Family(
    name="bomb",
    teams={name: functools.partial(lambda name, options: scripted(name), name)
           for name in TEAMS},
    evaluate=_evaluate,
    export=lambda name, n, seed, options: export_instances(name, n, seed),
    # SANZARU gives neither: temperature 0.6 as GPTNT app. H; the token budget is ours, room
    # for the 138-gesture message of its Fig. 11 and the thoughts around it
    llm=LLMGame(game=_llm_game, outcome=_outcome, temperature=0.6, max_tokens=2048,
                roles=T.ROLE_NAMES, communication=_communication),
    config=BombConfig,
    check=_check,
    analysis=Analysis(analysis.analyze, judge=RUBRIC,  # SANZARU Tables 5, 6
                      questions={"protocol": PROTOCOL_RUBRIC}),  # Figs. 7-12
    bounds=Bounds(analysis.bounds_variant, analysis.bounds_team),
    rl=RL(_rl_view, _rl_protocol, _rl_protocol_plot),
    example="bomb/base-1",
    report=_report,
    tables=_tables,
    draw=Draw(_pictures, _reel),
)
register_family(FAMILY)

__all__ = ["FAMILY", "LLM_CAPS", "PROTOCOL_TEAMS", "TEAMS", "evaluate", "message_caps", "play",
           "rollout_bank", "rounds_used", "scripted", "team", "team_policy", "turn_orders"]
