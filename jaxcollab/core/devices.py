"""Which devices meshes span: every device of every process.

(The LLM team once added CPU devices to hold computations waiting in host callbacks, one per
32 waiting episodes, and meshes left those out; its batched rollout needs none:
:mod:`jaxcollab.llm.play`.)"""

from __future__ import annotations

import jax


def compute_devices() -> list:
    """The devices meshes span: every device of every process (:func:`jax.devices`)."""
    return jax.devices()
