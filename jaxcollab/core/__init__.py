"""Environment contract, spaces, registry and wrappers."""

from jaxcollab.core.env import Environment
from jaxcollab.core.registry import groups, make, names, register, resolve
from jaxcollab.core.spaces import Box, Discrete, Space
from jaxcollab.core.wrappers import AutoResetWrapper, EpisodeStatsWrapper, Wrapper

__all__ = [
    "AutoResetWrapper",
    "Box",
    "Discrete",
    "Environment",
    "EpisodeStatsWrapper",
    "Space",
    "Wrapper",
    "groups",
    "make",
    "names",
    "register",
    "resolve",
]
