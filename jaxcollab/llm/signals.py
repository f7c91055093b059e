"""SIGINT / SIGTERM seen from any thread, so a stop request reaches the LLM host callback.

XLA may run a ``pure_callback`` on one of its own threads while the main thread waits inside the
compiled rollout; Python runs signal handlers only on the main thread, and only between
bytecodes, so a Ctrl-C would wait for the whole rollout. :func:`watch` registers a pipe with
``signal.set_wakeup_fd``: the interpreter's C-level handler writes each signal's number to it at
once, from whatever thread, and :func:`interrupted` reads it there. The host callback and the
chat client poll it and stop (no-ops for the rest of the rollout; requests in flight cancelled);
:func:`halt` does the same without a signal (an LLM pool stopping on an error or a stall), and a
second signal exits the process at once.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading

_STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})
_state = {"fd": None, "stopped": False, "signum": 0}
#: set by :func:`halt`: every request in flight is cancelled (an LLM pool is stopping)
_halted = threading.Event()


@contextlib.contextmanager
def watch():
    """Within the block, SIGTERM raises ``KeyboardInterrupt`` as SIGINT does (on the main
    thread), unless a :func:`jaxcollab.scale.preempt.guard` already turns both into its stop
    flag (then kept: the run stops at its next safe point with the signal's own exit status),
    both are visible to :func:`interrupted` from any thread, and a *second* SIGINT / SIGTERM
    exits the process at once (status ``128 + signal``: the user asked twice; whatever is
    stuck is not waited for). Main thread only; a no-op elsewhere."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    from jaxcollab.scale import preempt

    r, w = os.pipe()
    os.set_blocking(r, False)
    os.set_blocking(w, False)

    def interrupt(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    def twice(first):
        def handler(signum, frame):
            if _state["signum"]:
                print(f"{signal.Signals(signum).name} again: exiting now", file=sys.stderr,
                      flush=True)
                sys.stdout.flush()
                os._exit(128 + signum)
            _state["signum"] = signum
            if callable(first):
                first(signum, frame)
        return handler

    firsts = {signal.SIGINT: signal.getsignal(signal.SIGINT),
              signal.SIGTERM: signal.getsignal(signal.SIGTERM) if preempt.guarded()
              else interrupt}
    previous = {s: signal.signal(s, twice(h)) for s, h in firsts.items()}
    previous_fd = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    _state.update(fd=r, stopped=False, signum=0)
    try:
        yield
    finally:
        signal.set_wakeup_fd(previous_fd)
        for s, h in previous.items():
            signal.signal(s, h)
        _state.update(fd=None, stopped=False, signum=0)
        os.close(r)
        os.close(w)


def received() -> int:
    """The first stop signal's number inside :func:`watch` (0 if none)."""
    return int(_state["signum"])


def halt() -> None:
    """Make :func:`interrupted` true until :func:`resume`: the requests in flight are
    cancelled (an LLM pool stopping on an error or a stall)."""
    _halted.set()


def resume() -> None:
    """End a :func:`halt` (a new pool starts)."""
    _halted.clear()


def interrupted() -> bool:
    """Whether SIGINT or SIGTERM arrived inside :func:`watch` (sticky until the block ends),
    the pool was halted (:func:`halt`), or a :func:`jaxcollab.scale.preempt.guard` took one or
    abandoned the chunk in play on one (its main thread has then left the block, while the
    chunk's episodes still play on other threads: they must stop too, or the interpreter's
    exit waits for them)."""
    from jaxcollab.scale import preempt

    if _halted.is_set() or preempt.received() or preempt.abandoned():
        return True
    fd = _state["fd"]
    if fd is not None and not _state["stopped"]:
        try:
            data = os.read(fd, 512)
        except (BlockingIOError, OSError):
            data = b""
        _state["stopped"] = any(b in _STOP_SIGNALS for b in data)
    return bool(_state["stopped"])
