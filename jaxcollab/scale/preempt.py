"""Preemption-safe runs: SIGTERM / SIGINT ask the run to stop at the next safe point.

A scheduler (SLURM, a TPU queued resource, Kubernetes) sends SIGTERM some time before killing
a job; Ctrl-C sends SIGINT. Inside :func:`guard` either signal only sets a flag. Loops poll
:func:`requested` at their safe points (between compiled training chunks, between rollout
chunks), save what they need (:class:`TrainState` for a training round; finished episodes for
a rollout, :func:`resumable_episodes`) and raise :class:`Preempted`, which exits the process
with ``128 + signal`` and no traceback. Rerunning the same command resumes from what was saved.
A second SIGINT interrupts at once (``KeyboardInterrupt``).

A chunk of episodes may take minutes to compile (a Keep-Talking rollout) or to play, and the
main thread cannot run a signal handler while it waits inside XLA. :func:`interruptible` runs
the chunk on a worker thread while the main thread polls the flag, so a signal stops the run
within :data:`POLL_S` seconds; the unfinished chunk is abandoned (it is played again on the
rerun) and the process exits without waiting for it.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp
from jax.experimental import multihost_utils

SIGNALS = (signal.SIGTERM, signal.SIGINT)
#: seconds between two looks at the stop flag while a chunk compiles or plays
POLL_S = 0.05
_received: list[int] = []
#: set when :func:`interruptible` abandons a chunk on a signal (until the next :func:`guard`)
_abandoned: list[bool] = []


class Preempted(SystemExit):
    """Raised after a loop saved its state on a signal; exits with status ``128 + signum``."""

    def __init__(self, signum: int, saved: str):
        super().__init__(128 + signum)
        self.signum, self.saved = signum, saved

    def __str__(self) -> str:
        return f"stopped by {signal.Signals(self.signum).name}; saved {self.saved}; rerun to resume"


def _on_signal(signum, frame) -> None:
    if signum == signal.SIGINT and _received:
        raise KeyboardInterrupt
    _received.append(signum)
    print(f"{signal.Signals(signum).name} received: stopping at the next safe point", flush=True)


@contextlib.contextmanager
def guard() -> Iterator[None]:
    """Within the block, SIGTERM / SIGINT set the flag read by :func:`requested` instead of
    killing the process (re-entrant; a no-op outside the main thread, where Python cannot
    handle signals)."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is _on_signal:
        yield
        return
    old = {s: signal.signal(s, _on_signal) for s in SIGNALS}
    _abandoned.clear()
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


def received() -> int:
    """The signal number this process received inside :func:`guard` (0 if none): no
    collective, so any thread may ask."""
    return _received[0] if _received else 0


def abandoned() -> bool:
    """Whether :func:`interruptible` abandoned a chunk on a signal since the last
    :func:`guard` began: threads still playing it should stop (the interpreter's exit waits
    for non-daemon threads, e.g. a thread pool's, before any exit hook)."""
    return bool(_abandoned)


def settled() -> None:
    """Forget an abandoned chunk (:func:`abandoned`) once its threads have ended, so later
    work in this process (a lone request) is not taken for part of it."""
    _abandoned.clear()


def requested() -> int:
    """The signal number if any process received one, else 0.

    In a multi-process job this is a collective (every process must call it at the same point),
    so all processes stop after the same chunk.
    """
    mine = received()
    if jax.process_count() == 1:
        return mine
    return int(np.max(multihost_utils.process_allgather(np.int32(mine))))


def stop(signum: int, saved: str) -> None:
    """Clear the flag, say what was saved, and raise :class:`Preempted` (call after saving)."""
    _received.clear()
    stopped = Preempted(signum, saved)
    print(stopped, flush=True)
    raise stopped


def guarded() -> bool:
    """Whether a signal now only sets the flag (inside :func:`guard`, on the main thread)."""
    return threading.current_thread() is threading.main_thread() and \
        signal.getsignal(signal.SIGTERM) is _on_signal


def _exit_if_running(worker: threading.Thread, code: int) -> None:
    """At exit, leave at once if an abandoned chunk still runs: JAX's own exit hooks would
    tear down the backend under its XLA compile or run (an abort, exit status -6)."""
    if not worker.is_alive():
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def exit_past(worker: threading.Thread, code: int) -> None:
    """Let the process exit with status ``code`` without waiting for daemon thread ``worker``
    should it still run an XLA compile or program at exit (:func:`_exit_if_running`, registered
    last, so it runs first)."""
    atexit.register(_exit_if_running, worker, code)


def interruptible(fn: Callable[..., Any], *args: Any, saved: str) -> Any:
    """``fn(*args)``, which a SIGTERM / SIGINT stops within :data:`POLL_S` seconds.

    Inside :func:`guard` (single process, main thread) ``fn`` runs on a daemon thread while the
    main thread polls the flag; on a signal the call is abandoned and :func:`stop` raises
    :class:`Preempted` with ``saved`` (what is already on disk; the message adds "the
    work in progress was dropped"), and the process exits with
    ``128 + signal`` without waiting for ``fn`` (an atexit hook registered last, so it runs
    first). Elsewhere (no guard, or a multi-process job, where stopping is a collective taken at
    the caller's safe points) it is a plain call.

    Raises:
        whatever ``fn`` raises; :class:`Preempted` on a signal.
    """
    if not guarded() or jax.process_count() > 1:
        return fn(*args)
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["out"] = jax.block_until_ready(fn(*args))  # the run too, not just dispatch
        except BaseException as e:  # noqa: BLE001  (re-raised on the main thread)
            box["error"] = e

    worker = threading.Thread(target=work, name="jaxcollab-chunk", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(POLL_S)
        if _received and worker.is_alive():
            _abandoned.append(True)
            exit_past(worker, 128 + _received[0])
            stop(_received[0], f"{saved} (the work in progress was dropped)")
    if "error" in box:
        raise box["error"]
    return box["out"]


def _array(x: Any) -> Any:
    """Host scalars as 0-d NumPy arrays (orbax stores arrays, not NumPy scalars)."""
    return x if isinstance(x, jax.Array) else np.asarray(x)


class TrainState:
    """An orbax checkpoint of a training loop's state in the middle of a round.

    The state is any pytree of arrays (parameters, optimiser state, step counters, best-so-far);
    it is saved by every process together (orbax's multi-host save: each writes its shards,
    process 0 the metadata) to a temporary directory renamed on commit, so a killed save leaves
    the previous state or none.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path).absolute()

    def exists(self) -> bool:
        return self.path.exists()

    def save(self, state: Any) -> None:
        leaves = [_array(x) for x in jax.tree.leaves(state)]
        with ocp.StandardCheckpointer() as ckpt:
            ckpt.save(self.path, {str(i): x for i, x in enumerate(leaves)}, force=True)

    def restore(self, like: Any) -> Any:
        """The saved state in the tree structure, shapes, dtypes and shardings of ``like``.

        Raises:
            FileNotFoundError: nothing saved at this path.
        """
        if not self.exists():
            raise FileNotFoundError(f"no training state at {self.path}")
        leaves, treedef = jax.tree.flatten(like)
        target = {str(i): ocp.utils.to_shape_dtype_struct(_array(x)) for i, x in enumerate(leaves)}
        with ocp.StandardCheckpointer() as ckpt:
            restored = ckpt.restore(self.path, target)
        return jax.tree.unflatten(treedef, [restored[str(i)] for i in range(len(leaves))])

    def remove(self) -> None:
        """Delete the state (process 0; the others wait) once the round is finished."""
        if jax.process_index() == 0 and self.exists():
            shutil.rmtree(self.path)
        if jax.process_count() > 1:
            multihost_utils.sync_global_devices(f"removed {self.path}")


class ChunkTimer:
    """``play`` for :func:`resumable_episodes`, timed: the first call plays its chunk twice (the
    first call compiles) and times the second, so :attr:`episodes_per_second` counts played
    chunks only, without compilation or chunks loaded from disk."""

    def __init__(self, play: Callable[[Any], Mapping[str, Any]]):
        self.play, self.episodes, self.seconds, self.warm = play, 0, 0.0, False

    def __call__(self, episodes: Any) -> Mapping[str, Any]:
        if not self.warm:
            jax.block_until_ready(self.play(episodes))
            self.warm = True
        start = time.perf_counter()
        out = jax.block_until_ready(self.play(episodes))
        self.seconds += time.perf_counter() - start
        self.episodes += len(episodes)
        return out

    @property
    def episodes_per_second(self) -> float | None:
        """Played episodes per second of play (padding included); None if none were played."""
        return self.episodes / self.seconds if self.seconds else None


def resumable_episodes(play: Callable[[Any], Mapping[str, Any]], episodes: Any, chunk: int,
                       save_dir: str | Path | None) -> dict[str, np.ndarray]:
    """Play episodes ``chunk`` at a time, keeping every finished chunk on disk.

    ``play(inputs [chunk, ...]) -> {name: array [chunk, ...]}`` plays one chunk of the
    per-episode inputs ``episodes`` (keys, or indices into the caller's keys and params; e.g.
    a :func:`jaxcollab.rollout` and the per-episode numbers it keeps). Every call gets exactly
    ``chunk`` rows (the last chunk is padded with copies of its first row, dropped from the
    results), so ``play`` compiles once. Chunk ``i`` is saved to
    ``save_dir/episodes_<i>.npz`` by process 0 as soon as it finishes; chunks already there are
    loaded instead of played (each saved chunk is announced on stdout: ``episodes: chunk
    <i>/<n> saved in <dir>``). A SIGTERM / SIGINT stops the loop (:class:`Preempted`) keeping
    the finished chunks: at once while a chunk compiles or plays (:func:`interruptible`; that
    chunk is played again on the rerun), or before the next chunk when it arrived between
    chunks or earlier (a run over several environments, under an outer :func:`guard`, stops
    before compiling the next one). Episode inputs do not depend on the chunking, so a resumed
    run gives the same arrays as an uninterrupted one.
    ``save_dir=None``: nothing is saved and signals are not intercepted.

    Returns:
        ``{name: array [n_episodes, ...]}``, the chunks concatenated in episode order.

    Raises:
        ValueError: ``chunk`` < 1. Preempted: a signal arrived (finished chunks are saved).
    """
    if chunk < 1:
        raise ValueError(f"chunk must be a positive number of episodes, got {chunk!r}")
    save_dir = None if save_dir is None else Path(save_dir)
    n = len(episodes)
    n_chunks, parts = -(-n // chunk), []

    def played(start: int, call: Callable[..., Mapping[str, Any]]) -> dict[str, np.ndarray]:
        rows = episodes[start:start + chunk]  # padded to ``chunk`` rows: one compile
        pad = chunk - len(rows)
        if pad:
            rows = np.concatenate([rows, np.repeat(rows[:1], pad, axis=0)])
        return {k: np.asarray(v)[:chunk - pad] for k, v in call(rows).items()}

    with guard() if save_dir is not None else contextlib.nullcontext():
        for i, start in enumerate(range(0, n, chunk)):
            if save_dir is None:
                parts.append(played(start, play))
                continue
            path = save_dir / f"episodes_{i}.npz"
            if path.exists():
                with np.load(path) as z:
                    parts.append(dict(z))
                continue
            saved = f"{i} chunks of {chunk} episodes in {save_dir}"
            if signum := requested():  # it arrived between chunks, or before this call
                stop(signum, saved)
            parts.append(played(start, lambda rows, saved=saved: interruptible(play, rows,
                                                                          saved=saved)))
            if jax.process_index() == 0:
                save_dir.mkdir(parents=True, exist_ok=True)
                tmp = path.with_name(path.name + ".tmp.npz")
                np.savez(tmp, **parts[-1])
                tmp.replace(path)
                print(f"episodes: chunk {i + 1}/{n_chunks} saved in {save_dir}", flush=True)
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
