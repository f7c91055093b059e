"""A scripted team on the instance bank under the paper's protocol (SANZARU Tables 4, 10–12):
3 bank instances x 3 repeats per variant, summaries for Core, Plus, All and each family, and
the trio-vs-solo gap (``python eval/rollout.py env=bomb/all bank=true repeats=3``).
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import numpy as np

from jaxcollab.agents.bomb.run import play_from, reset_many
from jaxcollab.agents.bomb.teams import team
from jaxcollab.envs.bomb import bank
from jaxcollab.envs.bomb.env import BombEnv


def play_bank(episodes: bank.BankEpisodes, agent: str, seed: int) -> dict[str, np.ndarray]:
    """Play every planned episode with team ``agent``; the team's keys come from ``seed`` and
    the episode index (never the instance key). Returns per-episode ``ending``, ``acts`` and
    ``bounces`` (dead-channel calls), int ``[N]``.

    Raises:
        KeyError: unknown team (lists the valid ones).
    """
    policy, privileged = team(agent)
    layout = BombEnv(str(episodes.variant[0])).layout
    states = reset_many(episodes.instance_key, episodes.params, layout.speech_bytes,
                        layout.gesture_symbols)
    root = jax.random.PRNGKey(int(seed))
    keys = jax.vmap(lambda i: jax.random.fold_in(root, i))(np.arange(len(episodes.variant)))
    final = play_from(states, keys, episodes.params, policy, privileged, layout)
    return {k: np.asarray(getattr(final, k)) for k in ("ending", "acts", "bounces")}


def rollout_bank(env_names: Sequence[str], agent: str, repeats: int = bank.REPEATS,
                 instances: int = bank.INSTANCES, turn_order="cycle", seed: int = 0,
                 solo: str | dict | None = None) -> dict:
    """Play the protocol (:func:`~jaxcollab.envs.bomb.bank.bank_episodes`) with team ``agent``.

    Args:
        solo: optional solo baseline: a team name (played on the same episodes, e.g.
            ``"solo"``) or the results dict of an earlier bank run of it.

    Returns:
        ``agent``, ``protocol`` (``instances``, ``repeats``, ``turn_order``, ``bank_seed``,
        ``seed``, ``envs``), ``episodes``, ``success_rate``, ``endings``, ``never_acted``,
        ``bounces`` (mean dead-channel calls per episode), ``variants.<name>`` (``episodes``,
        ``success_rate``, ``endings``, ``never_acted``) and ``summary``: ``core``, ``plus``,
        ``all``, ``families.<family>`` (see :func:`~jaxcollab.envs.bomb.bank.summarise`); with
        ``solo``, also ``summary.solo`` (the solo run's summary) and ``summary.gap`` (solo
        minus trio success rate per group, SANZARU Table 4).

    Raises:
        KeyError: unknown team or variant. ValueError: bad ``repeats``, ``instances`` or
        ``turn_order``, or a solo results dict from a different protocol.
    """
    plan = bank.bank_episodes(env_names, repeats, instances, turn_order)
    protocol = {"instances": int(instances), "repeats": int(repeats),
                "turn_order": turn_order if isinstance(turn_order, str) else list(turn_order),
                "bank_seed": bank.BANK_SEED, "seed": int(seed), "envs": list(env_names)}
    out = _results(plan, agent, seed)
    out = {"agent": agent, "protocol": protocol, **out}
    if solo is not None:
        if isinstance(solo, str):
            solo_summary = _results(plan, solo, seed)["summary"]
        else:
            theirs = {k: v for k, v in solo.get("protocol", {}).items() if k != "seed"}
            if theirs != {k: v for k, v in protocol.items() if k != "seed"}:
                raise ValueError(f"solo results were played under protocol {theirs!r}, "
                                 f"expected {protocol!r} (seed aside)")
            solo_summary = solo["summary"]
        out["summary"]["solo"] = {k: v for k, v in solo_summary.items()
                                  if k not in ("solo", "gap")}
        out["summary"]["gap"] = bank.gap(out["summary"], solo_summary)
    return out


def _results(plan: bank.BankEpisodes, agent: str, seed: int) -> dict:
    final = play_bank(plan, agent, seed)
    ending, acts = final["ending"], final["acts"]
    summary = bank.summarise(plan.variant, ending, acts)
    names = list(dict.fromkeys(plan.variant.tolist()))
    return {
        "episodes": int(ending.size), **{k: summary["all"][k] for k in
                                         ("success_rate", "endings", "never_acted")},
        "bounces": float(final["bounces"].mean()),
        "variants": {v: bank.group_summary(ending[plan.variant == v], acts[plan.variant == v])
                     for v in names},
        "summary": summary,
    }


__all__ = ["play_bank", "rollout_bank"]
