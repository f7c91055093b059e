"""Which devices meshes span: every device, less the CPU devices a process added only to hold
computations waiting in host callbacks (an LLM episode waiting on its reply)."""

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
