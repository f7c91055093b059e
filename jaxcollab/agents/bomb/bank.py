"""A scripted team on the instance bank under the paper's protocol (SANZARU Tables 4, 10–12):
3 bank instances x 3 repeats per variant, summaries for Core, Plus, All and each family, and
the trio-vs-solo gap (``python eval/rollout.py env=bomb/all bank=true repeats=3``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import chex
import jax
import numpy as np

from jaxcollab.agents.bomb.teams import team_policy
from jaxcollab.core.rollout import Policy, rollout
from jaxcollab.core.wrappers import Wrapper
from jaxcollab.envs.bomb import bank
from jaxcollab.envs.bomb.env import BombEnv
from jaxcollab.envs.bomb.params import BombParams


@chex.dataclass(frozen=True)
class PinnedParams:
    """Params of :class:`PinnedInstances`: the variant's params and the instance's reset key."""

    params: BombParams
    reset_key: jax.Array


class PinnedInstances(Wrapper):
    """The bomb env with the instance pinned by the params: ``reset`` draws the board from
    ``params.reset_key`` and ignores the rollout's reset key, so the repeats of one bank instance
    play the same board while every episode's policy keys differ (they come from its own episode
    key). ``params`` is always a :class:`PinnedParams`."""

    def reset(self, key, params):
        return self.env.reset(params.reset_key, params.params)

    def step(self, key, state, actions, params):
        return self.env.step(key, state, actions, params.params)

    def observe(self, state, params):
        return self.env.observe(state, params.params)


@dataclasses.dataclass(frozen=True)
class _Unpinned:
    """A privileged ``act`` that reads the variant's params, not the pinned ones (compared by
    value, so equal policies share compiled rollouts)."""

    act: object

    def __call__(self, key, obs, policy_state, state, params):
        return self.act(key, obs, policy_state, state, params.params)


def _pinned(agent: str, speech_bytes: int, gesture_symbols: int
            ) -> tuple[PinnedInstances, Policy]:
    """The pinned env and team ``agent``'s policy for it, equal by value across calls (one
    compile per process); a privileged policy reads the variant's params, not the pinned ones."""
    env = BombEnv("base-1", speech_bytes, gesture_symbols)  # variants ride in the params
    policy = team_policy(agent, env.layout)
    if policy.privileged:
        policy = dataclasses.replace(policy, act=_Unpinned(policy.act))
    return PinnedInstances(env), policy


def play_bank(episodes: bank.BankEpisodes, agent: str, seed: int,
              speech_bytes: int = 256, gesture_symbols: int = 32) -> dict[str, np.ndarray]:
    """Play every planned episode with team ``agent`` through the generic rollout
    (:func:`~jaxcollab.core.rollout.rollout`). Episode ``e``'s key is
    ``fold_in(PRNGKey(seed), e)``, so repeats of an instance get different policy keys.

    Returns:
        Per-episode ``ending``, ``acts`` (Blind's action attempts) and ``bounces``
        (dead-channel calls), int ``[N]``.

    Raises:
        KeyError: unknown team (lists the valid ones).
    """
    env, policy = _pinned(agent, int(speech_bytes), int(gesture_symbols))
    root = jax.random.PRNGKey(int(seed))
    keys = jax.vmap(lambda i: jax.random.fold_in(root, i))(np.arange(len(episodes.variant)))
    params = PinnedParams(params=episodes.params, reset_key=episodes.instance_key)
    final = rollout(env, policy, keys, params, max_steps=env.max_episode_steps,
                    batched_params=True, until_done=True).state
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
    if isinstance(solo, dict):  # check before playing anything
        theirs = {k: v for k, v in solo.get("protocol", {}).items() if k != "seed"}
        if theirs != {k: v for k, v in protocol.items() if k != "seed"}:
            raise ValueError(f"solo results were played under protocol {theirs!r}, "
                             f"expected {protocol!r} (seed aside)")
    out = {"agent": agent, "protocol": protocol, **_results(plan, agent, seed)}
    if solo is not None:
        solo_summary = _results(plan, solo, seed)["summary"] if isinstance(solo, str) else \
            solo["summary"]
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
