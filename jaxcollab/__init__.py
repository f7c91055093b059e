"""jaxcollab: JAX simulator and training framework for collaboration under information asymmetry.

``jaxcollab.make(name)`` builds a registered environment; ``jaxcollab.names()`` lists them.
"""

import jax

from jaxcollab.core.registry import groups, make, names, resolve

# Random bits at an index depend on that index only, so instance i of a batch is the same
# whatever the batch size (and however it is sharded). The default since JAX 0.5; set here for
# the older versions that ``jax>=0.4.35`` admits.
jax.config.update("jax_threefry_partitionable", True)

__version__ = "0.1.0"
__all__ = ["__version__", "groups", "make", "names", "resolve"]
