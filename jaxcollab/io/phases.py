"""Where a run's time goes: seconds per named phase, with XLA compile time split out.

A driver opens one :class:`Phases` around its work; library code marks what it is doing with
``with phase("training steps"): ...``, a no-op when no :class:`Phases` is open (library calls
from tests or notebooks pay nothing). Phases nest: the inner one pauses the outer, so each
second is charged to one phase; time no phase claims is ``other``. Compiles come from JAX's own
compile-duration events (:mod:`jax.monitoring`: the lowering to MLIR and the XLA backend
compile, which never nest; tracing stays in its phase, since nested ``jit`` traces would count
twice): their wall time is charged to ``compile`` and taken out of the phase they happened in,
whichever thread compiled — except a thread inside :func:`ahead`, which compiles programs before
they are needed while the driver works on: its compiles overlap the phases, so they are summed
apart, as ``compile_ahead``, and taken out of no phase (waiting for such a compile is the
driver's own ``compile`` phase). Mark phases from the driver's thread only.
"""

from __future__ import annotations

import contextlib
import resource
import threading
import time
from collections.abc import Iterator

import jax

#: JAX's compile-duration events counted as ``compile`` (``jax._src.dispatch``'s names).
COMPILE_EVENTS = ("/jax/core/compile/jaxpr_to_mlir_module_duration",
                  "/jax/core/compile/backend_compile_duration")
#: The phase of the time no ``phase`` claims.
OTHER = "other"

_active: Phases | None = None
#: ``ahead`` is set on a thread inside :func:`ahead`
_thread = threading.local()


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process so far, all threads."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Phases:
    """Seconds per phase over a ``with`` block (one block open at a time).

    Attributes (after the block): ``wall_seconds`` and ``cpu_seconds`` (user + system, all
    threads) of the whole block; ``seconds``: phase → wall seconds, ``compile`` and ``other``
    included (they sum to ``wall_seconds``, but for a compile that straddles a phase switch);
    ``cpu``: phase → CPU seconds while it was current, its compiles included (a compile's CPU
    cannot be told apart, nor that of a compile ahead, charged to the phase it overlapped; on a
    loaded machine these are the figures to compare); ``ahead_seconds``: wall seconds of the
    compiles made inside :func:`ahead` (overlapping the phases, in none of them).

    Raises:
        RuntimeError: entered while another :class:`Phases` is open.
    """

    def __init__(self):
        self.seconds: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self.wall_seconds = self.cpu_seconds = self.ahead_seconds = 0.0
        self._compiled = 0.0  # compile seconds so far, from any thread but those ahead
        self._lock = threading.Lock()
        self._stack: list[str] = []

    def _on_event(self, event: str, duration: float, **_) -> None:
        if event in COMPILE_EVENTS:
            with self._lock:
                if getattr(_thread, "ahead", False):
                    self.ahead_seconds += duration
                else:
                    self._compiled += duration

    def _charge(self) -> None:
        """Charge the time since the last switch to the current phase, its compiles to
        ``compile``."""
        now, compiled, cpu = time.perf_counter(), self._compiled, _cpu_seconds()
        name = self._stack[-1] if self._stack else OTHER
        wall, compiling = now - self._at[0], compiled - self._at[1]
        self.seconds[name] = self.seconds.get(name, 0.0) + max(wall - compiling, 0.0)
        self.seconds["compile"] = self.seconds.get("compile", 0.0) + compiling
        self.cpu[name] = self.cpu.get(name, 0.0) + cpu - self._at[2]
        self._at = (now, compiled, cpu)

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Charge the block's time to ``name`` (see :func:`phase`)."""
        self._charge()
        self._stack.append(name)
        try:
            yield
        finally:
            self._charge()
            self._stack.pop()

    def __enter__(self) -> Phases:
        global _active
        if _active is not None:
            raise RuntimeError("a Phases block is already open")
        _active = self
        jax.monitoring.register_event_duration_secs_listener(self._on_event)
        self._at = self._start = (time.perf_counter(), 0.0, _cpu_seconds())
        return self

    def __exit__(self, *exc) -> None:
        global _active
        self._charge()
        jax.monitoring.unregister_event_duration_listener(self._on_event)
        _active = None
        self.wall_seconds = self._at[0] - self._start[0]
        self.cpu_seconds = self._at[2] - self._start[2]

    def summary(self) -> dict:
        """Seconds: ``{"wall", "cpu", "phases": {name: wall}, "phases_cpu": {name: cpu},
        "compile_ahead"}``, the phases largest first (``compile_ahead``: :attr:`ahead_seconds`)."""
        def ordered(d: dict) -> dict:
            return dict(sorted(d.items(), key=lambda kv: -kv[1]))

        return {"wall": self.wall_seconds, "cpu": self.cpu_seconds,
                "phases": ordered(self.seconds), "phases_cpu": ordered(self.cpu),
                "compile_ahead": self.ahead_seconds}

    def line(self) -> str:
        """One line for the console: the wall and CPU time, each phase's wall time, and the
        compiles made ahead (if any)."""
        parts = ", ".join(f"{k} {v:.1f}" for k, v in self.summary()["phases"].items())
        line = f"time: {self.wall_seconds:.1f} s wall, {self.cpu_seconds:.1f} s CPU; {parts} s"
        if self.ahead_seconds:
            line += f" (and {self.ahead_seconds:.1f} s of compiles ahead, overlapping them)"
        return line


@contextlib.contextmanager
def phase(name: str) -> Iterator[None]:
    """Charge the block's wall time, less its compiles, to ``name`` in the open
    :class:`Phases`; nothing when none is open."""
    if _active is None:
        yield
        return
    with _active.phase(name):
        yield


@contextlib.contextmanager
def ahead() -> Iterator[None]:
    """Within the block, this thread's compiles are compiles ahead (module docstring): summed
    in :attr:`Phases.ahead_seconds`, taken out of no phase. For a worker thread that compiles
    while the driver's thread works on."""
    _thread.ahead = True
    try:
        yield
    finally:
        _thread.ahead = False
