"""jaxcollab: JAX simulator and training framework for collaboration under information asymmetry.

``jaxcollab.make(name)`` builds a registered environment; ``jaxcollab.names()`` lists them;
``jaxcollab.rollout(env, policy, keys, max_steps=...)`` plays episodes with a policy
(:mod:`jaxcollab.core.rollout`). ``jaxcollab.register(name, factory)`` and
``jaxcollab.register_family(Family(...))`` add a family (:mod:`jaxcollab.core.family`);
``jaxcollab.family(name)`` is its plug-in.
"""

import jax

from jaxcollab.core.registry import family, groups, make, names, register, register_family, resolve
from jaxcollab.core.rollout import (
    Policy,
    PrivilegedPolicy,
    Rollout,
    episode_keys,
    policy,
    privileged_policy,
    rollout,
    stateless,
)

# Random bits at an index depend on that index only, so instance i of a batch is the same
# whatever the batch size (and however it is sharded). The default since JAX 0.5; set here for
# the older versions that ``jax>=0.4.35`` admits.
jax.config.update("jax_threefry_partitionable", True)

__version__ = "0.1.0"
__all__ = [
    "Policy",
    "PrivilegedPolicy",
    "Rollout",
    "__version__",
    "episode_keys",
    "family",
    "groups",
    "make",
    "names",
    "policy",
    "privileged_policy",
    "register",
    "register_family",
    "resolve",
    "rollout",
    "stateless",
]
