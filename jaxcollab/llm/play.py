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

XLA:CPU runs a host callback that waits on a reply on a thread of its client's pool, which has
one thread per core by default: on a 2-core machine at most 2 episodes could wait at once, and
a 16-episode pool ran ~8x slower than the server allowed. It also runs at most
:data:`~jaxcollab.core.devices.CPU_INFLIGHT_PER_DEVICE` (32) computations per device at once, so
at concurrency 64 only 32 episodes waited on replies and a run took twice the server's time.
:func:`reserve_callback_threads` sizes both for the run's concurrency, before the CPU backend
starts (the LLM team calls it before its first JAX operation): the pool (``PJRT_NPROC``) and
the CPU devices (one per 32 waiting episodes; the workers' rollouts are spread over them,
each device's compiled once, and no mesh of the process spans the added ones). The callback
itself runs plain Python and NumPy (:mod:`jaxcollab.llm.hostonly`): a JAX operation dispatched
there needs a pool thread too, and with every thread held by a waiting callback the run would
hang.

The workers are daemon threads watched by the calling thread (:func:`play_pool`), so a stop
signal, an error or a stall (``llm.stall_s``) ends the pool within moments, and a worker stuck
past :data:`GRACE_S` is left behind instead of holding the process.

Episodes are told apart by a tag the :class:`Tagged` wrapper carries in the params and appends
to every observation row (with a sticky "game over" flag, so the host never queries an ended
episode): the host maps the tag to that episode's :class:`~jaxcollab.llm.bridge.Game` and
:class:`~jaxcollab.llm.bridge.Episode`.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import itertools
import logging
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh

from jaxcollab.core import devices as cpu
from jaxcollab.core.rollout import DATA, Policy, rollout
from jaxcollab.core.wrappers import Wrapper
from jaxcollab.llm import hostonly, signals
from jaxcollab.llm.bridge import Episode, Game, Turn
from jaxcollab.llm.client import ChatClient, LLMError
from jaxcollab.scale import preempt

log = logging.getLogger(__name__)


def reserve_callback_threads(concurrency: int) -> bool:
    """Size XLA:CPU for ``concurrency`` episodes waiting on host callbacks at once (module
    docstring): sets ``PJRT_NPROC`` to ``concurrency`` plus one thread per core, unless the
    user set it, and adds CPU devices (:func:`jaxcollab.core.devices.add_callback_devices`).
    Only a CPU backend that has not started yet reads either.

    Returns:
        whether XLA:CPU will have room for ``concurrency`` waiting episodes (False, with a
        warning naming ``PJRT_NPROC``, when JAX's backends already started with fewer threads
        or devices).
    """
    cores = os.cpu_count() or 1
    want = int(concurrency) + cores
    from jax._src import xla_bridge  # no public way to ask whether a backend started

    if xla_bridge.backends_are_initialized():
        devices = len(jax.devices("cpu"))
    else:
        os.environ.setdefault("PJRT_NPROC", str(want))
        devices = cpu.add_callback_devices(concurrency)
    have = int(os.environ.get("PJRT_NPROC", cores))
    cap = min(have - cores, devices * cpu.CPU_INFLIGHT_PER_DEVICE)
    if cap >= concurrency or jax.default_backend() != "cpu":
        return True
    log.warning("XLA:CPU has %d threads and %d device(s) (%d computations each): about %d "
                "requests at most will be in flight, fewer than llm.concurrency=%d; export "
                "PJRT_NPROC=%d and start the LLM run before anything else uses JAX to lift "
                "the cap", have, devices, cpu.CPU_INFLIGHT_PER_DEVICE, max(cap, 1),
                concurrency, want)
    return False


def callback_meshes(workers: int) -> list[Mesh]:
    """One single-device mesh per device the pool's ``workers`` spread over: enough local
    devices for each to hold at most :data:`~jaxcollab.core.devices.CPU_INFLIGHT_PER_DEVICE`
    waiting episodes, as many as there are (at least one)."""
    devices = jax.local_devices()
    n = min(len(devices), -(-int(workers) // cpu.CPU_INFLIGHT_PER_DEVICE))
    return [Mesh(np.asarray(devices[i: i + 1]), (DATA,)) for i in range(max(n, 1))]


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


class Host:
    """The host side shared by every worker: tag → (game, episode), thread-safe.

    Stopping: SIGINT / SIGTERM (seen through :mod:`~jaxcollab.llm.signals` from whatever thread
    XLA runs the callback on) or any error of a turn is kept in :attr:`error` instead of
    becoming an opaque runtime error of the compiled rollout; every later callback answers
    no-ops at once, so each worker's rollout ends within moments, and :meth:`reraise` raises it
    once the pool is done (the episodes in play are unfinished: the caller keeps only earlier
    chunks, and the request cache replays the arrived replies).

    Args:
        client: the chat client (cache, concurrency, usage).
        on_step: optional ``on_step()`` after every agent turn's requests (progress bars).
    """

    def __init__(self, client: ChatClient, on_step: Callable[[], None] | None = None):
        self.client, self.on_step = client, on_step
        self.live: dict[int, tuple[Game, Episode]] = {}
        self.warmed: set = set()  # (environment, mesh) pairs whose rollout is compiled
        self.play_s = 0.0  # wall seconds of pooled play (compiling warm-ups excluded)
        #: what stopped the pool (an error, or KeyboardInterrupt on SIGINT/SIGTERM), or None
        self.error: BaseException | None = None
        #: ``time.monotonic()`` of the last reply, callback return or finished episode
        self.progress = time.monotonic()
        #: tag → what that episode's callback is waiting on (the stall error names them)
        self.waiting: dict[int, str] = {}
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

    def stopped(self) -> bool:
        """Whether the pool is stopping: an error was kept, or a stop signal arrived (then
        kept as ``KeyboardInterrupt``)."""
        if self.error is None and signals.interrupted():  # this may not be the main thread
            self.fail(KeyboardInterrupt("stopped by a signal"))
        return self.error is not None

    def fail(self, error: BaseException) -> None:
        """Keep ``error`` as what stopped the pool (the first one wins) and cancel every
        request in flight (:func:`~jaxcollab.llm.signals.halt`)."""
        with self._lock:
            if self.error is None:
                self.error = error
        signals.halt()

    def tick(self) -> None:
        """Record progress (the stall clock restarts)."""
        self.progress = time.monotonic()

    def check_stall(self, stall_s: float) -> None:
        """Fail the pool with :class:`Stalled` when nothing progressed for ``stall_s``
        seconds, naming what the episodes wait on."""
        idle = time.monotonic() - self.progress
        if idle < stall_s or self.error is not None:
            return
        with self._lock:
            waits = sorted(self.waiting.values())
        what = (f"{len(waits)} episode(s) waiting on replies, e.g. {'; '.join(waits[:3])}"
                if waits else "the episodes' compiled rollouts (no request in flight)")
        self.fail(Stalled(f"no progress for {idle:.0f} s (llm.stall_s={stall_s:g}): {what}"))

    def reraise(self) -> None:
        """Raise what stopped the pool, if anything did, and clear it (and the halt of the
        requests in flight it caused: the pool is over)."""
        with self._lock:
            error, self.error = self.error, None
        signals.resume()
        if error is not None:
            raise error

    def drive(self, ep: Episode, turn: Turn) -> Any:
        """Run one game generator to its end (each yielded batch sent concurrently, every reply
        charged to ``ep``: :meth:`Episode.charge`); its value."""
        replies = None
        while True:
            try:
                reqs = next(turn) if replies is None else turn.send(replies)
            except StopIteration as stop:
                return stop.value
            self.waiting[id(ep)] = (f"episode {ep.index}: {len(reqs)} request(s) of "
                                    f"{', '.join(sorted({r.agent for r in reqs}))}")
            try:
                replies = self.client.complete_many(reqs)
            finally:
                self.waiting.pop(id(ep), None)
            self.tick()
            for req, reply in zip(reqs, replies):
                ep.charge(req, reply)

    def act(self, struct, obs, t):
        """The ``pure_callback`` body for one episode: its joint action (zeros once ended, for
        an unknown tag, e.g. the compiling warm-up, and once the pool is stopping). Plain
        Python and NumPy only (:mod:`jaxcollab.llm.hostonly`; checked under
        ``JAXCOLLAB_NO_DISPATCH=1``)."""
        with hostonly.no_dispatch() if hostonly.enforced() else contextlib.nullcontext():
            return self._act(struct, np.asarray(obs), t)

    def _act(self, struct, obs, t):
        game, ep = self.live.get(int(obs[0, -1]), (None, None))
        noop = jax.tree.map(lambda s: np.zeros(s.shape, s.dtype), struct)
        if game is None or obs[0, -2] or self.stopped():
            return noop
        game.budget = self.client.prompt_budget()  # the server's limit, once checked
        try:
            action = self.drive(ep, game.turn(ep, int(t), obs[:, :-2]))
        except BaseException as e:  # noqa: BLE001  (re-raised after the pool: reraise)
            self.fail(e)
            return noop
        self.tick()
        if self.on_step is not None:
            self.on_step()
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
              workers: int, finish: Callable[[Played, Game, int], None],
              stall_s: float | None = None) -> dict[int, Played]:
    """Play ``jobs`` (``(row, game, episode index)``) on ``workers`` threads, one batch-1
    rollout per episode (row ``row`` of ``keys`` and of the batched ``params``), and call
    ``finish(played, game, row)`` in the worker as each ends; ``{row: Played}``.

    The workers spread over :func:`callback_meshes` (one device per
    :data:`~jaxcollab.core.devices.CPU_INFLIGHT_PER_DEVICE` of them); the first call for an
    environment compiles the rollout once per device (an untagged warm-up episode that sends
    nothing) before the workers start, so the workers of a device share one executable.

    The calling thread watches the workers (every :data:`POLL_S` s): a stop signal, an error
    of a turn, or no progress for ``stall_s`` seconds (:class:`Stalled`) stops the pool; the
    workers then get no-ops at once and end within moments, and any still running after
    :data:`GRACE_S` s (a callback stuck outside the client) is abandoned: the workers are
    daemon threads, and the process exits without waiting for them (:func:`_exit_if_alive`).

    Raises:
        what stopped the pool (:class:`Host`: ``KeyboardInterrupt`` on SIGINT / SIGTERM,
        :class:`Stalled`, or the first error of a turn or of ``finish``).
    """
    struct, max_steps = jobs[0][1].action_struct(), jobs[0][1].max_steps(env)
    policy = llm_policy(host, struct)
    tagged = Tagged(env)
    row_of = lambda tree, b: jax.tree.map(lambda x: np.asarray(x)[b: b + 1], tree)  # noqa: E731

    n_workers = max(1, min(workers, len(jobs)))
    meshes = callback_meshes(n_workers)

    def one(b: int, tag: int, m: Mesh):
        p = {"env": row_of(params, b), "tag": np.full((1,), tag, np.int32)}
        return jax.device_get(rollout(tagged, policy, keys[b: b + 1], p, batched_params=True,
                                      max_steps=max_steps, until_done=True, mesh=m))

    signals.resume()  # a halt of an earlier pool in this process is over
    for m in meshes:  # compile for each device (unknown tag: zeros, no request)
        if (tagged, m) not in host.warmed:
            one(jobs[0][0], -1, m)
            host.warmed.add((tagged, m))

    def play(job, m: Mesh) -> Played | None:
        b, game, index = job
        tag, ep = host.open(game, index)
        try:
            out = one(b, tag, m)
        finally:
            host.close(tag)
        if host.stopped():  # its last turns may have been no-ops
            return None
        played = Played(jax.tree.map(lambda x: x[0], out.state["env"]),
                        int(out.state["length"][0]), np.asarray(out.episode_return[0]), ep)
        host.tick()
        finish(played, game, b)
        return played

    todo, done = queue.SimpleQueue(), {}
    for job in jobs:
        todo.put(job)

    def work(m: Mesh) -> None:
        while not host.stopped():
            try:
                job = todo.get_nowait()
            except queue.Empty:
                return
            try:
                played = play(job, m)
            except BaseException as e:  # noqa: BLE001  (re-raised by the watching thread)
                host.fail(e)
                return
            if played is not None:
                done[job[0]] = played

    threads = [threading.Thread(target=work, args=(meshes[i % len(meshes)],),
                                name=f"jaxcollab-llm-{i}", daemon=True)
               for i in range(n_workers)]
    start = time.perf_counter()
    host.tick()
    for t in threads:
        t.start()
    try:
        _watch(threads, host, stall_s)
    finally:  # the halt, or an abandoned chunk's, ends with this pool's workers
        signals.resume()
        if not any(t.is_alive() for t in threads):
            preempt.settled()
    host.play_s += time.perf_counter() - start
    host.reraise()
    return done


#: seconds between the watching thread's looks at the workers
POLL_S = 0.05
#: seconds a stopping pool waits for its workers before abandoning them
GRACE_S = 5.0


def _watch(threads: list[threading.Thread], host: Host, stall_s: float | None) -> None:
    """Wait for ``threads``, stopping the pool on a signal, an error or a stall; after
    :data:`GRACE_S` s of stopping, abandon the workers still alive (:func:`_exit_if_alive`)."""
    stopping = None
    while any(t.is_alive() for t in threads):
        try:
            next(t for t in threads if t.is_alive()).join(POLL_S)
            if stall_s is not None:
                host.check_stall(stall_s)
            if stopping is None and host.stopped():
                stopping = time.monotonic()
        except KeyboardInterrupt as e:  # the main thread's SIGINT / SIGTERM (signals.watch)
            host.fail(e)
            stopping = stopping or time.monotonic()
        if stopping is not None and time.monotonic() - stopping > GRACE_S:
            alive = [t for t in threads if t.is_alive()]
            log.warning("%d episode(s) did not stop within %.0f s; leaving them", len(alive),
                        GRACE_S)
            signum = signals.received() or (signal.SIGINT if isinstance(
                host.error, KeyboardInterrupt) else 0)
            atexit.register(_exit_if_alive, alive, 128 + signum if signum else 1)
            return


def _exit_if_alive(threads: list[threading.Thread], code: int) -> None:
    """At exit, leave at once (status ``code``) if an abandoned worker still runs: JAX's own
    exit hooks would tear the backend down under its rollout (registered last, so it runs
    first)."""
    if any(t.is_alive() for t in threads):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


class Stalled(LLMError):
    """No reply, callback or episode finished for ``llm.stall_s`` seconds."""


__all__ = ["Host", "Played", "Stalled", "Tagged", "callback_meshes", "llm_policy",
           "play_pool", "reserve_callback_threads"]
