"""A scripted team on the instance bank under the paper's protocol (SANZARU Tables 4, 10–12):
3 bank instances x 3 repeats per variant, summaries for Core, Plus, All and each family, and
the trio-vs-solo gap (``python eval/rollout.py env=bomb/all bank=true repeats=3``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import chex
import jax
import numpy as np

from jaxcollab.core.rollout import episode_keys
from jaxcollab.core.wrappers import Wrapper
from jaxcollab.envs.bomb import bank
from jaxcollab.envs.bomb import tables as T
from jaxcollab.envs.bomb.env import BombEnv
from jaxcollab.envs.bomb.params import BombParams
from jaxcollab.scale import preempt


@chex.dataclass(frozen=True)
class PinnedParams:
    """Params of :class:`PinnedInstances`: the variant's params and the instance's reset key."""

    params: BombParams
    reset_key: jax.Array


#: The env's message caps (speech bytes, gesture symbols).
DEFAULT_CAPS = (T.DEFAULT_SPEECH_BYTES, T.DEFAULT_GESTURE_SYMBOLS)


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


def pinned_env(speech_bytes: int = 256, gesture_symbols: int = 32) -> PinnedInstances:
    """The pinned bomb env (equal by value for equal caps, so rollouts reuse their compile);
    the variants ride in the params."""
    return PinnedInstances(BombEnv("base-1", speech_bytes, gesture_symbols))


def play_bank(episodes: bank.BankEpisodes, team, seed: int, chunk: int = 16_384,
              save_dir: str | Path | None = None, caps: tuple[int, int] = DEFAULT_CAPS
              ) -> dict[str, np.ndarray]:
    """Play every planned episode with ``team`` (a :class:`~jaxcollab.core.family.Team`),
    ``chunk`` at a time (finished chunks kept in ``save_dir``, resumed on a rerun:
    :func:`~jaxcollab.scale.preempt.resumable_episodes`). Episode ``e``'s key is
    ``episode_keys(seed, N)[e]`` (the one convention), so repeats of an instance get different
    policy keys while the pinned reset key fixes the board. ``caps``: the env's speech bytes
    and gesture symbols (:func:`pinned_env`).

    Returns:
        Per-episode ``ending``, ``acts`` (Blind's action attempts) and ``bounces``
        (dead-channel calls), int ``[N]``.
    """
    env = pinned_env(*caps)
    n = len(episodes.variant)
    keys = np.asarray(episode_keys(seed, n))
    params = PinnedParams(params=episodes.params, reset_key=np.asarray(episodes.instance_key))

    def run(rows: np.ndarray) -> dict:
        ids = [(str(episodes.variant[r]), int(r)) for r in rows]
        final = team.play(env, keys[rows], jax.tree.map(lambda x: np.asarray(x)[rows], params),
                          ids, batched_params=True)
        return {k: np.asarray(getattr(final, k)) for k in ("ending", "acts", "bounces")}

    return preempt.resumable_episodes(run, np.arange(n), min(chunk, n), save_dir)


def bank_protocol(env_names: Sequence[str], repeats: int = bank.REPEATS,
                  instances: int = bank.INSTANCES, turn_order="cycle", seed: int = 0) -> dict:
    """The ``protocol`` entry of a bank run's results (:func:`rollout_bank`)."""
    return {"instances": int(instances), "repeats": int(repeats),
            "turn_order": turn_order if isinstance(turn_order, str) else list(turn_order),
            "bank_seed": bank.BANK_SEED, "seed": int(seed), "envs": list(env_names)}


def check_solo(solo, protocol: dict) -> None:
    """Refuse solo results (an earlier bank run's ``results.json``, loaded) that cannot serve
    as the baseline of a run under ``protocol``: not a bank run's results, or played under
    another protocol (the seed may differ).

    Raises:
        ValueError: naming what differs.
    """
    if not isinstance(solo, dict) or not isinstance(solo.get("summary"), dict):
        raise ValueError("solo results must be a bank run's results.json (a JSON object with "
                         "a summary)")
    theirs = {k: v for k, v in (solo.get("protocol") or {}).items() if k != "seed"}
    if theirs != {k: v for k, v in protocol.items() if k != "seed"}:
        raise ValueError(f"solo results were played under protocol {theirs!r}, "
                         f"expected {protocol!r} (seed aside)")


def rollout_bank(env_names: Sequence[str], agent, repeats: int = bank.REPEATS,
                 instances: int = bank.INSTANCES, turn_order="cycle", seed: int = 0,
                 solo: str | dict | None = None, chunk: int = 16_384,
                 save_dir: str | Path | None = None,
                 team_of: Callable[[str], object] | None = None,
                 caps: tuple[int, int] = DEFAULT_CAPS) -> dict:
    """Play the protocol (:func:`~jaxcollab.envs.bomb.bank.bank_episodes`) with ``agent`` (a
    team name or a :class:`~jaxcollab.core.family.Team`, e.g. an LLM team).

    Args:
        solo: optional solo baseline: a team name (played on the same episodes, e.g.
            ``"solo"``) or the results dict of an earlier bank run of it.
        chunk, save_dir: episodes per played batch, and where finished chunks are kept
            (``save_dir/bank``, and ``save_dir/solo`` for a solo team) so a stopped run resumes.
        team_of: team name → Team (default: the scripted bomb teams).
        caps: the env's speech bytes and gesture symbols (every team plays under the same).

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
    if team_of is None:
        from jaxcollab.agents.bomb import scripted as team_of
    player = team_of(agent) if isinstance(agent, str) else agent
    plan = bank.bank_episodes(env_names, repeats, instances, turn_order)
    protocol = bank_protocol(env_names, repeats, instances, turn_order, seed)
    if isinstance(solo, dict):  # check before playing anything
        check_solo(solo, protocol)
    sub = (lambda name: None) if save_dir is None else (lambda name: Path(save_dir) / name)
    out = {"agent": player.name, "protocol": protocol,
           **_results(plan, player, seed, chunk, sub("bank"), caps)}
    if solo is not None:
        solo_summary = (_results(plan, team_of(solo), seed, chunk, sub("solo"), caps)["summary"]
                        if isinstance(solo, str) else solo["summary"])
        out["summary"]["solo"] = {k: v for k, v in solo_summary.items()
                                  if k not in ("solo", "gap")}
        out["summary"]["gap"] = bank.gap(out["summary"], solo_summary)
    return out


def _results(plan: bank.BankEpisodes, player, seed: int, chunk: int, save_dir,
             caps: tuple[int, int]) -> dict:
    final = play_bank(plan, player, seed, chunk, save_dir, caps)
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


__all__ = ["PinnedInstances", "PinnedParams", "bank_protocol", "check_solo", "pinned_env",
           "play_bank", "rollout_bank"]
