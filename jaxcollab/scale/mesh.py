"""Device meshes (DESIGN.md, "Scale"): one ``data`` axis over every device.

Episodes and training batches are sharded over ``data``; parameters are replicated. The same code
runs on one CPU device (a mesh of size 1).
"""

from __future__ import annotations

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

DATA = "data"


def data_mesh() -> Mesh:
    """A one-axis (``data``) mesh over every device."""
    return Mesh(np.array(jax.devices()), (DATA,))


def data_sharding(mesh: Mesh | None = None) -> NamedSharding:
    """Shard an array's leading axis over ``data`` (``mesh`` defaults to :func:`data_mesh`)."""
    return NamedSharding(mesh if mesh is not None else data_mesh(), PartitionSpec(DATA))


def replicated(mesh: Mesh | None = None) -> NamedSharding:
    """Replicate an array on every device of ``mesh`` (defaults to :func:`data_mesh`)."""
    return NamedSharding(mesh if mesh is not None else data_mesh(), PartitionSpec())
