"""Export Keep-Talking instances with their edgework and the oracle's action sequence.

``python eval/export.py env=ktane/<module> n=N out=FILE.jsonl`` writes one JSON object per
instance (see :func:`export_instances` for the schema). Instance ``i`` of seed ``s`` is episode
``i`` of ``rollout(..., seed=s)`` in :mod:`jaxcollab.agents.ktane`.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.agents.ktane.oracle import oracle_defuser
from jaxcollab.core.registry import make
from jaxcollab.envs.ktane import KtaneEnv
from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane.draw import fold_in
from jaxcollab.envs.ktane.edgework import display_text
from jaxcollab.envs.ktane.mission import DEFUSER
from jaxcollab.envs.ktane.modules.base import VERBS, WAIT


def episode_keys(seed: int, n: int) -> jax.Array:
    """Per-episode keys shared by rollouts and exports: ``fold_in(key(seed), i)`` for i < n."""
    return jax.vmap(fold_in, (None, 0))(jax.random.key(seed), jnp.arange(n))


def _trajectory(env: KtaneEnv, key: jax.Array):
    """Play one episode with the oracle for ``env.max_turns`` turns; per-turn records."""
    k_reset, k_play = fold_in(key, 0), fold_in(key, 1)
    state = env.init_state(k_reset)

    def turn(state, t):
        k = fold_in(k_play, t)
        action = jnp.stack([oracle_defuser(env, state), jnp.array([WAIT, 0, 0], jnp.int32)])
        z = jnp.maximum(state.zoom, 0)
        before = {
            "role": state.turn % 2,
            "running": state.outcome == T.RUNNING,
            "time_left_cs": state.time_left_cs,
            "strikes": state.strikes,
            "zoom": state.zoom,
            "module": state.modules[z],
            "action": action[DEFUSER],
        }
        state, _, _ = env.transition(k, state, action)
        return state, before

    start = state
    final, steps = jax.lax.scan(turn, state, jnp.arange(env.max_turns))
    return start, final, steps


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


def _module_dict(env: KtaneEnv, slot: int, vec) -> dict:
    t = env.types[slot]
    return t.describe(t.layout.unpack(np.asarray(vec)))


def _record(env, seed, i, start, final, steps) -> dict:
    actions = []
    for t in range(env.max_turns):
        if not steps["running"][t] or steps["role"][t] != DEFUSER:
            continue
        verb, target, _ = (int(x) for x in steps["action"][t])
        zoom = int(steps["zoom"][t])
        actions.append(
            {
                "time": display_text(int(steps["time_left_cs"][t])),
                "time_left_cs": int(steps["time_left_cs"][t]),
                "strikes": int(steps["strikes"][t]),
                "slot": zoom if zoom >= 0 else None,
                "verb": VERBS[verb],
                "target": target,
                "module": _module_dict(env, zoom, steps["module"][t]) if zoom >= 0 else None,
            }
        )
    m = env.mission
    return {
        "env": env.name,
        "index": i,
        "seed": seed,
        "mission": {
            "modules": list(m.modules),
            "time_limit_s": m.time_limit_s,
            "max_strikes": m.max_strikes,
            "n_widgets": m.n_widgets,
        },
        "edgework": describe_edgework(start.edge),
        "modules": [
            {
                "slot": s,
                "type": env.types[s].name,
                "initial": _module_dict(env, s, start.modules[s]),
            }
            for s in range(env.n_slots)
        ],
        "oracle_actions": actions,
        "outcome": T.OUTCOMES[int(final.outcome)],
        "strikes": int(final.strikes),
        "time_left_s": int(final.time_left_cs) / 100,
    }


def export_instances(env_name: str, n: int, seed: int) -> list[dict]:
    """``n`` instances of ``env_name`` (a ``ktane/...`` env) played by the oracle.

    Schema of each dict:

    * ``env``, ``index`` (0-based), ``seed``;
    * ``mission``: ``modules`` (type names by slot), ``time_limit_s``, ``max_strikes``,
      ``n_widgets``;
    * ``edgework``: ``serial`` (6 characters), ``serial_side``, ``widgets`` — each with
      ``kind`` (battery / indicator / ports) and ``side``, plus ``holder`` and ``batteries``,
      or ``label`` and ``lit``, or ``ports`` (list of port names);
    * ``modules``: per slot ``slot``, ``type`` and ``initial`` (the module as generated; fields
      per type: wires ``colors`` (per slot, null = empty) and ``cut``; button ``color``,
      ``label``, ``held``, ``strip``; keypad ``symbols`` (TL, TR, BL, BR) and ``pressed``; simon
      ``sequence``, ``stage``, ``entered``; whos_on_first ``stage`` (1-based), ``display``,
      ``buttons`` (TL, TR, ML, MR, BL, BR); memory ``stage`` (1-based), ``display``, ``labels``
      (left to right), ``history`` (``position`` and ``label`` of earlier stages, 1-based));
    * ``oracle_actions``: the Defuser's turns in order, each with the timer ``time`` shown and
      ``time_left_cs`` before the turn, ``strikes`` before it, ``slot`` (the zoomed slot, null
      if none), ``verb``, ``target`` (0-based target id: slot, wire slot, key position, colour,
      button position) and ``module`` (the zoomed module as it was before the turn, same
      fields as ``initial``; null if none);
    * ``outcome`` (solved / strikeout / timeout / running), ``strikes``, ``time_left_s``.

    Raises:
        KeyError: unknown environment (lists valid names).
        ValueError: ``env_name`` is not a Keep-Talking environment, or ``n < 1``.
    """
    env = make(env_name)
    if not isinstance(env, KtaneEnv):
        raise ValueError(f"{env_name!r} is not a ktane environment")
    return export_env(env, n, seed)


def export_env(env: KtaneEnv, n: int, seed: int) -> list[dict]:
    """:func:`export_instances` for an environment object (e.g. a custom :class:`Mission`).

    Raises:
        ValueError: ``n < 1``.
    """
    if n < 1:
        raise ValueError(f"n must be positive, got {n!r}")
    play = jax.jit(jax.vmap(partial(_trajectory, env)))
    start, final, steps = jax.device_get(play(episode_keys(seed, n)))
    pick = lambda tree, i: jax.tree.map(lambda x: x[i], tree)  # noqa: E731
    return [_record(env, seed, i, pick(start, i), pick(final, i), pick(steps, i)) for i in range(n)]
