"""Protocol families of bomb episodes (SANZARU Figs. 7-12) by rule from Mute's gestures: the
rules on hand-built messages, and the scripted teams whose protocol is known."""

from __future__ import annotations

import numpy as np
import pytest

from jaxcollab.agents.bomb.protocols import FAMILIES, classify
from jaxcollab.envs.bomb import tables as T

CLAP, FIST = T.SYMBOL_IDS["clap"], T.SYMBOL_IDS["fist"]
DOT, DASH = T.SYMBOL_IDS["point_up"], T.SYMBOL_IDS["point_down"]
YES, NO = T.SYMBOL_IDS["thumbs_up"], T.SYMBOL_IDS["thumbs_down"]


def counts(*values: int) -> list[int]:
    """Each value as that many claps, closed by a fist."""
    return [s for v in values for s in [CLAP] * v + [FIST]]


def morse(*letters: str) -> list[int]:
    return [s for word in letters for s in [DOT if c == "." else DASH for c in word] + [FIST]]


@pytest.mark.parametrize(("messages", "unprompted", "family"), [
    ([], [], "none"),
    ([[NO], [NO], [YES]], [False] * 3, "one_bit"),  # Fig. 7: one yes/no per round
    ([[3, 7, 2, 1, 9]], [False], "symbol_per_wire"),  # Fig. 8
    ([counts(1, 3, 2), counts(4)], [False, False], "counting"),  # Fig. 9
    ([counts(4, 4, 1, 5, 3, 1, 3, 1)], [False], "letter_grid"),  # Fig. 11: T E L L
    ([morse("-...", ".-..", ".-.")], [False], "morse"),  # Fig. 10: B L R
    ([morse("-.", ".-")], [False], "symbol_per_wire"),  # two letters: read as symbols
    ([counts(2, 1, 3, 2)], [True], "whole_table"),  # Fig. 12: sent before anyone asked
    ([counts(2, 1, 3, 2)], [False], "counting"),  # the same counts, asked for
    ([[CLAP, CLAP, CLAP]], [False], "undetermined"),  # one mark: a count or a symbol
    ([[1, 2, 2, 1]], [False], "undetermined"),
])
def test_rules_on_hand_built_messages(messages, unprompted, family):
    assert classify(messages, unprompted) == family


@pytest.mark.full
def test_scripted_teams_show_their_own_protocol():
    """``onebit`` answers one bit per round and ``counting`` in runs of claps in every episode
    Mute gestured in; ``symbol`` is never taken for bits or counts (an episode whose messages
    use two symbols or fewer is left undetermined)."""
    from jaxcollab.agents.bomb.traces import episode_traces

    names = ["bomb/base-2", "bomb/flashing-1", "bomb/bait-1"]
    got = {team: [FAMILIES[c] for c in episode_traces(names, team, 6, 0)["protocol"]]
           for team in ("onebit", "counting", "symbol")}
    assert got["onebit"] == ["one_bit"] * 18
    assert set(got["counting"]) <= {"counting", "none"} and "counting" in got["counting"]
    assert set(got["symbol"]) <= {"symbol_per_wire", "undetermined"}
    assert got["symbol"].count("symbol_per_wire") > 9
    oracle = episode_traces(names[:1], "oracle", 6, 0)["protocol"]
    assert np.array_equal(oracle, np.full(6, FAMILIES.index("none")))
