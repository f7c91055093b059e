"""Environment contract, spaces, registry and wrappers."""

from jaxcollab.core.env import Environment
from jaxcollab.core.registry import groups, make, names, register, resolve
from jaxcollab.core.spaces import Box, Discrete, MultiDiscrete, Space, Tree
from jaxcollab.core.wrappers import AutoResetWrapper, EpisodeStatsWrapper, Wrapper

__all__ = [
    "AutoResetWrapper",
    "Box",
    "Discrete",
    "Environment",
    "EpisodeStatsWrapper",
    "MultiDiscrete",
    "Space",
    "Tree",
    "Wrapper",
    "groups",
    "make",
    "names",
    "register",
    "resolve",
]
