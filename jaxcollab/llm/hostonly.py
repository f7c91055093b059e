"""A guard that makes any JAX dispatch raise: the LLM host callbacks run plain Python / NumPy.

Why: XLA:CPU runs a ``pure_callback`` on a thread of its own pool, and an episode waiting on a
server holds that thread. A JAX operation dispatched from inside the callback (``jnp.full``
building a no-op action, a jitted encoder) needs a pool thread too; with every thread held by a
waiting callback, no one frees one, and the run hangs (issue 38: 32 callbacks in
``apply_primitive`` at ``llm.concurrency=32``). So between a reply and the action it returns,
the host runs NumPy only, and :func:`no_dispatch` proves it.

:func:`no_dispatch` makes the calling thread raise :class:`DispatchInCallback` on the first JAX
primitive it would execute: it turns jit off on that thread (``jax.disable_jit``, so a compiled
function, even one already cached by JAX's C++ fast path, runs primitive by primitive), forbids
host-to-device transfers (``jax.device_put`` of a NumPy array) and makes the eager evaluation
of a primitive (``jax._src.core.EvalTrace.process_primitive``, where every ``jnp`` / ``lax``
operation and array arithmetic ends when nothing traces) raise on that thread. Host code that
only touches NumPy arrays and Python values is unaffected.
:class:`jaxcollab.llm.play.Host` runs every callback under it when the environment variable
``JAXCOLLAB_NO_DISPATCH`` is ``1`` (the test suite sets it, so every LLM test checks it).
"""

from __future__ import annotations

import contextlib
import os
import threading

import jax
from jax._src import core

_local = threading.local()
_patched = threading.Lock()
_original = core.EvalTrace.process_primitive


class DispatchInCallback(RuntimeError):
    """A JAX operation was executed where only host code may run (module docstring)."""


def _guarded(self, primitive, args, params, /):
    if getattr(_local, "depth", 0):
        raise DispatchInCallback(
            f"JAX primitive {primitive.name!r} dispatched inside an LLM host callback: the host "
            "side must be plain NumPy (a JAX op there waits on the XLA:CPU pool its own callback "
            "holds; see jaxcollab.llm.hostonly)")
    return _original(self, primitive, args, params)


def _install() -> None:
    with _patched:
        if core.EvalTrace.process_primitive is not _guarded:
            core.EvalTrace.process_primitive = _guarded


@contextlib.contextmanager
def no_dispatch():
    """Within the block, on this thread, any JAX primitive executed raises
    :class:`DispatchInCallback` (module docstring); other threads are unaffected."""
    _install()
    _local.depth = getattr(_local, "depth", 0) + 1
    try:
        with jax.disable_jit(), jax.transfer_guard_host_to_device("disallow_explicit"):
            yield
    finally:
        _local.depth -= 1


def enforced() -> bool:
    """Whether host callbacks run under :func:`no_dispatch` (``JAXCOLLAB_NO_DISPATCH=1``)."""
    return os.environ.get("JAXCOLLAB_NO_DISPATCH", "") == "1"


__all__ = ["DispatchInCallback", "enforced", "no_dispatch"]
