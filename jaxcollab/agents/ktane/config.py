"""The Keep-Talking family's run-config keys (:attr:`jaxcollab.core.family.Family.config`):
the rule tables and the ``ktane`` block of the LLM game, each default stated here only."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from jaxcollab.core.config import bounded


class RulesetName(StrEnum):
    vanilla = "vanilla"  # the vanilla KTANE manual
    random = "random"    # every rule table redrawn from ruleset_seed (ours)


@dataclass
class RulesetConfig:
    """The rule tables a Keep-Talking instance is played (and exported) under."""

    ruleset: RulesetName = RulesetName.vanilla  # vanilla | random (redrawn from ruleset_seed)
    ruleset_seed: int = bounded(0, ge=0, lt=2**31)  # seed of ruleset=random (an int32 param)


@dataclass
class KtaneBlock:
    """Keep Talking's LLM options (``ktane.*``)."""

    mode: str = "sync"                   # sync (3 s per Defuser cycle) | async (latency costs)
    reflection: bool = False             # end-of-game reflection request (ours: no paper's)
    # gptnt (GPTNT's Defuser channel: frames, grid, no outcome field) | full (the env's text)
    view: str = "gptnt"
    solo: str | None = None              # null (Defuser + Expert) | with_manual | no_manual
    # names (the manual's glyph names) | described (each role its own description: GPTNT §10.1)
    glyphs: str = "names"
    hud: str = "always"                  # always | gptnt (timer, strikes on the timer's face only)


@dataclass
class KtaneConfig(RulesetConfig):
    """Every run-config key the Keep-Talking family reads, beside the common ones."""

    ktane: KtaneBlock = field(default_factory=KtaneBlock)
