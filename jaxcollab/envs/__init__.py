"""Built-in environments. Importing this package registers all of them."""

from jaxcollab.envs import (
    bomb,  # noqa: F401
    ktane,  # noqa: F401
    maze,  # noqa: F401
    parity,  # noqa: F401
)
