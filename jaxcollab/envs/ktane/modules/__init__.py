"""Module types, in registry order; ``MODULE_TYPES[name]`` gives a :class:`ModuleType`."""

from jaxcollab.envs.ktane.modules.base import ModuleType
from jaxcollab.envs.ktane.modules.button import BUTTON
from jaxcollab.envs.ktane.modules.complicated_wires import COMPLICATED_WIRES
from jaxcollab.envs.ktane.modules.keypad import KEYPAD
from jaxcollab.envs.ktane.modules.maze import MAZE
from jaxcollab.envs.ktane.modules.memory import MEMORY
from jaxcollab.envs.ktane.modules.morse import MORSE
from jaxcollab.envs.ktane.modules.passwords import PASSWORDS
from jaxcollab.envs.ktane.modules.simon import SIMON
from jaxcollab.envs.ktane.modules.whos_on_first import WHOS_ON_FIRST
from jaxcollab.envs.ktane.modules.wire_sequence import WIRE_SEQUENCE
from jaxcollab.envs.ktane.modules.wires import WIRES

MODULE_TYPES: dict[str, ModuleType] = {
    m.name: m
    for m in (
        WIRES,
        BUTTON,
        KEYPAD,
        SIMON,
        WHOS_ON_FIRST,
        MEMORY,
        MORSE,
        COMPLICATED_WIRES,
        WIRE_SEQUENCE,
        MAZE,
        PASSWORDS,
    )
}


def module_type(name: str) -> ModuleType:
    """The module type called ``name``.

    Raises:
        KeyError: unknown name; the message lists the valid ones.
    """
    if name not in MODULE_TYPES:
        raise KeyError(f"unknown Keep-Talking module {name!r}; valid: {', '.join(MODULE_TYPES)}")
    return MODULE_TYPES[name]
