"""Server-paced LLM play: one batched, jitted rollout of ``K`` episode slots whose policy is
one host callback a tick, and one asyncio event loop that drives every episode's requests.

Why batched but not lockstep: ``K = min(llm.concurrency, chunk)`` episodes play in the slots of
one ``lax.while_loop`` built on the environment's own jitted ``reset`` / ``step`` /
``observe`` (the only game logic). Each tick, ONE ``jax.pure_callback`` (:meth:`Host.tick_cb`)
gets the observations, job indices and steps of up to ``R`` (:data:`OBSERVE`) slots not seen
since they last stepped, every slot's job, and the final state of each episode that ended on
the previous tick. It starts the turn of every slot that needs an action (the family's
:meth:`~jaxcollab.llm.bridge.Game.turn` generator, a task on the host's event loop), waits
until at least one turn's action is ready (a stop or a stall), and returns the slots of up to
``R`` ready actions (the earliest first; the rest step the next ticks, which do not wait) with
those actions: only those slots step, gathered, stepped and scattered back into the ``K``-slot
state, so no episode waits on another's reply and a tick costs the few slots in play, not all
``K``. The ended episodes' final states are those of the stepped rows (``R``, never the whole
batch). A slot whose episode ended takes the next job of the chunk (its key and params
gathered by job index inside the loop), until every job is done. The rollout compiles once
per environment and chunk size (on any number of episodes in flight), and XLA:CPU holds one
waiting callback, not one per episode: no thread pool sizing (``PJRT_NPROC``) or extra CPU devices.

The host side: every episode's turns run on one persistent event loop (a daemon thread of the
:class:`Host`), and the client's async entry point
(:meth:`~jaxcollab.llm.client.ChatClient.acomplete_many`) sends all of them over one HTTP
client with at most ``llm.concurrency`` requests in flight (one adaptive window). Threads are
constant in the concurrency and the number of episodes: the loop, the rollout's thread, the
watching (calling) thread and :data:`FINISHERS` finishing threads. The callback and the game
code run plain Python and NumPy (:mod:`jaxcollab.llm.hostonly`).

An ended episode's final state reaches the host at the next tick; its ``finish`` (end-of-game
exchanges through :meth:`Host.drive`, the transcript record) runs at once on a finishing
thread. The rollout runs on a daemon thread watched by the calling thread (:func:`play_pool`),
so a stop signal, an error or a stall (``llm.stall_s``) ends the pool within moments, and one
stuck past :data:`GRACE_S` is left behind instead of holding the process.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import dataclasses
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.core.rollout import split_episode_key, step_keys
from jaxcollab.llm import hostonly, signals
from jaxcollab.llm.bridge import Episode, Game, Turn
from jaxcollab.llm.client import ChatClient, LLMError, ReplyCache
from jaxcollab.scale import preempt

log = logging.getLogger(__name__)


class Host:
    """The host side of a pool: every episode's game generators on one asyncio event loop
    (a daemon thread, started on first use and kept for the host's life), the tick callback
    of the batched rollout (:meth:`tick_cb`) and the finishing of ended episodes.

    Stopping: SIGINT / SIGTERM (seen through :mod:`~jaxcollab.llm.signals` from whatever thread
    XLA runs the callback on) or any error of a turn is kept in :attr:`error` instead of
    becoming an opaque runtime error of the compiled rollout; the next tick answers "stop" and
    the rollout ends at once, every turn in flight is cancelled, and :meth:`reraise` raises it
    once the pool is done (the episodes in play are unfinished: the caller keeps only earlier
    chunks, and the request cache replays the arrived replies).

    Args:
        client: the chat client (cache, concurrency, usage): a
            :class:`~jaxcollab.llm.client.ChatClient` or
            :class:`~jaxcollab.llm.roles.TeamClient` (``acomplete_many``, ``prompt_budget``).
        on_step: optional ``on_step()`` after every agent turn's requests (progress bars).
    """

    def __init__(self, client: ChatClient, on_step: Callable[[], None] | None = None):
        self.client, self.on_step = client, on_step
        self.play_s = 0.0  # wall seconds of pooled play (compiling warm-ups excluded)
        self.play_cpu_s = 0.0  # the process's CPU seconds over the same time
        #: what stopped the pool (an error, or KeyboardInterrupt on SIGINT/SIGTERM), or None
        self.error: BaseException | None = None
        #: ``time.monotonic()`` of the last reply, callback return or finished episode
        self.progress = time.monotonic()
        #: id(episode) → what that episode's turn is waiting on (the stall error names them)
        self.waiting: dict[int, str] = {}
        #: row → :class:`Played` of the pool in play, as its episodes end
        self.done: dict[int, Played] = {}
        self._lock = threading.Lock()
        self._cv = threading.Condition()  # a turn's action arrived (or the pool is stopping)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task] = set()
        self._finisher = concurrent.futures.ThreadPoolExecutor(FINISHERS, "jaxcollab-llm-end")
        self._begin([], lambda *a: None)

    def _begin(self, jobs: list[tuple[int, Game, int]],
               finish: Callable[[Played, Game, int], None]) -> None:
        """Start a pool of ``jobs`` (job ``j`` is ``jobs[j]``)."""
        self.jobs, self.finish, self.done = jobs, finish, {}
        self.live: dict[int, tuple[Game, Episode]] = {}  # job → its game and episode
        self.running: set[int] = set()  # jobs whose turn is on the loop
        self.ready: dict[int, Any] = {}  # job → the action its finished turn returned
        self.finishing: list[concurrent.futures.Future] = []

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The host's event loop (running on its own daemon thread)."""
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                threading.Thread(target=self._loop.run_forever, name="jaxcollab-llm-loop",
                                 daemon=True).start()
            return self._loop

    def stopped(self) -> bool:
        """Whether the pool is stopping: an error was kept, or a stop signal arrived (then
        kept as ``KeyboardInterrupt``)."""
        if self.error is None and signals.interrupted():  # this may not be the main thread
            self.fail(KeyboardInterrupt("stopped by a signal"))
        return self.error is not None

    def fail(self, error: BaseException) -> None:
        """Keep ``error`` as what stopped the pool (the first one wins), cancel every turn
        and request in flight (:func:`~jaxcollab.llm.signals.halt`) and wake the tick."""
        with self._lock:
            first, self.error = self.error is None, self.error or error
        signals.halt()
        if first and self._loop is not None:
            self._loop.call_soon_threadsafe(self._cancel)
        with self._cv:
            self._cv.notify_all()

    def _cancel(self) -> None:
        for task in list(self._tasks):
            task.cancel()

    def tick(self) -> None:
        """Record progress (the stall clock restarts)."""
        self.progress = time.monotonic()

    def check_stall(self, stall_s: float) -> None:
        """Fail the pool with :class:`Stalled` when nothing progressed for ``stall_s``
        seconds, naming what the episodes wait on."""
        idle = time.monotonic() - self.progress
        if idle < stall_s or self.error is not None:
            return
        waits = sorted(self.waiting.values())
        what = (f"{len(waits)} episode(s) waiting on replies, e.g. {'; '.join(waits[:3])}"
                if waits else "the episodes' compiled rollout (no request in flight)")
        self.fail(Stalled(f"no progress for {idle:.0f} s (llm.stall_s={stall_s:g}): {what}"))

    def reraise(self) -> None:
        """Raise what stopped the pool, if anything did, and clear it (and the halt of the
        requests in flight it caused: the pool is over)."""
        with self._lock:
            error, self.error = self.error, None
        signals.resume()
        if error is not None:
            raise error

    async def adrive(self, ep: Episode, turn: Turn) -> Any:
        """Run one game generator to its end on the host's loop (each yielded batch sent
        concurrently with every other episode's, every reply charged to ``ep``:
        :meth:`Episode.charge`); its value. The generator's own code (rendering, parsing)
        runs under :func:`~jaxcollab.llm.hostonly.no_dispatch` when enforced."""
        replies = None
        while True:
            try:
                with _guard():
                    reqs = next(turn) if replies is None else turn.send(replies)
            except StopIteration as stop:
                return stop.value
            self.waiting[id(ep)] = (f"episode {ep.index}: {len(reqs)} request(s) of "
                                    f"{', '.join(sorted({r.agent for r in reqs}))}")
            try:
                replies = await self.client.acomplete_many(reqs)
            finally:
                self.waiting.pop(id(ep), None)
            self.tick()
            for req, reply in zip(reqs, replies):
                ep.charge(req, reply)

    def drive(self, ep: Episode, turn: Turn) -> Any:
        """:meth:`adrive` from any thread but the loop's (e.g. a ``finish`` callback's end-of-
        game exchanges), waiting for its value.

        Raises:
            RuntimeError: called on the loop's own thread (it would wait on itself).
        """
        loop = self.loop
        if getattr(loop, "_thread_id", None) == threading.get_ident():
            raise RuntimeError("Host.drive called on the host's event loop; await adrive")
        return asyncio.run_coroutine_threadsafe(self._track(self.adrive(ep, turn)),
                                                loop).result()

    async def _track(self, coro):
        """``coro`` as a task the pool's stop cancels."""
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return await task

    def tick_cb(self, struct, *args):
        """The rollout's host callback, once a tick: ``(slot int32 [R], actions [R, …], stop
        bool [])`` (module docstring): the slots to step (``K`` for none) and their actions,
        from ``obs [R, …]`` (the rows of up to ``R`` slots not yet seen since they stepped or
        started), ``seen_job`` / ``seen_t`` ``[R]`` (their jobs, -1 for none, and steps),
        ``job [K]`` (every slot's job), ``pending []`` (slots left unseen), and per slot stepped
        last tick the job that ended there (``fin_job [R]``, -1 for none) with its final state,
        steps and returns. Plain Python and NumPy only (:mod:`jaxcollab.llm.hostonly`; checked
        under ``JAXCOLLAB_NO_DISPATCH=1``)."""
        with _guard():
            return self._tick(struct, *jax.tree.map(np.asarray, args))

    def _tick(self, struct, obs, seen_job, seen_t, job, pending, fin_job, fin_state, fin_len,
              fin_ret):
        for i in np.flatnonzero(fin_job >= 0):  # ended last tick: finish them
            self._ended(int(fin_job[i]), jax.tree.map(lambda x, i=i: np.array(x[i]), fin_state),
                        int(fin_len[i]), np.array(fin_ret[i]))
        actions = jax.tree.map(lambda s: np.zeros(s.shape, s.dtype), struct)
        slot = np.full(len(fin_job), len(job), np.int32)
        if self.stopped():
            return slot, actions, np.True_
        slot_of = {int(job[k]): int(k) for k in np.flatnonzero(job >= 0)}
        start = []
        with self._cv:
            for i in np.flatnonzero(seen_job >= 0):
                j = int(seen_job[i])
                if j not in self.live:
                    _, game, index = self.jobs[j]
                    self.live[j] = (game, Episode(index, {r: [] for r in game.roles}, {}))
                self.running.add(j)
                start.append((j, int(seen_t[i]), obs[i].copy()))
        if start:
            self.loop.call_soon_threadsafe(self._spawn, start)
        with self._cv:  # unseen slots left: the next tick observes them at once
            while slot_of and not pending and not self.ready and not self.stopped():
                self._cv.wait(POLL_S)
            if self.error is not None:
                return slot, actions, np.True_
            leaves = jax.tree.leaves(actions)
            for i, j in enumerate(list(self.ready)[:len(slot)]):  # the earliest actions first
                slot[i] = slot_of[j]
                for buf, x in zip(leaves, jax.tree.leaves(self.ready.pop(j))):
                    buf[i] = x
        self.tick()
        return slot, actions, np.False_

    def _spawn(self, start: list[tuple[int, int, np.ndarray]]) -> None:
        """On the loop: one task per ``(job, step, observation rows)`` (:meth:`_turn`)."""
        for j, step, obs in start:
            task = self._loop.create_task(self._turn(j, step, obs))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _turn(self, j: int, step: int, obs: np.ndarray) -> None:
        game, ep = self.live[j]
        try:
            game.budget = self.client.prompt_budget()  # the server's limit, once checked
            action = await self.adrive(ep, game.turn(ep, step, obs))
        except asyncio.CancelledError:
            return
        except BaseException as e:  # noqa: BLE001  (re-raised after the pool: reraise)
            self.fail(e)
            return
        if self.on_step is not None:
            self.on_step()
        with self._cv:
            self.running.discard(j)
            self.ready[j] = action
            self._cv.notify_all()

    def _ended(self, j: int, state, steps: int, returns: np.ndarray) -> None:
        """Job ``j`` ended (its final state): kept in :attr:`done`, and ``finish`` runs on a
        finishing thread (its end-of-game exchanges go through :meth:`drive`)."""
        with self._cv:
            game, ep = self.live.pop(j)
        row = self.jobs[j][0]
        played = self.done[row] = Played(state, steps, returns, ep)
        self.tick()
        self.finishing.append(self._finisher.submit(self._finish_one, played, game, row))

    def _finish_one(self, played: Played, game: Game, row: int) -> None:
        if self.stopped():
            return
        try:
            self.finish(played, game, row)
        except BaseException as e:  # noqa: BLE001  (re-raised after the pool: reraise)
            self.fail(e)
        self.tick()

    def busy(self) -> bool:
        """Whether a finishing thread still works on an ended episode."""
        return not all(f.done() for f in self.finishing)


#: Slots a tick observes and steps at most, ``R`` (the rest the next ticks, which then do not
#: wait for a reply): observations are large (a bomb's three rows are 54 kB), and handing the
#: host every slot's observation or state each tick would cost far more than stepping the few
#: whose actions are ready (``python -m eval.benchmarks.llm_tick split 256``).
OBSERVE = 32

#: Threads that finish ended episodes (end-of-game exchanges, transcript records) at once.
FINISHERS = 8


def _guard():
    return hostonly.no_dispatch() if hostonly.enforced() else contextlib.nullcontext()


#: The host each tick callback slot calls (one LLM run per process at a time).
_HOSTS: dict[str, Host] = {}


@dataclasses.dataclass(frozen=True)
class _Tick:
    """The rollout's host callback; compares by value (slot, slots ``k`` and the action's
    tree and shapes), so every run in a process on the same environment and chunk size
    reuses one compiled rollout."""

    slot: str
    k: int
    treedef: Any
    leaves: tuple

    @property
    def r(self) -> int:
        """Slots a tick observes and steps at most (:data:`OBSERVE`, at most ``k``)."""
        return min(self.k, OBSERVE)

    @property
    def struct(self):
        """The actions of ``r`` stepped slots: ``jax.ShapeDtypeStruct`` pytree ``[r, …]``."""
        return jax.tree.unflatten(self.treedef, [jax.ShapeDtypeStruct((self.r, *s.shape),
                                                                      s.dtype)
                                                 for s in self.leaves])

    def __call__(self, *args):
        return _HOSTS[self.slot].tick_cb(self.struct, *args)


def _take(tree, i):
    """Rows ``i`` (int ``[R]``) of every leaf of ``tree``."""
    return jax.tree.map(lambda x: x[i], tree)


def _put(tree, at, rows):
    """``tree`` with rows ``at`` (int ``[R]``; out of range: left as they are) set to
    ``rows``."""
    return jax.tree.map(lambda x, y: x.at[at].set(y, mode="drop"), tree, rows)


def _select(mask, a, b):
    """Per row (``mask`` bool ``[R]``), tree ``a`` where true, else ``b``."""
    return jax.tree.map(lambda x, y: jnp.where(mask.reshape(mask.shape + (1,) * (x.ndim - 1)),
                                               x, y), a, b)


@partial(jax.jit, static_argnums=(0, 1, 2))
def _play(env, tick: _Tick, max_steps: int, keys, params, n_jobs):
    """The batched rollout (module docstring): ``keys`` ``[N]`` and ``params`` ``[N, …]`` of
    the jobs (rows past ``n_jobs`` unused), ``tick.k`` slots, at most ``tick.r`` of them
    observed and stepped a tick (gathered, stepped, scattered back); returns the jobs
    started."""
    k, r, n = tick.k, tick.r, keys.shape[0]
    reset_k, _, play_k = jax.vmap(split_episode_key)(keys)

    def fresh(job):  # slot contents of jobs ``job`` (clipped: unused rows are selected away)
        j = jnp.clip(job, 0, n - 1)
        p = _take(params, j)
        _, state = jax.vmap(env.reset)(reset_k[j], p)
        return state, p, play_k[j]

    job = jnp.where(jnp.arange(k) < n_jobs, jnp.arange(k), -1).astype(jnp.int32)
    state, p, pk = fresh(job)
    zeros = jnp.zeros((k,), jnp.int32)
    ret = jnp.zeros((k, env.n_agents), jnp.float32)
    carry = dict(state=state, params=p, play=pk, job=job, t=zeros, ret=ret,
                 next=jnp.int32(k), fin_job=jnp.full((r,), -1, jnp.int32),
                 fin_state=_take(state, jnp.zeros((r,), jnp.int32)),
                 fin_len=jnp.zeros((r,), jnp.int32), fin_ret=ret[:r], stop=jnp.bool_(False),
                 stale=job >= 0)

    def body(c):
        # observe only up to r slots the host has not seen since they stepped or started
        idx = jnp.nonzero(c["stale"], size=r, fill_value=k)[0]
        i = jnp.minimum(idx, k - 1)
        obs = jax.vmap(env.observe)(_take(c["state"], i), _take(c["params"], i))
        stale = c["stale"].at[idx].set(False, mode="drop")
        slot, actions, stop = jax.pure_callback(
            tick, (jax.ShapeDtypeStruct((r,), jnp.int32), tick.struct,
                   jax.ShapeDtypeStruct((), jnp.bool_)),
            obs, jnp.where(idx < k, c["job"][i], -1), c["t"][i], c["job"],
            jnp.sum(stale, dtype=jnp.int32), c["fin_job"], c["fin_state"], c["fin_len"],
            c["fin_ret"])
        # step the (at most r) slots the host answered, gathered; scatter them back
        go = (slot < k) & ~stop
        at, s = jnp.where(go, slot, k), jnp.minimum(slot, k - 1)
        ps, play, t = _take(c["params"], s), c["play"][s], c["t"][s]
        env_key = jax.vmap(lambda key, t: step_keys(key, t)[0])(play, t)
        _, new, reward, term, trunc, _ = jax.vmap(env.step)(env_key, _take(c["state"], s),
                                                            actions, ps)
        ret, t = c["ret"][s] + reward, t + 1
        done = go & (term | trunc | (t >= max_steps))
        cand = c["next"] + jnp.cumsum(done) - 1
        job = jnp.where(done, jnp.where(cand < n_jobs, cand, -1), c["job"][s]).astype(jnp.int32)
        refill = done & (job >= 0)
        fs, fp, fk = jax.lax.cond(jnp.any(refill), lambda: fresh(job), lambda: (new, ps, play))
        return dict(state=_put(c["state"], at, _select(refill, fs, new)),
                    params=_put(c["params"], at, _select(refill, fp, ps)),
                    play=_put(c["play"], at, _select(refill, fk, play)),
                    job=c["job"].at[at].set(job, mode="drop"),
                    t=c["t"].at[at].set(jnp.where(done, 0, t), mode="drop"),
                    ret=c["ret"].at[at].set(jnp.where(done[:, None], 0.0, ret), mode="drop"),
                    next=c["next"] + jnp.sum(done, dtype=jnp.int32),
                    fin_job=jnp.where(done, c["job"][s], -1), fin_state=new, fin_len=t,
                    fin_ret=ret, stop=stop, stale=stale.at[at].set(~done | refill, mode="drop"))

    def cond(c):
        return ~c["stop"] & (jnp.any(c["job"] >= 0) | jnp.any(c["fin_job"] >= 0))

    return jax.lax.while_loop(cond, body, carry)["next"]


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
    """Play ``jobs`` (``(row, game, episode index)``) with up to ``workers`` episodes in play
    at once, in one batched rollout (module docstring; row ``row`` of ``keys`` and of the
    batched ``params``), and call ``finish(played, game, row)`` on a finishing thread as each
    ends; ``{row: Played}``.

    The rollout has ``min(workers, len(keys))`` slots, so it compiles once per environment
    and chunk size (a warm-up call with no job, before the clock starts); it runs on a
    daemon thread, watched by the calling thread (every :data:`POLL_S` s): a stop signal, an
    error of a turn or of ``finish``, or no progress for ``stall_s`` seconds
    (:class:`Stalled`) stops the pool; the rollout then ends at its next tick, and anything
    still running after :data:`GRACE_S` s (a ``finish`` stuck outside the client) is
    abandoned: the process exits without waiting for it (:func:`_exit_if_alive`).

    Raises:
        what stopped the pool (:class:`Host`: ``KeyboardInterrupt`` on SIGINT / SIGTERM,
        :class:`Stalled`, or the first error of a turn or of ``finish``).
    """
    struct, max_steps = jobs[0][1].action_struct(), jobs[0][1].max_steps(env)
    keys = np.asarray(keys)
    rows = np.array([b for b, _, _ in jobs] + [jobs[0][0]] * (len(keys) - len(jobs)))
    job_keys = keys[rows]
    job_params = jax.tree.map(lambda x: np.asarray(x)[rows], params)
    leaves, treedef = jax.tree.flatten(struct)
    tick = _Tick("llm", max(1, min(int(workers), len(keys))), treedef,
                 tuple(jax.ShapeDtypeStruct(s.shape, s.dtype) for s in leaves))
    _HOSTS[tick.slot] = host
    signals.resume()  # a halt of an earlier pool in this process is over
    host._begin(jobs, finish)
    _play(env, tick, max_steps, job_keys, job_params, np.int32(0)).block_until_ready()  # compile

    def work() -> None:
        try:
            _play(env, tick, max_steps, job_keys, job_params,
                  np.int32(len(jobs))).block_until_ready()
        except BaseException as e:  # noqa: BLE001  (re-raised by the watching thread)
            host.fail(e)

    thread = threading.Thread(target=work, name="jaxcollab-llm-play", daemon=True)
    start, cpu0 = time.perf_counter(), time.process_time()
    host.tick()
    thread.start()
    busy = lambda: thread.is_alive() or host.busy()  # noqa: E731
    try:
        _watch(busy, host, stall_s)
    finally:  # the halt, or an abandoned chunk's, ends with this pool
        ReplyCache.flush_all()  # the replies that arrived are in the cache file
        signals.resume()
        if not busy():
            preempt.settled()
    host.play_s += time.perf_counter() - start
    host.play_cpu_s += time.process_time() - cpu0
    host.reraise()
    return dict(host.done)


#: seconds between the watching thread's looks at the pool (and a waiting tick's at a stop)
POLL_S = 0.05
#: seconds a stopping pool waits for its rollout and finishing threads before abandoning them
GRACE_S = 5.0


def _watch(busy: Callable[[], bool], host: Host, stall_s: float | None) -> None:
    """Wait while ``busy()``, stopping the pool on a signal, an error or a stall; after
    :data:`GRACE_S` s of stopping, abandon what still runs (:func:`_exit_if_alive`)."""
    stopping = None
    while busy():
        try:
            time.sleep(POLL_S)
            if stall_s is not None:
                host.check_stall(stall_s)
            if stopping is None and host.stopped():
                stopping = time.monotonic()
        except KeyboardInterrupt as e:  # the main thread's SIGINT / SIGTERM (signals.watch)
            host.fail(e)
            stopping = stopping or time.monotonic()
        if stopping is not None and time.monotonic() - stopping > GRACE_S:
            log.warning("the pool's rollout or finishing did not stop within %.0f s; leaving "
                        "it", GRACE_S)
            signum = signals.received() or (signal.SIGINT if isinstance(
                host.error, KeyboardInterrupt) else 0)
            atexit.register(_exit_if_alive, busy, 128 + signum if signum else 1)
            return


def _exit_if_alive(busy: Callable[[], bool], code: int) -> None:
    """At exit, leave at once (status ``code``) if an abandoned pool still runs: JAX's own
    exit hooks would tear the backend down under its rollout (registered last, so it runs
    first)."""
    if busy():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


class Stalled(LLMError):
    """No reply, callback or episode finished for ``llm.stall_s`` seconds."""


__all__ = ["Host", "Played", "Stalled", "play_pool"]
