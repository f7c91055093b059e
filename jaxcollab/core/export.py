"""The one exporter shape (``python eval/export.py env=NAME n=N out=FILE.jsonl``).

Every family's ``export_instances(env_name, n, seed) -> list[dict]`` draws instance ``i`` as the
reset of episode ``i`` of :func:`jaxcollab.core.rollout.rollout` with
``episode_keys(seed, n)`` (so an exported instance is the episode a rollout with that seed
plays), and each record starts with the same keys (:func:`record`): ``env``, ``seed``,
``index`` and ``text`` (each role's rendered observation at the start, keyed by role name),
followed by the family's own fields (documented by its exporter).
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from jaxcollab.core.env import Environment
from jaxcollab.core.rollout import episode_keys, split_episode_key


def reset_keys(seed: int, n: int) -> jax.Array:
    """The reset keys ``[n]`` of episodes ``0..n-1`` of a rollout with ``episode_keys(seed, n)``."""
    return jax.vmap(split_episode_key)(episode_keys(seed, n))[0]


def reset_instances(env: Environment, n: int, seed: int, params: Any = None):
    """``(obs, states)`` of instances ``0..n-1`` (leading axis ``[n]``, on the host).

    Raises:
        ValueError: ``n < 1``.
    """
    if int(n) < 1:
        raise ValueError(f"n must be a positive number of instances, got {n!r}")
    params = env.default_params if params is None else params
    reset = jax.jit(jax.vmap(env.reset, (0, None)))
    return jax.device_get(reset(reset_keys(seed, n), params))


def record(env: Environment, seed: int, index: int, obs: np.ndarray) -> dict:
    """The keys every exported record starts with; ``obs`` is the instance's joint observation
    ``[n_agents, ...]`` at reset."""
    return {"env": env.name, "seed": int(seed), "index": int(index),
            "text": {name: env.render_observation(np.asarray(obs)[r], r)
                     for r, name in enumerate(env.role_names)}}
