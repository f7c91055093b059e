"""The chained-parity family's plug-in (:data:`FAMILY`): its exporter and its round-trainer task
(:mod:`jaxcollab.agents.parity.task`). Its teams are trained (``train/collab.py``), so it has no
rollout team and no LLM game."""

from __future__ import annotations

from jaxcollab.agents.parity.draw import pictures
from jaxcollab.agents.parity.task import TASK
from jaxcollab.core.family import Draw, Family
from jaxcollab.core.registry import register_family
from jaxcollab.envs.parity import export_instances

#: The parity family's plug-in (:mod:`jaxcollab.core.family`).
FAMILY = Family(name="parity",
                export=lambda name, n, seed, options: export_instances(name, n, seed),
                task=TASK, example="parity/action", draw=Draw(pictures))
register_family(FAMILY)

__all__ = ["FAMILY"]
