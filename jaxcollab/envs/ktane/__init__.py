"""Keep Talking and Nobody Explodes-style bombs: a Defuser and an Expert (GPTNT, §3–§4;
module rules from the vanilla KTANE Bomb Defusal Manual).

Registers ``ktane/<module>`` for each module type (group ``ktane/all``): one module on the
front of the bomb, GPTNT's per-module time limit, 3 strikes, 5 widgets, a fresh bomb per
episode; and GPTNT's fixed mission sets (groups ``ktane/missions/single`` and
``ktane/missions/multi``, see :mod:`~jaxcollab.envs.ktane.missions`).
"""

from jaxcollab.core.registry import register
from jaxcollab.envs.ktane.env import KtaneEnv
from jaxcollab.envs.ktane.mission import GPTNT_TIME_LIMIT_S, KtaneParams, Mission
from jaxcollab.envs.ktane.missions import MISSIONS
from jaxcollab.envs.ktane.modules import MODULE_TYPES
from jaxcollab.envs.ktane.state import BombState

__all__ = [
    "BombState",
    "KtaneEnv",
    "KtaneParams",
    "Mission",
    "mission_env",
    "single_module_env",
    "single_module_mission",
]


def single_module_mission(module: str) -> Mission:
    """The default one-module mission of ``module`` (GPTNT time limit, 3 strikes, 5 widgets).

    Raises:
        KeyError: unknown module (lists valid names).
    """
    if module not in GPTNT_TIME_LIMIT_S:
        raise KeyError(f"unknown Keep-Talking module {module!r}; valid: {', '.join(MODULE_TYPES)}")
    return Mission(modules=(module,), time_limit_s=GPTNT_TIME_LIMIT_S[module])


def single_module_env(module: str) -> KtaneEnv:
    """``ktane/<module>``: the environment of :func:`single_module_mission`.

    Raises:
        KeyError: unknown module (lists valid names).
    """
    return KtaneEnv(single_module_mission(module), f"ktane/{module}")


def mission_env(mission: str) -> KtaneEnv:
    """``ktane/missions/...``: the environment of the fixed mission called ``mission``.

    Raises:
        KeyError: unknown mission name.
    """
    return KtaneEnv(MISSIONS[mission], mission)


for _module in MODULE_TYPES:
    register(f"ktane/{_module}", "jaxcollab.envs.ktane:single_module_env", groups=("ktane/all",),
             module=_module)

for _name in MISSIONS:
    register(_name, "jaxcollab.envs.ktane:mission_env", groups=("/".join(_name.split("/")[:3]),),
             mission=_name)
