"""The instance bank and the paper's evaluation protocol over it (SANZARU Tables 10–12: every
variant cell is nine episodes, three instances with three repeats, 216 episodes over the 24
variants; results are reported for the Core and Plus subsets, All, and per family).

The bank holds :data:`BANK_SIZE` instances per variant (:func:`instance_keys`, the same
instances :func:`~jaxcollab.envs.bomb.export_instances` writes for seed :data:`BANK_SEED`).
The protocol plays the first :data:`INSTANCES` of them :data:`REPEATS` times each. Everything
here is host-side planning and counting; the episodes themselves are played by a rollout.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import jax
import numpy as np

from jaxcollab.core.rollout import episode_keys, split_episode_key
from jaxcollab.envs.bomb import tables as T
from jaxcollab.envs.bomb.params import TURN_ORDERS, BombParams, make_params, stack_params

#: Instances per variant in the bank, and the bank seed (ours; the paper's bank has 120
#: instances, 5 per variant).
BANK_SIZE = 5
BANK_SEED = 2026
#: The paper's protocol: instances per variant and repeats per instance.
INSTANCES = 3
REPEATS = 3
CYCLE = "cycle"


def instance_keys(variant: str, n: int, seed: int = BANK_SEED) -> jax.Array:
    """Reset keys ``[n, 2]`` of instances ``0..n-1`` of ``variant`` (the bank when ``seed`` is
    :data:`BANK_SEED`): instance ``i`` is the reset of episode ``i`` of a rollout with
    ``episode_keys(seed, n)`` (reset stream of :func:`~jaxcollab.core.rollout.split_episode_key`),
    the one episode-key convention of every family and team.

    Raises:
        KeyError: unknown variant (lists the valid ones).
    """
    T.variant(variant)
    return jax.vmap(lambda k: split_episode_key(k)[0])(episode_keys(int(seed), int(n)))


def parse_turn_order(turn_order) -> str | tuple[int, int, int]:
    """``"cycle"``, or a permutation of the roles as a tuple of role ids, from ``"cycle"``, a
    string ``"deaf,mute,blind"`` or a sequence of role names or ids.

    Raises:
        ValueError: anything else (names the valid forms).
    """
    if isinstance(turn_order, str) and turn_order.strip() == CYCLE:
        return CYCLE
    parts = turn_order.split(",") if isinstance(turn_order, str) else list(turn_order)
    names = [str(p).strip() for p in parts]
    ids = tuple(T.ROLE_NAMES.index(n) if n in T.ROLE_NAMES else int(n) if n.isdigit() else -1
                for n in names)
    if sorted(ids) != [0, 1, 2]:
        raise ValueError(f"turn_order {turn_order!r} must be 'cycle' or a permutation of "
                         f"{', '.join(T.ROLE_NAMES)} (names or ids 0..2), e.g. 'mute,deaf,blind'")
    return ids


class BankEpisodes(NamedTuple):
    """The episodes of the protocol, one row per episode (leading axis ``[N]``).

    Attributes:
        instance_key: reset keys ``[N, 2]`` (a bank instance; repeats share it).
        params: :class:`BombParams` ``[N]`` (the variant and the episode's turn order).
        variant: ``[N]`` variant names (``bomb/<name>``); instance, repeat, order: int ``[N]``
            (bank index, repeat index, index into :data:`~jaxcollab.envs.bomb.params.
            TURN_ORDERS`).
    """

    instance_key: jax.Array
    params: BombParams
    variant: np.ndarray
    instance: np.ndarray
    repeat: np.ndarray
    order: np.ndarray


def bank_episodes(env_names: Sequence[str], repeats: int = REPEATS, instances: int = INSTANCES,
                  turn_order="cycle", seed: int = BANK_SEED) -> BankEpisodes:
    """Plan the protocol: for each variant, bank instances ``0..instances-1``, each played
    ``repeats`` times (3 x 3 per variant, 216 episodes over ``bomb/all``, by default).

    Args:
        env_names: variant names (``bomb/base-1`` or ``base-1``).
        turn_order: ``"cycle"`` (repeat ``r`` of instance ``i`` plays turn order
            ``TURN_ORDERS[(i * repeats + r) % 6]``, so a variant's episodes cover every order),
            or one permutation of the roles for every episode (see :func:`parse_turn_order`).

    Raises:
        KeyError: unknown variant. ValueError: ``repeats < 1``, ``instances`` outside
        ``1..BANK_SIZE`` when ``seed`` is the bank seed, or a bad ``turn_order``.
    """
    if int(repeats) < 1:
        raise ValueError(f"repeats must be positive, got {repeats!r}")
    if not 1 <= int(instances) <= BANK_SIZE and int(seed) == BANK_SEED:
        raise ValueError(f"instances must be in 1..{BANK_SIZE} (the bank size), got {instances!r}")
    order = parse_turn_order(turn_order)
    variants = [T.variant(name) for name in env_names]
    inst, rep = np.divmod(np.arange(int(instances) * int(repeats)), int(repeats))
    if order == CYCLE:
        orders = (inst * int(repeats) + rep) % len(TURN_ORDERS)
    else:
        orders = np.full(inst.shape, TURN_ORDERS.tolist().index(list(order)))
    keys = np.concatenate([np.asarray(instance_keys(v.name, instances, seed))[inst]
                           for v in variants])
    params = stack_params([make_params(v, TURN_ORDERS[o]) for v in variants for o in orders])
    n = len(inst)
    return BankEpisodes(
        instance_key=keys, params=params,
        variant=np.repeat([f"bomb/{v.name}" for v in variants], n),
        instance=np.tile(inst, len(variants)), repeat=np.tile(rep, len(variants)),
        order=np.tile(orders, len(variants)))


def group_summary(ending: np.ndarray, acts: np.ndarray) -> dict:
    """Success rate and endings of a group of episodes (SANZARU Fig. 6: never acted = timed
    out without a single action attempt)."""
    counts = {name: int((ending == i).sum()) for i, name in enumerate(T.ENDING_NAMES) if i}
    return {"episodes": int(ending.size), "success_rate": float((ending == T.DEFUSED).mean()),
            "endings": counts, "never_acted": int(((ending == T.TIMED_OUT) & (acts == 0)).sum())}


def summarise(variant: Sequence[str], ending: np.ndarray, acts: np.ndarray) -> dict:
    """Protocol summary: ``core``, ``plus`` (the variant subsets), ``all`` and
    ``families.<family>``, each ``{episodes, success_rate, endings, never_acted}``
    (``endings``: ``defused`` / ``wrong_action`` / ``timed_out`` counts). Groups without an
    episode are left out.

    Args:
        variant: ``[N]`` variant names; ending: int ``[N]`` endings; acts: int ``[N]`` Blind's
            action attempts per episode.
    """
    short = [T.variant(v) for v in variant]
    ending, acts = np.asarray(ending), np.asarray(acts)
    subset = np.array([v.subset for v in short])
    family = np.array([v.family for v in short])
    groups = {"core": subset == "Core", "plus": subset == "Plus",
              "all": np.ones(len(short), bool)}
    out = {k: group_summary(ending[m], acts[m]) for k, m in groups.items() if m.any()}
    out["families"] = {f: group_summary(ending[family == f], acts[family == f])
                       for f in T.FAMILIES if (family == f).any()}
    return out


def gap(trio: dict, solo: dict) -> dict:
    """Coordination cost (SANZARU Table 4): solo minus trio success rate, per group present in
    both :func:`summarise` outputs (``core``, ``plus``, ``all``, ``families.<family>``)."""
    out = {k: solo[k]["success_rate"] - trio[k]["success_rate"]
           for k in ("core", "plus", "all") if k in trio and k in solo}
    out["families"] = {f: solo["families"][f]["success_rate"] - s["success_rate"]
                       for f, s in trio["families"].items() if f in solo["families"]}
    return out
