"""Export Keep-Talking instances with their edgework and the oracle's action sequence.

``python eval/export.py env=ktane/<module> n=N out=FILE.jsonl`` writes one JSON object per
instance (see :func:`export_instances` for the schema). Instance ``i`` of seed ``s`` is episode
``i`` of ``evaluate(..., seed=s)`` in :mod:`jaxcollab.agents.ktane`: both play
``episode_keys(s, n)[i]`` through :func:`jaxcollab.core.rollout.rollout`.
"""

from __future__ import annotations

import jax
import numpy as np

from jaxcollab.agents.ktane.policies import oracle_team
from jaxcollab.core.export import record
from jaxcollab.core.registry import make
from jaxcollab.core.rollout import episode_keys, rollout
from jaxcollab.envs.ktane import KtaneEnv
from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane.edgework import display_text
from jaxcollab.envs.ktane.mission import DEFUSER
from jaxcollab.envs.ktane.modules.base import VERBS
from jaxcollab.envs.ktane.ruleset import Ruleset, make_ruleset, ruleset_info


def describe_edgework(edge) -> dict:
    """Host-side dict of a single episode's edgework (numpy arrays in, JSON types out)."""
    widgets = []
    for kind, a, b, side in zip(edge.kind, edge.a, edge.b, edge.side, strict=True):
        w = {"kind": T.WIDGET_KINDS[kind], "side": T.FACES[side]} if kind >= 0 else None
        if kind == T.BATTERY:
            w.update(holder=T.HOLDERS[a - 1], batteries=int(a))
        elif kind == T.INDICATOR:
            w.update(label=T.INDICATOR_LABELS[a], lit=bool(b))
        elif kind == T.PORTS:
            w.update(ports=[p for i, p in enumerate(T.PORT_NAMES) if (b >> i) & 1])
        if w:
            widgets.append(w)
    serial = "".join(T.SERIAL_CHARS[c] for c in edge.serial)
    return {"serial": serial, "serial_side": T.FACES[int(edge.serial_side)], "widgets": widgets}


def _module_dict(env: KtaneEnv, slot: int, vec, rules) -> dict:
    t = env.board.types[slot]
    return t.describe(t.layout.unpack(np.asarray(vec)), rules)


def _record(env, seed, i, start, final, steps, rules) -> dict:
    actions = []
    for t in range(env.max_turns):
        before = jax.tree.map(lambda x, t=t: x[t], steps["state"])
        if before.outcome != T.RUNNING or before.turn % 2 != DEFUSER:
            continue
        verb, target = (int(x) for x in steps["actions"][t, DEFUSER, :2])
        zoom = int(before.zoom)
        actions.append(
            {
                "time": display_text(int(before.time_left_cs)),
                "time_left_cs": int(before.time_left_cs),
                "strikes": int(before.strikes),
                "slot": zoom if zoom >= 0 else None,
                "verb": VERBS[verb],
                "target": target,
                "module": _module_dict(env, zoom, before.modules[zoom], rules)
                if zoom >= 0
                else None,
            }
        )
    m = env.mission
    return {
        **record(env, seed, i, steps["obs"][0]),
        "text": {
            name: env.render_observation(steps["obs"][0][r], r, rules)
            for r, name in enumerate(env.role_names)
        },
        "mission": {
            "modules": list(m.modules),
            "time_limit_s": m.time_limit_s,
            "max_strikes": m.max_strikes,
            "n_widgets": m.n_widgets,
        },
        "ruleset": ruleset_info(rules),
        "edgework": describe_edgework(start.edge),
        "modules": [
            {
                "slot": s,
                "type": env.board.types[s].name,
                "initial": _module_dict(env, s, start.modules[s], rules),
            }
            for s in range(env.board.n_slots)
        ],
        "oracle_actions": actions,
        "outcome": T.OUTCOMES[int(final.outcome)],
        "strikes": int(final.strikes),
        "time_left_s": int(final.time_left_cs) / 100,
    }


def export_instances(env_name: str, n: int, seed: int, ruleset: str = "vanilla",
                     ruleset_seed: int = 0) -> list[dict]:
    """``n`` instances of ``env_name`` (a ``ktane/...`` env) played by the oracle under the
    ruleset ``ruleset`` (``vanilla`` or ``random`` with ``ruleset_seed``; see
    :func:`~jaxcollab.envs.ktane.ruleset.make_ruleset`).

    Schema of each dict:

    * ``env``, ``seed``, ``index`` (0-based), ``text`` (each role's rendered observation at the
      start; :mod:`jaxcollab.core.export`);
    * ``mission``: ``modules`` (type names by slot), ``time_limit_s``, ``max_strikes``,
      ``n_widgets``;
    * ``ruleset``: ``name`` (vanilla / random) and ``seed`` (null for vanilla); every rule,
      module field and oracle move below follows it;
    * ``edgework``: ``serial`` (6 characters), ``serial_side``, ``widgets`` — each with
      ``kind`` (battery / indicator / ports) and ``side``, plus ``holder`` and ``batteries``,
      or ``label`` and ``lit``, or ``ports`` (list of port names);
    * ``modules``: per slot ``slot``, ``type`` and ``initial`` (the module as generated; fields
      per type: wires ``colors`` (per slot, null = empty) and ``cut``; button ``color``,
      ``label``, ``held``, ``strip``; keypad ``symbols`` (TL, TR, BL, BR) and ``pressed``; simon
      ``sequence``, ``stage``, ``entered``; whos_on_first ``stage`` (1-based), ``display``,
      ``buttons`` (TL, TR, ML, MR, BL, BR); memory ``stage`` (1-based), ``display``, ``labels``
      (left to right), ``history`` (``position`` and ``label`` of earlier stages, 1-based);
      morse ``word``, ``frequency``, ``dial`` (MHz strings), ``phase``, ``light_units`` (one
      loop of the light, ``1`` = on per dot unit); complicated_wires ``wires`` (per slot, null =
      empty: ``color``, ``led``, ``star``, ``cut``); wire_sequence ``wires`` (per terminal 1-12,
      null = none: ``color``, ``target`` letter, ``cut``) and ``panel`` (1-based); maze
      ``maze`` (1-9), ``markers``, ``light``, ``goal`` (``[col, row]``, 1-based from the top
      left); passwords ``columns`` (six letters each), ``index`` (shown letter per column),
      ``password``);
    * ``oracle_actions``: the Defuser's turns in order, each with the timer ``time`` shown and
      ``time_left_cs`` before the turn, ``strikes`` before it, ``slot`` (the zoomed slot, null
      if none), ``verb``, ``target`` (0-based target id: slot, wire slot, key position, colour,
      button position) and ``module`` (the zoomed module as it was before the turn, same
      fields as ``initial``; null if none);
    * ``outcome`` (solved / strikeout / timeout / running), ``strikes``, ``time_left_s``.

    Raises:
        KeyError: unknown environment (lists valid names).
        ValueError: ``env_name`` is not a Keep-Talking environment, ``n < 1``, or a bad
            ruleset name or seed.
    """
    env = make(env_name)
    if not isinstance(env, KtaneEnv):
        raise ValueError(f"{env_name!r} is not a ktane environment")
    return export_env(env, n, seed, make_ruleset(ruleset, ruleset_seed))


def export_env(env: KtaneEnv, n: int, seed: int, rules: Ruleset | None = None) -> list[dict]:
    """:func:`export_instances` for an environment object (e.g. a custom :class:`Mission`)
    under ``rules`` (default: vanilla).

    Raises:
        ValueError: ``n < 1``.
    """
    if n < 1:
        raise ValueError(f"n must be positive, got {n!r}")
    params = env.default_params if rules is None else env.ruleset_params(rules)
    r = rollout(env, oracle_team(env), episode_keys(seed, n), params, max_steps=env.max_turns,
                trajectory=True)
    rules = jax.device_get(params.rules)
    final, steps = jax.device_get((r.state, r.trajectory))
    steps = jax.tree.map(lambda x: np.swapaxes(x, 0, 1), steps)  # [B, T, ...]
    pick = lambda tree, *i: jax.tree.map(lambda x: x[i], tree)  # noqa: E731
    return [
        _record(env, seed, i, pick(steps["state"], i, 0), pick(final, i), pick(steps, i), rules)
        for i in range(n)
    ]
