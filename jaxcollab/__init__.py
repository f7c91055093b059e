"""jaxcollab: JAX simulator and training framework for collaboration under information asymmetry.

``jaxcollab.make(name)`` builds a registered environment; ``jaxcollab.names()`` lists them.
"""

from jaxcollab.core.registry import groups, make, names, resolve

__version__ = "0.1.0"
__all__ = ["__version__", "groups", "make", "names", "resolve"]
