"""Per-episode traces of a scripted bomb team: rounds, messages, symbols and the perspective
flags (:mod:`jaxcollab.envs.bomb.flags`), replayed through :func:`jaxcollab.core.rollout.rollout`
with ``trajectory=True`` on the very episodes :func:`jaxcollab.agents.bomb.evaluate` plays for
the same ``(env_names, episodes, seed)`` (same keys and turn orders, so the same episodes)."""

from __future__ import annotations

from collections.abc import Sequence

import jax
import numpy as np
from rich.progress import track

from jaxcollab.agents.bomb.protocols import FAMILIES, episode_families, episode_records
from jaxcollab.agents.bomb.teams import team_policy
from jaxcollab.analysis.replay import CHUNK
from jaxcollab.core.registry import make
from jaxcollab.core.rollout import rollout
from jaxcollab.envs.bomb import tables as T
from jaxcollab.envs.bomb.flags import episode_flags, fact_owners
from jaxcollab.envs.bomb.params import TURN_ORDERS

UNDETERMINED = FAMILIES.index("undetermined")


def episode_traces(env_names: Sequence[str], agent: str, episodes: int, seed: int,
                   chunk: int = CHUNK, progress: bool = False, turn_order="cycle"
                   ) -> dict[str, np.ndarray]:
    """Replay ``episodes`` episodes of each variant with team ``agent`` and trace each one
    (``turn_order``: ``"cycle"``, episode ``e`` under ``TURN_ORDERS[e % 6]``, or the one
    permutation the run was played under).

    Returns:
        Arrays ``[len(env_names) * episodes]`` in :func:`~jaxcollab.agents.bomb.evaluate`'s
        order: ``variant`` (index into ``env_names``), ``episode``, ``turn_order`` (index into
        :data:`~jaxcollab.envs.bomb.params.TURN_ORDERS`), ``ending``, ``rounds`` (rounds
        begun), ``protocol`` (index into
        :data:`~jaxcollab.agents.bomb.protocols.FAMILIES`), ``record`` (object: the transcript
        record of an episode whose protocol is ``undetermined``, else None) and the keys of
        :func:`~jaxcollab.envs.bomb.flags.episode_flags`.

    Raises:
        KeyError: unknown team or variant (lists the valid ones).
    """
    from jaxcollab.agents.bomb import _batch  # the rollout's own episode batch: same episodes

    env = make(env_names[0])
    fixed = {} if turn_order in (None, "cycle") else {"turn_order": turn_order}
    keys, params, idx, ep = _batch(list(env_names), episodes, seed, **fixed)
    return labelled(traced(env, team_policy(agent, env.layout), keys, params, params.turn_order,
                           env_names, idx, chunk, f"{agent} traces" if progress else None),
                    params.turn_order, idx, ep)


def traced(env, policy, keys, params, turn_order, env_names: Sequence[str], idx, chunk: int,
           label: str | None = None) -> dict[str, np.ndarray]:
    """``ending``, ``rounds``, the :func:`~jaxcollab.envs.bomb.flags.episode_flags`, the
    ``protocol`` (:func:`~jaxcollab.agents.bomb.protocols.episode_families`) and the
    ``record`` (object: :func:`~jaxcollab.agents.bomb.protocols.episode_records` where the
    protocol is undetermined, else None: what a judge reads) of
    the episodes ``keys [N]`` / ``params [N]`` (``turn_order`` int ``[N, 3]``, ``idx`` each
    episode's index into ``env_names``) played by ``policy`` on ``env`` with a trajectory,
    ``chunk`` at a time (``label``: a progress bar's title, None for none)."""
    owners = [fact_owners(n) for n in env_names]
    sole = np.stack([owners[i][0] for i in idx])
    per_stage = np.stack([owners[i][1] for i in idx])
    turn_order = np.asarray(turn_order)
    total = len(idx)
    size = min(chunk, total)
    out: dict[str, list] = {}
    for lo in track(range(0, total, size), label or "", disable=label is None):
        rows = np.minimum(np.arange(lo, lo + size), total - 1)  # pad: one compiled shape
        res = rollout(env, policy, keys[rows], jax.tree.map(lambda x, r=rows: x[r], params),
                      batched_params=True, max_steps=env.max_episode_steps, trajectory=True)
        final = res.state
        flags = episode_flags(res.trajectory["state"], res.trajectory["actions"], final,
                              turn_order[rows], sole[rows], per_stage[rows])
        keep = slice(0, min(size, total - lo))
        protocol = episode_families(res.trajectory["state"], res.trajectory["actions"],
                                    turn_order[rows])
        ask = np.flatnonzero(protocol[keep] == UNDETERMINED)
        records = np.full(len(protocol), None, object)
        records[ask] = episode_records(res.trajectory["state"], res.trajectory["actions"],
                                       turn_order[rows], np.asarray(final.ending), ask)
        rec = {"ending": final.ending, "rounds": final.round + (final.turn > 0), **flags,
               "protocol": protocol, "record": records}
        for k, x in rec.items():
            out.setdefault(k, []).append(np.asarray(x)[keep])
    return {k: np.concatenate(v) for k, v in out.items()}


def labelled(traces: dict[str, np.ndarray], turn_order, idx, ep) -> dict[str, np.ndarray]:
    """``traces`` with each episode's ``turn_order`` (index into
    :data:`~jaxcollab.envs.bomb.params.TURN_ORDERS`, from its int ``[N, 3]`` order),
    ``variant`` (``idx``), ``episode`` (``ep``) and ``success``."""
    orders = TURN_ORDERS.tolist()
    return {**traces, "turn_order": np.array([orders.index(list(o))
                                              for o in np.asarray(turn_order)]),
            "variant": np.asarray(idx), "episode": np.asarray(ep),
            "success": np.asarray(traces["ending"]) == T.DEFUSED}


def _mean(x: np.ndarray) -> float | None:
    return float(x.mean()) if x.size else None


def versus_bounds(traces: dict[str, np.ndarray], env_names: Sequence[str]) -> dict[str, dict]:
    """Per variant: the team's ``episodes``, ``success_rate``, ``mean_rounds`` and
    ``mean_symbols`` over its successful episodes, and ``below_bound``: successful episodes
    that used fewer rounds than the information bound of their turn order
    (:func:`~jaxcollab.envs.bomb.bounds.variant_bounds`; a team that communicates and does
    not guess has none)."""
    from jaxcollab.envs.bomb.bounds import order_name, variant_bounds

    out = {}
    for i, name in enumerate(env_names):
        mine = traces["variant"] == i
        won = mine & traces["success"]
        by_order = variant_bounds(name)["by_turn_order"]
        bound = np.array([by_order[order_name(TURN_ORDERS[o])] or 0
                          for o in traces["turn_order"]])
        out[name] = {"episodes": int(mine.sum()),
                     "success_rate": float(traces["success"][mine].mean()),
                     "mean_rounds": _mean(traces["rounds"][won]),
                     "mean_symbols": _mean(traces["symbols"][won]),
                     "below_bound": int((won & (traces["rounds"] < bound)).sum())}
    return out


__all__ = ["CHUNK", "episode_traces", "labelled", "traced", "versus_bounds"]
