"""Server-paced LLM play: a pool of worker threads, each playing one episode at a time as a
jitted batch-1 rollout whose policy is a host callback.

Why not one batched rollout: a batched step waits for the slowest reply of the batch at every
step, so a run is bound by its slowest episodes' lockstep, not by the server. Here each of
``llm.concurrency`` workers runs the library rollout (:func:`jaxcollab.rollout`, the same
jitted ``reset`` / ``step`` / ``observe``; compiled once per environment and shared by every
worker) on one episode; XLA releases the GIL while it runs, the policy's ``jax.pure_callback``
renders the prompts of that episode, waits for its replies and returns the joint action, and
the next episode starts as soon as a worker is free. Up to ``llm.concurrency`` episodes, so
about as many requests, are in flight at once, and the run's time is set by the server.

Episodes are told apart by a tag the :class:`Tagged` wrapper carries in the params and appends
to every observation row (with a sticky "game over" flag, so the host never queries an ended
episode): the host maps the tag to that episode's :class:`~jaxcollab.llm.bridge.Game` and
:class:`~jaxcollab.llm.bridge.Episode`.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.core.rollout import Policy, rollout
from jaxcollab.core.wrappers import Wrapper
from jaxcollab.llm.bridge import Episode, Game, Turn
from jaxcollab.llm.client import ChatClient


class Tagged(Wrapper):
    """Appends two tokens to every observation row: the sticky ended flag, then the episode
    tag ``params["tag"]``. Params: ``{"env": the wrapped env's params, "tag": int32 []}``;
    state: ``{"env": wrapped state, "ended": bool [], "length": int32 []}`` (steps played)."""

    def _cols(self, obs, ended, tag):
        extra = jnp.stack([jnp.asarray(ended, jnp.int32), jnp.asarray(tag, jnp.int32)])
        return jnp.concatenate([obs, jnp.broadcast_to(extra, obs.shape[:-1] + (2,))], axis=-1)

    def reset(self, key, params):
        obs, state = self.env.reset(key, params["env"])
        return self._cols(obs, False, params["tag"]), {
            "env": state, "ended": jnp.bool_(False), "length": jnp.int32(0)}

    def step(self, key, state, actions, params):
        obs, inner, reward, term, trunc, info = self.env.step(key, state["env"], actions,
                                                              params["env"])
        was = state["ended"]
        ended = was | term | trunc
        new = {"env": inner, "ended": ended, "length": state["length"] + ~was}
        return (self._cols(obs, ended, params["tag"]), new, jnp.where(was, 0.0, reward),
                term | was, trunc & ~was, info)

    def observe(self, state, params):
        return self._cols(self.env.observe(state["env"], params["env"]), state["ended"],
                          params["tag"])

    def __hash__(self):
        return hash((Tagged, self.env))

    def __eq__(self, other):
        return isinstance(other, Tagged) and other.env == self.env


def drive(client: ChatClient, turn: Turn) -> Any:
    """Run one game generator to its end (each yielded batch sent concurrently); its value."""
    try:
        reqs = next(turn)
    except StopIteration as stop:
        return stop.value
    while True:
        try:
            reqs = turn.send(client.complete_many(reqs))
        except StopIteration as stop:
            return stop.value


class Host:
    """The host side shared by every worker: tag → (game, episode), thread-safe."""

    def __init__(self, client: ChatClient):
        self.client = client
        self.live: dict[int, tuple[Game, Episode]] = {}
        self.warmed: set = set()  # environments whose rollout is compiled
        self.play_s = 0.0  # wall seconds of pooled play (compiling warm-ups excluded)
        self._tags = itertools.count()
        self._lock = threading.Lock()

    def open(self, game: Game, index: int) -> tuple[int, Episode]:
        """A fresh tag and :class:`Episode` for episode ``index`` played by ``game``."""
        ep = Episode(index, {r: [] for r in game.roles}, {})
        with self._lock:
            tag = next(self._tags)
            self.live[tag] = (game, ep)
        return tag, ep

    def close(self, tag: int) -> None:
        with self._lock:
            self.live.pop(tag, None)

    def act(self, struct, obs, t):
        """The ``pure_callback`` body for one episode: its joint action (zeros once ended or
        for an unknown tag, e.g. the compiling warm-up)."""
        obs = np.asarray(obs)
        game, ep = self.live.get(int(obs[0, -1]), (None, None))
        if game is None or obs[0, -2]:
            return jax.tree.map(lambda s: np.zeros(s.shape, s.dtype), struct)
        action = drive(self.client, game.turn(ep, int(t), obs[:, :-2]))
        return jax.tree.map(lambda x, s: np.asarray(x, s.dtype), action, struct)


#: The host each policy slot calls (one LLM run per process at a time).
_HOSTS: dict[str, Host] = {}


@dataclasses.dataclass(frozen=True)
class _Act:
    """``act`` of the LLM policy; compares by value (slot and action shapes), so every run in a
    process on the same environment reuses one compiled rollout."""

    slot: str
    struct: Any

    def __call__(self, key, obs, policy_state):
        del key  # sampling randomness lives on the server; the cache makes replies replayable
        actions = jax.pure_callback(lambda o, t: _HOSTS[self.slot].act(self.struct, o, t),
                                    self.struct, obs, policy_state, vmap_method="sequential")
        return actions, policy_state + 1


def _init(key):
    return jnp.int32(0)


def llm_policy(host: Host, struct, slot: str = "llm") -> Policy:
    """The LLM team as a :class:`jaxcollab.Policy` on :class:`Tagged` envs (policy state: the
    step); ``host`` becomes the active host of ``slot``."""
    _HOSTS[slot] = host
    return Policy(act=_Act(slot, struct), init=_init, name=f"llm-{slot}")


@dataclasses.dataclass
class Played:
    """One finished episode: final state (host arrays, unwrapped), steps played, per-agent
    return, and its host-side :class:`Episode`."""

    state: Any
    steps: int
    returns: np.ndarray
    episode: Episode


def play_pool(env, keys, params, jobs: list[tuple[int, Game, int]], host: Host,
              workers: int, finish: Callable[[Played, Game, int], None]) -> dict[int, Played]:
    """Play ``jobs`` (``(row, game, episode index)``) on ``workers`` threads, one batch-1
    rollout per episode (row ``row`` of ``keys`` and of the batched ``params``), and call
    ``finish(played, game, row)`` in the worker as each ends; ``{row: Played}``.

    The first call for an environment compiles the rollout once (an untagged warm-up episode
    that sends nothing) before the workers start, so they share one executable.
    """
    struct = jobs[0][1].action_struct()
    policy = llm_policy(host, struct)
    tagged = Tagged(env)
    row_of = lambda tree, b: jax.tree.map(lambda x: np.asarray(x)[b: b + 1], tree)  # noqa: E731

    def one(b: int, tag: int):
        p = {"env": row_of(params, b), "tag": np.full((1,), tag, np.int32)}
        return jax.device_get(rollout(tagged, policy, keys[b: b + 1], p, batched_params=True,
                                      max_steps=env.max_episode_steps, until_done=True))

    if tagged not in host.warmed:
        one(jobs[0][0], -1)  # compile (unknown tag: zeros, no request)
        host.warmed.add(tagged)

    def work(job) -> tuple[int, Played]:
        b, game, index = job
        tag, ep = host.open(game, index)
        try:
            out = one(b, tag)
        finally:
            host.close(tag)
        played = Played(jax.tree.map(lambda x: x[0], out.state["env"]),
                        int(out.state["length"][0]), np.asarray(out.episode_return[0]), ep)
        finish(played, game, b)
        return b, played

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(jobs)))) as pool:
        done = dict(pool.map(work, jobs))
    host.play_s += time.perf_counter() - start
    return done


__all__ = ["Host", "Played", "Tagged", "drive", "llm_policy", "play_pool"]
