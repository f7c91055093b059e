"""How many XLA:CPU devices a process has and which of them meshes span: one per core for a
data-parallel run on the CPU (:func:`use_cpu_devices`), and every device less those a process
added only to hold computations waiting in host callbacks (an LLM episode waiting on its
reply)."""

from __future__ import annotations

import os
import re

import jax

#: How many computations XLA:CPU's PJRT client runs at once on one device (its
#: ``max_inflight_computations_per_device``, which Python cannot set): a computation waiting in
#: a host callback (an LLM episode waiting on its reply) holds one of them, so one CPU device
#: has at most this many episodes waiting at once, whatever the thread pool's size.
CPU_INFLIGHT_PER_DEVICE = 32

#: CPU devices added per process only to hold computations waiting in host callbacks
#: (:func:`add_callback_devices`); meshes leave them out.
_callback_devices = 0


def add_callback_devices(concurrency: int) -> int:
    """Before the CPU backend starts: give it enough devices for ``concurrency`` computations
    waiting in host callbacks at once (:data:`CPU_INFLIGHT_PER_DEVICE` each), unless the user
    set the device count (``jax_num_cpu_devices``, ``--xla_force_host_platform_device_count``).
    The added devices stay out of every mesh (:func:`compute_devices`), so batch shapes and
    shardings elsewhere in the process do not change.

    Returns:
        the CPU devices there will be (1: none added).
    """
    global _callback_devices
    want = -(-int(concurrency) // CPU_INFLIGHT_PER_DEVICE)
    forced = re.search(r"xla_force_host_platform_device_count=(\d+)",
                       os.environ.get("XLA_FLAGS", ""))
    if jax.config.jax_num_cpu_devices != -1:
        return jax.config.jax_num_cpu_devices
    if forced:
        return int(forced.group(1))
    if want <= 1:
        return 1
    jax.config.update("jax_num_cpu_devices", want)
    _callback_devices = want - 1
    return want


def compute_devices() -> list:
    """The devices meshes span: every device of every process (:func:`jax.devices`), less the
    CPU devices each process added for waiting host callbacks (:func:`add_callback_devices`)."""
    devices = jax.devices()
    if not _callback_devices or jax.default_backend() != "cpu":
        return devices
    keep = len(jax.local_devices()) - _callback_devices
    rank: dict[int, int] = {}  # a device's index among its process's devices

    def kept(d) -> bool:
        rank[d.process_index] = rank.get(d.process_index, -1) + 1
        return rank[d.process_index] < keep

    return [d for d in devices if kept(d)]


def cpu_cores() -> int:
    """The CPU cores this process may run on (its affinity mask; ``os.cpu_count()`` where the
    platform has none)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def cpu_device_count(requested: int | str | None, batch: int) -> int | None:
    """The XLA:CPU device count ``requested`` asks for (:func:`use_cpu_devices`), or None.

    Raises:
        ValueError: ``requested`` is not None, a count >= 1 or ``"cores"``, or is a count that
            does not divide ``batch``.
    """
    if requested is None:
        return None
    if requested == "cores":
        return max(d for d in range(1, cpu_cores() + 1) if batch % d == 0)
    if not isinstance(requested, int) or isinstance(requested, bool) or requested < 1:
        raise ValueError("null, a count >= 1 or 'cores'")
    if batch % requested:
        raise ValueError(f"a count that divides the batch size {batch} ({requested} does not), "
                         "or 'cores'")
    return requested


def use_cpu_devices(requested: int | str | None, batch: int) -> int | None:
    """Before the CPU backend starts: give XLA:CPU ``requested`` devices, so that the data axis
    of every mesh (:mod:`jaxcollab.scale.mesh`) splits each batch over them. XLA:CPU runs one
    device's program on one thread (a small model's training step used 0.98 cores on one device
    and both cores of a 2-core machine on two, at 1.8x the steps/s), so one device per core is
    what lets a data-parallel step use the whole CPU. A process-wide setting: for a command
    line's own process, not a library call.

    Args:
        requested: None (leave JAX's setting: one device, or what ``JAX_NUM_CPU_DEVICES`` /
            ``--xla_force_host_platform_device_count`` say), a device count >= 1, or
            ``"cores"``: one per core (:func:`cpu_cores`), as many as divide ``batch``.
        batch: the batch size the data axis must divide (a ``"cores"`` count is lowered to
            the largest divisor of it).

    Returns:
        the device count set, or None where nothing was set: ``requested`` None, the user set
        a count, or the backend already started (its devices stay as they are).

    Raises:
        ValueError: as :func:`cpu_device_count`.
    """
    count = cpu_device_count(requested, batch)
    from jax._src import xla_bridge  # no public way to ask whether a backend started

    user_set = (jax.config.jax_num_cpu_devices != -1
                or "xla_force_host_platform_device_count" in os.environ.get("XLA_FLAGS", ""))
    if count is None or xla_bridge.backends_are_initialized() or user_set:
        return None
    jax.config.update("jax_num_cpu_devices", count)
    return count
