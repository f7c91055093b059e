"""Device meshes and shardings: the only place a :class:`Mesh` is built.

The mesh has a ``data`` axis (episodes and training batches are split over it) and a ``model``
axis of size 1 (room for tensor parallelism later; parameters are replicated over both). The same
code runs on one CPU device, on every device of one host, and on every device of every process of
a multi-controller job (:mod:`jaxcollab.scale.distributed`): arrays built here are *global*
``jax.Array``\\ s, assembled from each process's host-local data with
:func:`jax.make_array_from_process_local_data`.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec

from jaxcollab.core.devices import compute_devices

DATA = "data"
MODEL = "model"

def data_mesh(model: int = 1) -> Mesh:
    """A ``(data, model)`` mesh over every device of every process (:func:`compute_devices`),
    ``model`` devices per model replica (1: pure data parallelism).

    Raises:
        ValueError: ``model`` < 1 or not dividing the device count.
    """
    devices = compute_devices()
    n = len(devices)
    if model < 1 or n % model:
        raise ValueError(f"model axis size {model!r} must be a positive divisor of {n} devices")
    # Auto axes: XLA propagates shardings through the jitted code (no sharding-in-types).
    return jax.make_mesh((n // model, model), (DATA, MODEL), axis_types=(AxisType.Auto,) * 2,
                         devices=devices)


def data_size(mesh: Mesh | None = None) -> int:
    """Number of shards along ``data`` (the divisor every batch / episode count needs)."""
    return (mesh if mesh is not None else data_mesh()).shape[DATA]


def data_sharding(mesh: Mesh | None = None) -> NamedSharding:
    """Shard an array's leading axis over ``data`` (``mesh`` defaults to :func:`data_mesh`)."""
    return NamedSharding(mesh if mesh is not None else data_mesh(), PartitionSpec(DATA))


def replicated(mesh: Mesh | None = None) -> NamedSharding:
    """Replicate an array on every device of ``mesh`` (defaults to :func:`data_mesh`)."""
    return NamedSharding(mesh if mesh is not None else data_mesh(), PartitionSpec())


def check_divisible(n: int, what: str, mesh: Mesh | None = None) -> None:
    """Raise ValueError unless ``n`` (a count of ``what``) splits evenly over the data axis."""
    d = data_size(mesh)
    if n % d:
        raise ValueError(f"{what}={n} is not divisible by the {d} devices of the data axis")


def replicate(tree: Any, mesh: Mesh | None = None) -> Any:
    """Host arrays (the same on every process, e.g. a training set built from the seed) as
    global arrays replicated over ``mesh``."""
    sharding = replicated(mesh)
    return jax.tree.map(lambda x: jax.make_array_from_process_local_data(sharding, x), tree)


def shard_batch(tree: Any, mesh: Mesh | None = None) -> Any:
    """Each process's rows (leading axis: its ``1 / process_count`` share, in process order) as
    one global array sharded over ``data``; on one process, the whole batch.

    Raises:
        ValueError: a global leading size not divisible by the data axis.
    """
    sharding = data_sharding(mesh)

    def one(x):
        x = np.asarray(x)
        check_divisible(x.shape[0] * jax.process_count(), "global batch rows", mesh)
        return jax.make_array_from_process_local_data(sharding, x)

    return jax.tree.map(one, tree)


def host_local_rows(n: int) -> slice:
    """This process's share ``[start, stop)`` of ``n`` rows (for :func:`shard_batch`).

    Raises:
        ValueError: ``n`` not divisible by the process count.
    """
    p, i = jax.process_count(), jax.process_index()
    if n % p:
        raise ValueError(f"{n} rows do not split over {p} processes")
    return slice(i * n // p, (i + 1) * n // p)


def host_readable(tree: Any, mesh: Mesh | None = None) -> Any:
    """``tree`` such that ``np.asarray`` works on every process: unchanged on one process;
    otherwise resharded to replicated (an all-gather), since a process cannot read shards held
    by another process's devices."""
    if jax.process_count() == 1:
        return tree
    return jax.device_put(tree, replicated(mesh))


def to_host(tree: Any) -> Any:
    """Every leaf as a full NumPy array on every process (:func:`multihost_utils.
    process_allgather` of the global arrays)."""
    if jax.process_count() == 1:
        return jax.tree.map(np.asarray, tree)
    return multihost_utils.process_allgather(tree, tiled=True)
