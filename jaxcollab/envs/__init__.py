"""Built-in environments. Importing this package registers all of them."""

from jaxcollab.envs import parity  # noqa: F401
