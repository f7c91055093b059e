"""Multi-controller start-up (``jax.distributed``) and what a run records about it.

One Python process runs per host (TPU pod slice, SLURM node, or a local process for tests); each
sees its local devices, and :func:`jaxcollab.scale.mesh.data_mesh` spans all of them. Only
process 0 writes results, logs and plots (:func:`is_main`); orbax checkpoints are written by
every process together (orbax's multi-host save).
"""

from __future__ import annotations

import hashlib
import os

import jax
import numpy as np
from jax.experimental import multihost_utils

#: Environment variables of an explicit (non auto-detected) multi-process launch.
ENV = ("JAX_COORDINATOR_ADDRESS", "JAX_NUM_PROCESSES", "JAX_PROCESS_ID")


def _cluster_detected() -> bool:
    """A launcher JAX can read its process layout from (``jax.distributed`` cluster detection):
    a SLURM job step with several tasks, an Open MPI job with several ranks, or a multi-host
    Cloud TPU slice."""
    env = os.environ
    hosts = env.get("TPU_WORKER_HOSTNAMES") or env.get("TPU_PROCESS_ADDRESSES") or ""
    return (int(env.get("SLURM_NTASKS", "1")) > 1 and "SLURM_PROCID" in env
            or int(env.get("OMPI_COMM_WORLD_SIZE", "1")) > 1
            or "," in hosts)


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None) -> bool:
    """Start JAX's multi-controller runtime when this is a multi-process job; call it before
    any other JAX call (it is a no-op when already initialised).

    Explicit arguments (or the ``JAX_COORDINATOR_ADDRESS`` / ``JAX_NUM_PROCESSES`` /
    ``JAX_PROCESS_ID`` environment variables) win; otherwise a SLURM, Open MPI or multi-host TPU
    environment is auto-detected by :func:`jax.distributed.initialize`; otherwise this is a
    single-process run and nothing happens. On CPU, cross-process collectives use gloo.

    Returns:
        Whether the distributed runtime is running.

    Raises:
        ValueError: only some of the three explicit settings given, or a process id outside
            ``0 .. num_processes - 1``.
    """
    if jax.distributed.is_initialized():
        return True
    env = os.environ
    coordinator_address = coordinator_address or env.get(ENV[0])
    num_processes = num_processes if num_processes is not None else env.get(ENV[1])
    process_id = process_id if process_id is not None else env.get(ENV[2])
    given = [v is not None for v in (coordinator_address, num_processes, process_id)]
    if any(given) and not all(given):
        raise ValueError(f"explicit multi-process launch needs all of {ENV} (coordinator "
                         f"{coordinator_address!r}, processes {num_processes!r}, id "
                         f"{process_id!r})")
    if not any(given) and not _cluster_detected():
        return False
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    if all(given):
        num_processes, process_id = int(num_processes), int(process_id)
        if not 0 <= process_id < num_processes:
            raise ValueError(f"process id {process_id} outside 0..{num_processes - 1}")
        jax.distributed.initialize(coordinator_address, num_processes, process_id)
    else:
        jax.distributed.initialize()
    return True


def is_main() -> bool:
    """Whether this process writes results, logs and plots (process 0)."""
    return jax.process_index() == 0


def run_info() -> dict:
    """What a ``results.json`` records about where it ran: backend, global and local device
    counts, process count and the devices' kinds."""
    return {
        "backend": jax.default_backend(),
        "devices": jax.device_count(),
        "local_devices": jax.local_device_count(),
        "processes": jax.process_count(),
        "device_kind": jax.devices()[0].device_kind,
    }


def same_on_every_process(value: str, what: str) -> None:
    """Raise unless every process has the same ``value`` (e.g. the run directory).

    Raises:
        ValueError: the processes disagree (names ``what`` and this process's value).
    """
    if jax.process_count() == 1:
        return
    try:
        digest = np.frombuffer(hashlib.sha256(value.encode()).digest(), np.uint8)
        multihost_utils.assert_equal(digest, f"{what} differs between processes")
    except AssertionError as err:
        raise ValueError(f"{what}={value!r} on process {jax.process_index()}: {err}") from None
