"""The bomb family's run-config keys (:attr:`jaxcollab.core.family.Family.config`): the bank
protocol's keys and the ``bomb`` block of the LLM game, each default stated here only."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from jaxcollab.core.config import count
from jaxcollab.envs.bomb.bank import CYCLE, REPEATS


class BombHint(StrEnum):
    """SANZARU's hint levels of the LLM prompts."""

    none = "none"
    weak = "weak"
    strong = "strong"
    playbook = "playbook"


@dataclass
class BombBlock:
    """The bomb's LLM prompt options (``bomb.*``)."""

    hint: BombHint = BombHint.weak       # none | weak | strong | playbook (SANZARU hint levels)
    solo_player: bool = False            # one agent holds every view (plays without hints)
    speech_bytes: int | None = None      # speech cap; null: 1024 for agent=llm, else 256
    gesture_symbols: int | None = None   # gesture cap; null: 256 for agent=llm (SANZARU
    #                                      Fig. 11 sends 138), else 32


@dataclass
class BombConfig:
    """Every run-config key the bomb family reads, beside the common ones."""

    bank: bool = False          # the SANZARU instance-bank protocol: 3 instances x repeats
    repeats: int = count(REPEATS)  # repeats of each bank instance
    # "cycle" (episode e plays TURN_ORDERS[e % 6]) or one permutation, e.g. [mute,deaf,blind]
    turn_order: Any = CYCLE
    solo: str | None = None     # a team, or an earlier bank run's results.json: summary.gap
    bomb: BombBlock = field(default_factory=BombBlock)
