"""Replay recorded joint actions through the library rollout, to trace episodes a team played
(an LLM team's transcripts) with the environment's own counters.

:class:`Replayed` wraps an environment so that each step applies the recorded action of that
step, whatever the policy returns; :func:`replay` plays it with
:func:`jaxcollab.core.rollout.rollout` on the run's episode keys, so resets and step keys are
the very ones the run used and the replay reproduces its episodes exactly (callers check the
endings against the run's).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.core.errors import ConfigValueError
from jaxcollab.core.rollout import rollout, stateless
from jaxcollab.core.wrappers import Wrapper


def rollout_config(results: Mapping, run_dir: Path, teams: Iterable[str]) -> dict:
    """The config of a finished ``eval/rollout.py`` run (its ``results.json``), checked to be
    replayable: it records ``env``, ``agent``, ``episodes`` and ``seed``, and ``agent`` is one of
    ``teams`` or ``llm``.

    Raises:
        ConfigValueError: on ``run``, naming the directory and what is missing or wrong.
    """
    teams = list(teams)
    cfg = dict(results.get("config") or {})
    if not all(k in cfg for k in ("env", "agent", "episodes", "seed")):
        raise ConfigValueError("run", str(run_dir), "an eval/rollout.py run (config with env, "
                               "agent, episodes, seed)")
    if cfg["agent"] not in (*teams, "llm"):
        raise ConfigValueError("run", str(run_dir), f"a run of a scripted team {teams} or "
                               f"agent=llm, not agent={cfg['agent']}")
    return cfg


class Replayed(Wrapper):
    """Applies ``params["actions"][t]`` at step ``t`` (clamped to the last recorded step).

    Params: ``{"env": the wrapped env's params, "actions": joint actions with a leading step
    axis [T, ...]}``; state: ``{"env": wrapped state, "t": int32 []}``; ``info["replayed"]``
    is the action applied.
    """

    def reset(self, key, params):
        obs, state = self.env.reset(key, params["env"])
        return obs, {"env": state, "t": jnp.int32(0)}

    def step(self, key, state, actions, params):
        del actions  # the recorded action is played instead
        n = jax.tree.leaves(params["actions"])[0].shape[0]
        t = jnp.minimum(state["t"], n - 1)
        applied = jax.tree.map(lambda x: x[t], params["actions"])
        obs, inner, reward, term, trunc, info = self.env.step(key, state["env"], applied,
                                                              params["env"])
        return obs, {"env": inner, "t": state["t"] + 1}, reward, term, trunc, dict(
            info, replayed=applied)

    def observe(self, state, params):
        return self.env.observe(state["env"], params["env"])

    def end_flags(self, state, params=None):
        return self.env.end_flags(state["env"], params["env"])


def _nothing(key, obs):
    return jnp.int32(0)


_IGNORED = stateless(_nothing, "replay")

#: Episodes per compiled replay by default (ours: a trajectory holds every step's observations).
CHUNK = 32


def replay(env, keys, params, actions, *, batched_params: bool = True, chunk: int = CHUNK):
    """Play recorded ``actions`` (pytree ``[B, T, ...]`` host arrays, ``T`` steps by which
    every episode has ended, e.g. ``env.max_episode_steps``; pad with the env's no-op) on
    episode keys ``[B]`` and ``params`` (``[B]`` with ``batched_params``), ``chunk`` episodes per
    compiled batch (the last padded).

    Returns:
        ``(final, states, applied)``: the final env states ``[B]``, the state each step acted on
        ``[T, B]`` and the actions applied ``[T, B, ...]`` (host arrays).
    """
    keys = np.asarray(keys)
    total, steps = len(keys), jax.tree.leaves(actions)[0].shape[1]
    size = min(chunk, total)
    if not batched_params:
        params = jax.tree.map(lambda x: np.broadcast_to(x, (total, *np.shape(x))), params)
    wrapped = Replayed(env)
    pick = lambda tree, rows: jax.tree.map(lambda x: np.asarray(x)[rows], tree)  # noqa: E731
    finals, states, applied = [], [], []
    for lo in range(0, total, size):
        rows = np.minimum(np.arange(lo, lo + size), total - 1)  # pad: one compiled shape
        res = jax.device_get(rollout(
            wrapped, _IGNORED, keys[rows], {"env": pick(params, rows),
                                            "actions": pick(actions, rows)},
            batched_params=True, max_steps=steps, trajectory=True))
        keep = np.arange(min(size, total - lo))
        finals.append(pick(res.state["env"], keep))
        states.append(jax.tree.map(lambda x, k=keep: x[:, k], res.trajectory["state"]["env"]))
        applied.append(jax.tree.map(lambda x, k=keep: x[:, k], res.trajectory["replayed"]))
    final = jax.tree.map(lambda *x: np.concatenate(x, 0), *finals)
    states = jax.tree.map(lambda *x: np.concatenate(x, 1), *states)
    applied = jax.tree.map(lambda *x: np.concatenate(x, 1), *applied)
    return final, states, applied


def per_episode(states, final, lengths) -> list[list]:
    """Split step-major states ``[T, B]`` (a trajectory's or :func:`replay`'s) into one list
    per episode: its first ``lengths[b]`` states and then its final state ``final[b]``
    (host pytrees), the frames of :class:`jaxcollab.core.family.Reel`."""
    pick = lambda tree, *ix: jax.tree.map(lambda x: np.asarray(x)[ix], tree)  # noqa: E731
    return [[pick(states, t, b) for t in range(int(n))] + [pick(final, b)]
            for b, n in enumerate(np.asarray(lengths))]


def played(env, policy, keys, params, *, batched_params: bool = True, chunk: int = CHUNK
           ) -> list[list]:
    """The states of episodes a policy plays on episode keys ``[B]`` (as the run's rollout
    played them: the same keys, params and library rollout), one list per episode
    (:func:`per_episode`), ``chunk`` episodes per compiled batch (the last padded: a
    trajectory holds every step's observations)."""
    keys, total = np.asarray(keys), len(keys)
    size = min(chunk, total)
    out = []
    for lo in range(0, total, size):
        rows = np.minimum(np.arange(lo, lo + size), total - 1)
        part = jax.tree.map(lambda x, r=rows: np.asarray(x)[r], params) if batched_params \
            else params
        res = jax.device_get(rollout(env, policy, keys[rows], part,
                                     batched_params=batched_params,
                                     max_steps=env.max_episode_steps, trajectory=True))
        out += per_episode(res.trajectory["state"], res.state, res.length)[:total - lo]
    return out


__all__ = ["Replayed", "per_episode", "played", "replay"]
