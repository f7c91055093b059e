"""The bomb family's trace analysis (``eval/analyze.py``; SANZARU Table 6's deterministic flags
per lost episode, and the judge's rubric, :mod:`jaxcollab.agents.bomb.sanzaru`).

A scripted team's episodes are replayed by the team itself
(:func:`~jaxcollab.agents.bomb.traces.traced`: the rollout's batch, or with ``bank=true`` the
bank protocol's pinned instances, turn orders and episode keys); an LLM team's from its
transcripts:
each agent turn's recorded calls are decoded as the game decoded them
(:func:`jaxcollab.agents.bomb.llm.decode_calls`) and replayed on the run's episode keys and params
(:func:`jaxcollab.analysis.replay.replay`), so the environment's own counters give the flags.
Either replay must end every episode as the run did, else the analysis refuses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import jax
import numpy as np

from jaxcollab.agents.bomb.config import BombConfig
from jaxcollab.agents.bomb.protocols import FAMILIES, episode_families, summary
from jaxcollab.agents.bomb.traces import labelled, traced
from jaxcollab.analysis.replay import replay, rollout_config
from jaxcollab.core.config import typed
from jaxcollab.core.errors import ConfigValueError
from jaxcollab.core.registry import resolve
from jaxcollab.envs.bomb import tables as T
from jaxcollab.envs.bomb.bounds import order_name
from jaxcollab.envs.bomb.env import BombEnv
from jaxcollab.envs.bomb.flags import FLAGS, episode_flags, fact_owners, shares
from jaxcollab.envs.bomb.params import TURN_ORDERS


def _config(results: Mapping, run_dir: Path) -> dict:
    from jaxcollab.agents.bomb import TEAMS

    return rollout_config(results, run_dir, TEAMS)


def _turns(record: dict) -> dict[int, tuple[str, dict]]:
    """Step -> (agent name, its last turn record of that step: a refused one is followed by
    its rephrased turn) of one transcript record."""
    out: dict[int, tuple[str, dict]] = {}
    for name, turns in record["agents"].items():
        for t in turns:
            out[int(t["step"])] = (name, t)
    return out


def _actions(env, record: dict):
    """The joint actions ``[max_episode_steps]`` the LLM team played in one transcript record
    (no-ops where no agent acted), decoded as :class:`~jaxcollab.agents.bomb.llm.BombGame` did."""
    from jaxcollab.agents.bomb.llm import decode_calls
    from jaxcollab.llm.parse import Parsed

    noop = jax.tree.map(np.asarray, jax.device_get(env.noop()))
    rows = [noop] * env.max_episode_steps
    for step, (name, t) in _turns(record).items():
        parsed = Parsed(t.get("action"), errors=tuple(t.get("errors") or ()))
        turn, _ = decode_calls(parsed)
        if turn and step < len(rows):
            role = T.BLIND if name == "solo" else T.ROLE_NAMES.index(name)
            rows[step] = jax.tree.map(np.asarray, jax.device_get(env.action(role, **turn)))
    return jax.tree.map(lambda *x: np.stack(x), *rows)


def _episodes(names: Sequence[str], cfg: Mapping):
    """``(env, keys, params, turn_order, idx, ep)`` of the run's episodes in its own order:
    the rollout's batch (:func:`~jaxcollab.agents.bomb._batch`) or, with ``bank=true``, the
    bank protocol's plan on the pinned env (:func:`~jaxcollab.agents.bomb.bank.play_bank`);
    ``idx`` indexes ``names``, ``ep`` is each episode's index in its transcript (a bank
    episode's index in the plan). The env has the run's message caps."""
    from jaxcollab.agents.bomb import _batch, message_caps
    from jaxcollab.agents.bomb.bank import PinnedParams, pinned_env
    from jaxcollab.core.rollout import episode_keys
    from jaxcollab.envs.bomb.bank import bank_episodes

    o = typed(BombConfig, cfg)
    order = o.turn_order
    if o.bank:
        plan = bank_episodes(list(names), o.repeats, turn_order=order)
        n = len(plan.variant)
        params = PinnedParams(params=plan.params, reset_key=np.asarray(plan.instance_key))
        idx = np.array([list(names).index(str(v)) for v in plan.variant])
        return (pinned_env(*message_caps(cfg)), np.asarray(episode_keys(cfg["seed"], n)), params,
                np.asarray(plan.params.turn_order), idx, np.arange(n))
    keys, params, idx, ep = _batch(list(names), cfg["episodes"], cfg["seed"], order)
    return (BombEnv(names[0], *message_caps(cfg)), keys, params, np.asarray(params.turn_order),
            idx, ep)


def llm_traces(names: Sequence[str], run_dir: Path, cfg: Mapping, chunk: int
               ) -> dict[str, np.ndarray]:
    """Traces (the keys of :func:`~jaxcollab.agents.bomb.traces.episode_traces`) of an LLM
    run's episodes (``cfg``: the run's config), replayed from its transcripts.

    Raises:
        ConfigValueError: an episode of the run has no transcript record.
        RuntimeError: a replayed episode ends otherwise than its transcript says.
    """
    from jaxcollab.llm.run import read_transcripts, transcript_path

    env, keys, params, turn_order, idx, ep = _episodes(names, cfg)
    records = {}
    for name in names:
        for r in read_transcripts(transcript_path(run_dir, name)):
            records[(name, int(r["episode"]))] = r
    missing = [(names[i], int(e)) for i, e in zip(idx, ep) if (names[i], int(e)) not in records]
    if missing:
        raise ConfigValueError("run", str(run_dir), f"a finished LLM run with a transcript of "
                               f"every episode; missing {missing[:3]}")
    rows = [records[(names[i], int(e))] for i, e in zip(idx, ep)]
    actions = jax.tree.map(lambda *x: np.stack(x), *[_actions(env, r) for r in rows])
    final, states, applied = replay(env, keys, params, actions, chunk=chunk)
    ending = np.asarray(final.ending)
    wrong = [(r["env"], r["episode"]) for r, e in zip(rows, ending)
             if T.ENDING_NAMES[int(e)] != r["ending"]]
    if wrong:
        raise RuntimeError(f"replayed episodes {wrong[:3]} end otherwise than their transcripts: "
                           "the run's episodes could not be reproduced")
    owners = [fact_owners(n) for n in names]
    flags = episode_flags(states, applied, final, turn_order,
                          np.stack([owners[i][0] for i in idx]),
                          np.stack([owners[i][1] for i in idx]))
    traces = {k: np.asarray(v) for k, v in flags.items()}
    protocol = episode_families(states, applied, turn_order)
    kept = np.full(len(rows), None, object)  # what a judge reads: the episode's own transcript
    for i in np.flatnonzero(protocol == FAMILIES.index("undetermined")):
        kept[i] = rows[i]
    traces.update(ending=ending, rounds=np.asarray(final.round + (final.turn > 0)),
                  protocol=protocol, record=kept)
    return labelled(traces, turn_order, idx, ep)


def bank_traces(names: Sequence[str], cfg: Mapping, chunk: int) -> dict[str, np.ndarray]:
    """Traces of a scripted team's ``bank=true`` run (``cfg``: its config), replayed on the
    bank protocol's episodes (:func:`_episodes`: pinned instances, turn orders, episode keys)
    by the team's policy as :func:`~jaxcollab.agents.bomb.bank.play_bank` played it."""
    from jaxcollab.agents.bomb import _policy

    env, keys, params, turn_order, idx, ep = _episodes(names, cfg)
    traces = traced(env, _policy(cfg["agent"], env), keys, params, turn_order, names, idx,
                    chunk, f"{cfg['agent']} bank traces")
    return labelled(traces, turn_order, idx, ep)


def _episode(traces: dict, i: int, names: Sequence[str]) -> dict:
    name = names[int(traces["variant"][i])]
    return {"env": name, "variant": name, "episode": int(traces["episode"][i]),
            "turn_order": order_name(TURN_ORDERS[int(traces["turn_order"][i])]),
            "ending": T.ENDING_NAMES[int(traces["ending"][i])],
            "rounds": int(traces["rounds"][i]), "messages": int(traces["messages"][i]),
            "symbols": int(traces["symbols"][i]),
            "protocol": FAMILIES[int(traces["protocol"][i])],
            **{f: bool(traces[f][i]) for f in FLAGS}}


def judged_protocols(traces: dict, names: Sequence[str], ask) -> list[dict] | None:
    """Ask the judge (``ask``, :attr:`jaxcollab.core.family.Analysis.questions`; None: no
    judge) the family of each episode the rules leave undetermined, from its transcript record
    (``traces["record"]``), and write each coded family into ``traces["protocol"]``.

    Returns:
        None without a judge, else per undetermined episode ``env``, ``episode``, ``protocol``
        (the judged family, ``undetermined`` where the judge coded none) and the verdict's
        :func:`~jaxcollab.analysis.judge.fields`.
    """
    from jaxcollab.analysis.judge import fields

    if ask is None:
        return None
    rows = np.flatnonzero(traces["protocol"] == FAMILIES.index("undetermined"))
    entries = [_episode(traces, int(i), names) for i in rows]
    verdicts = ask("protocol", [(f"{e['env']}:{e['episode']}", traces["record"][i], e)
                                for i, e in zip(rows, entries)])
    out = []
    for i, e, v in zip(rows, entries, verdicts):
        if v.mode is not None:
            traces["protocol"][i] = FAMILIES.index(v.mode)
        out.append({"env": e["env"], "episode": e["episode"],
                    "protocol": v.mode or "undetermined", **fields(v)})
    return out


def analyze(results: Mapping, run_dir: Path, chunk: int, ask=None) -> dict:
    """The flags of a finished bomb rollout run (a scripted team or ``agent=llm``, with or
    without ``bank=true``); with a judge (``ask``, :func:`judged_protocols`) the protocol of
    every episode the rules leave undetermined.

    Returns:
        ``env``, ``agent``, ``episodes``, ``lost``, ``shares`` (``dead_channel``,
        ``wrong_round``, ``omission``: share of lost episodes carrying each; SANZARU Table 6),
        ``variants.<name>`` (the same per variant) and ``lost_episodes`` (``env``, ``variant``,
        ``episode``, ``turn_order``, ``ending``, ``rounds``, ``messages``, ``symbols`` and the
        flags of each lost episode, its ``protocol`` and ``protocol_by``: ``rule`` or
        ``judge``), and ``protocol_families``: every episode's protocol family (SANZARU Figs.
        7-12) by rule or by the judge, counted overall and per variant, with the run's model
        (:func:`jaxcollab.agents.bomb.protocols.summary`).

    Raises:
        ConfigValueError: not a replayable rollout (unknown team, missing transcripts).
        RuntimeError: the replay's episodes differ from the run's.
    """
    from jaxcollab.agents.bomb.traces import episode_traces

    cfg = _config(results, run_dir)
    names = resolve(str(cfg["env"]))
    o = typed(BombConfig, cfg)
    order = o.turn_order
    if cfg["agent"] == "llm":
        traces = llm_traces(names, run_dir, cfg, chunk)
    elif o.bank:
        traces = bank_traces(names, cfg, chunk)
    else:
        traces = episode_traces(names, cfg["agent"], cfg["episodes"], cfg["seed"], chunk,
                                progress=True, turn_order=order)
    variants = {}
    for i, name in enumerate(names):
        mine = traces["variant"] == i
        rate = float(traces["success"][mine].mean())
        want = results.get("variants", {}).get(name, {}).get("success_rate")
        if want is not None and not np.isclose(rate, want):
            raise RuntimeError(f"replay of {name} defused {rate:.4f} of episodes, the run "
                               f"{want:.4f}: the run's episodes could not be reproduced")
        variants[name] = shares({k: v[mine] for k, v in traces.items()})
    lost = np.flatnonzero(traces["lost"])
    ids = [{"env": names[int(v)], "episode": int(e)}
           for v, e in zip(traces["variant"], traces["episode"])]
    model = (cfg.get("llm") or {}).get("model") if cfg["agent"] == "llm" else None
    judged = judged_protocols(traces, names, ask)
    by_judge = {(j["env"], j["episode"]) for j in judged or () if j["protocol"] != "undetermined"}
    entries = [_episode(traces, int(i), names) for i in lost]
    return {"env": cfg["env"], "agent": cfg["agent"], "episodes": int(len(traces["lost"])),
            **shares(traces), "variants": variants,
            "protocol_families": summary(traces["protocol"], traces["variant"], names, model,
                                         ids, judged),
            "lost_episodes": [{**e, "protocol_by": "judge" if (e["env"], e["episode"])
                               in by_judge else "rule"} for e in entries]}


def bounds_variant(name: str) -> dict:
    """:func:`jaxcollab.envs.bomb.bounds.variant_bounds` of one variant."""
    from jaxcollab.envs.bomb.bounds import variant_bounds

    return variant_bounds(name)


def bounds_team(names: Sequence[str], team: str, episodes: int, seed: int) -> dict[str, dict]:
    """A scripted team's rounds and symbols beside the bounds
    (:func:`~jaxcollab.agents.bomb.traces.versus_bounds`).

    Raises:
        ConfigValueError: not a scripted bomb team.
    """
    from jaxcollab.agents.bomb.teams import TEAMS
    from jaxcollab.agents.bomb.traces import episode_traces, versus_bounds

    if team not in TEAMS:
        raise ConfigValueError("teams", team, f"bomb teams from {list(TEAMS)}")
    return versus_bounds(episode_traces(names, team, episodes, seed, progress=True), names)


__all__ = ["analyze", "bank_traces", "bounds_team", "bounds_variant", "llm_traces"]
