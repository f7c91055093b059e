"""How many XLA:CPU devices a process has and which of them meshes span: one per core for a
data-parallel run on the CPU (:func:`use_cpu_devices`), and every device of every process in
every mesh; how hard XLA:CPU optimises what it compiles (:func:`use_xla_cpu_opt_level`)."""

from __future__ import annotations

import os

import jax


def compute_devices() -> list:
    """The devices meshes span: every device of every process (:func:`jax.devices`)."""
    return jax.devices()


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


OPT_LEVEL_FLAG = "--xla_backend_optimization_level"


def check_xla_cpu_opt_level(level) -> None:
    """Raises ValueError unless ``level`` is None or an int in 0..3
    (:func:`use_xla_cpu_opt_level`)."""
    if level is not None and (type(level) is not int or not 0 <= level <= 3):
        raise ValueError("null or an optimisation level 0..3")


def use_xla_cpu_opt_level(level: int | None) -> bool:
    """Before the backend starts: compile with XLA's backend (LLVM) optimisation ``level``, by
    adding ``--xla_backend_optimization_level=<level>`` to ``XLA_FLAGS``. On the main job
    (``train/collab.py experiment=parity_separation preset=cpu``, the README's quick start),
    run for 2 steps so that nearly all of it is compiling, level 1 took 165 CPU s against
    194 at XLA's default on a 2-core CPU (one run each); training steps/s did not change in an
    earlier measurement. A process-wide setting: for a command line's own process, not a
    library call.

    Args:
        level: None (leave XLA's default) or 0..3.

    Returns:
        whether the flag was set: not where ``level`` is None, the user's ``XLA_FLAGS`` already
        name a level, or the backend already started (its flags were read).

    Raises:
        ValueError: ``level`` is not None or an int in 0..3.
    """
    check_xla_cpu_opt_level(level)
    from jax._src import xla_bridge

    flags = os.environ.get("XLA_FLAGS", "")
    if level is None or OPT_LEVEL_FLAG in flags or xla_bridge.backends_are_initialized():
        return False
    os.environ["XLA_FLAGS"] = f"{flags} {OPT_LEVEL_FLAG}={level}".strip()
    return True
