"""Built-in environments. Importing this package registers all of them."""

from jaxcollab.envs import parity  # noqa: F401
from jaxcollab.envs import maze  # noqa: F401
from jaxcollab.envs import bomb  # noqa: F401
from jaxcollab.envs import ktane  # noqa: F401
