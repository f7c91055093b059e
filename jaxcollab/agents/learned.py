"""The ``learned`` team every family's plug-in offers (``agent=learned checkpoint=DIR``): the
team ``train/marl.py`` trained, and the check of its options."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from jaxcollab.core.family import ScriptedTeam


@dataclass
class LearnedConfig:
    """The run-config key of the ``learned`` team, in the config of every family that offers
    it."""

    checkpoint: str | None = None  # agent=learned: a train/marl.py out_dir (or its team/)


def learned(options: Mapping) -> ScriptedTeam:
    """The team ``train/marl.py`` saved at ``options["checkpoint"]``
    (:func:`jaxcollab.marl.team.as_team`, imported on use: the trainer imports the families)."""
    from jaxcollab.marl.team import as_team

    return as_team(options["checkpoint"])


def check_learned(env_names: Sequence[str], options: Mapping) -> None:
    """Refuse ``agent=learned`` without a checkpoint directory or on more than one environment
    (a team plays the environment it was trained on).

    Raises:
        ConfigValueError: naming ``checkpoint`` or ``env``."""
    from jaxcollab.core.errors import ConfigValueError

    if options.get("agent") != "learned":
        return
    checkpoint = options["checkpoint"]
    if checkpoint is None or not Path(checkpoint).is_dir():
        raise ConfigValueError("checkpoint", checkpoint, "the out_dir (or its team/) of a "
                               "train/marl.py run, for agent=learned")
    if len(env_names) != 1:
        raise ConfigValueError("env", ",".join(env_names), "the one environment the learned "
                               "team was trained on (agent=learned)")
