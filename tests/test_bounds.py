"""Information bounds of the bomb variants (:mod:`jaxcollab.envs.bomb.bounds`) on variants
worked out by hand, and ``eval/bounds.py``."""

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from jaxcollab.envs.bomb import bounds as B
from jaxcollab.envs.bomb import tables as T
from jaxcollab.envs.bomb.params import TURN_ORDERS

ROOT = Path(__file__).resolve().parent.parent
D, M, BL = T.DEAF, T.MUTE, T.BLIND


def rounds(variant):
    return {B.order_name(o): B.round_bound(variant, tuple(o)) for o in TURN_ORDERS}


def test_perception_and_channels_from_the_env():
    """Derived from ``observe`` and the delivery matrix: Deaf alone sees light, display and wire
    colours, Mute alone the manual, Blind alone the plate; Deaf and Blind both the keypad.
    Every call that is not bounced: Deaf speaks and gestures to Mute, speaks to Blind (its
    gesture reaches Blind as blanks), Mute gestures to Deaf (to Blind as blanks), Blind speaks
    to Mute."""
    seen = B.perceivers("carving-2")
    assert seen["manual"] == {M} and seen["plate"] == {BL} and seen["wires"] == {D}
    assert seen["keypad"] == {D, BL} and B.perceivers("base-2")["display"] == {D}
    full, blanks = T.FULL, T.BLANKS
    assert B.channels() == {
        (D, M): {T.SPEECH: full, T.GESTURE: full}, (D, BL): {T.SPEECH: full, T.GESTURE: blanks},
        (M, D): {T.GESTURE: full}, (M, BL): {T.GESTURE: blanks}, (BL, M): {T.SPEECH: full}}


def test_shown_keys_from_the_light():
    """What the board's light shows, read from the env: the staged light follows the actions
    done (base-3), the cycle the round (flashing-1, period 2), the flashes the first 3 rounds
    and then the light is dark (flashback-1)."""
    assert B.shown_keys("base-3")[5, :4].tolist() == [0, 1, 2, 3]
    assert B.shown_keys("flashing-1")[:5, 0].tolist() == [0, 1, 0, 1, 0]
    assert B.shown_keys("flashback-1")[:5, 1].tolist() == [0, 1, 2, -1, -1]


def test_base_1_by_hand():
    """base-1: the light (Deaf) picks the manual row (Mute) naming a wire colour (Deaf); Blind
    cuts once.

    * deaf-mute-blind: round 0 Deaf tells Mute the light and the wires, Mute works out the
      position and gestures it to Blind as a count of blanks, Blind cuts: 1 round.
    * mute-deaf-blind: Mute gestures the manual to Deaf, Deaf speaks the position to Blind,
      Blind cuts: 1 round.
    * any order where Blind plays before the second of Deaf and Mute in round 0 (the other
      four): the facts of both cannot have met and reached Blind by its round-0 turn, and in
      round 1 they have: 2 rounds.

    Symbols: Deaf gestures the light to Mute (3 lights: 1 symbol), Mute the colour to Deaf (1),
    Deaf speaks the position (1 byte): 3; or Mute gestures the manual (6^3 = 216 > 42: 2
    symbols) and Deaf the position (1): also 3; nothing cheaper carries both facts.
    """
    assert rounds("base-1") == {"deaf-mute-blind": 1, "deaf-blind-mute": 2, "mute-deaf-blind": 1,
                                "mute-blind-deaf": 2, "blind-deaf-mute": 2, "blind-mute-deaf": 2}
    b = B.variant_bounds("bomb/base-1")
    assert (b["min_rounds"], b["rounds_to_guarantee"], b["min_symbols"]) == (1, 1, 3)


def test_base_3_by_hand():
    """base-3: 3 cuts on 3 wires, the light changes after every cut (Deaf sees the new light
    only after the cut), one act per turn.

    * deaf-mute-blind: round 0 as base-1 (cut 1). Round 1: Deaf tells Mute the new light, Mute
      gestures the position, Blind cuts (cut 2). Round 2: one uncut wire is left and the answer
      is always an uncut wire: Blind cuts it with no message (cut 3): 3 rounds.
    * blind-deaf-mute: Blind's round-0 turn comes before any message. Deaf tells Mute the light
      and the wires, Mute gestures the position: cut 1 in round 1 (turn 0). Deaf sees the new
      light at turn 1, tells Mute, Mute gestures the position at turn 2: cut 2 in round 2; cut 3
      (forced) in round 3: 4 rounds. The same for every order that does not run both Deaf and
      Mute before Blind.

    Symbols: the manual once (216 values: 2 gestures) and a spoken position for cuts 1 and 2
    (the third is forced): 4.
    """
    assert rounds("base-3") == {"deaf-mute-blind": 3, "deaf-blind-mute": 4, "mute-deaf-blind": 3,
                                "mute-blind-deaf": 4, "blind-deaf-mute": 4, "blind-mute-deaf": 4}
    b = B.variant_bounds("base-3")
    assert (b["min_rounds"], b["min_symbols"]) == (3, 4)
    assert "[2] need nothing" in b["derivation"]


def test_carving_by_hand():
    """carving-1: the plate glyph (only Blind feels it) picks the manual row (Mute), the wire
    colours are Deaf's: all three roles hold a needed fact.

    * mute-deaf-blind: Mute gestures the manual to Deaf; Deaf speaks to Blind, for each glyph
      row, the position of its colour; Blind reads its plate and cuts: 1 round.
    * every other order: Blind's plate must reach Mute, or the manual and the wires Blind,
      before Blind's round-0 turn, which the order does not allow: 2 rounds.

    carving-2 (enter a 2-digit code on the keypad Deaf and Blind both see): mute-deaf-blind:
    Deaf relays the manual to Blind in round 0, who presses digit 1 then and digit 2 in round 1:
    2 rounds (two presses, one per turn); otherwise 3. Symbols: the plate spoken to Mute
    (8 glyphs: 1 byte) once, then per digit Mute gestures the digit to Deaf (1) and Deaf
    speaks the key (1): 5.
    """
    assert rounds("carving-1") == {"deaf-mute-blind": 2, "deaf-blind-mute": 2,
                                   "mute-deaf-blind": 1, "mute-blind-deaf": 2,
                                   "blind-deaf-mute": 2, "blind-mute-deaf": 2}
    assert {k: v for k, v in rounds("carving-2").items()} == {
        "deaf-mute-blind": 3, "deaf-blind-mute": 3, "mute-deaf-blind": 2, "mute-blind-deaf": 3,
        "blind-deaf-mute": 3, "blind-mute-deaf": 3}
    assert B.variant_bounds("carving-1")["min_symbols"] == 3
    assert B.variant_bounds("carving-2")["min_symbols"] == 5


def test_flashback_pick_depends_on_the_instance():
    """flashback-1: the manual picks one of 3 flashes (rounds 0-2). If it picks flash 0,
    deaf-mute-blind defuses in round 0 (1 round); if flash 2, Deaf sees it in round 2: 3
    rounds. So ``min_rounds`` is 1, ``rounds_to_guarantee`` 3."""
    dmb = (D, M, BL)
    assert [B.round_bound("flashback-1", dmb, (f,)) for f in range(3)] == [1, 2, 3]
    b = B.variant_bounds("flashback-1")
    assert (b["min_rounds"], b["rounds_to_guarantee"]) == (1, 3)


def test_every_variant_has_bounds_within_its_budget():
    """Every variant is solvable within its round budget, needs at least one round per
    action, and a communicating team needs at least 2 symbols per unforced action
    (one into Blind, one out of Mute)."""
    for v in T.VARIANTS:
        b = B.variant_bounds(v.name)
        assert v.steps <= b["min_rounds"] <= b["rounds_to_guarantee"] <= v.rounds, v.name
        assert b["min_symbols"] >= 2, v.name


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=900)


@pytest.mark.full  # long: the default tier's time (issue 36)
def test_bounds_cli(tmp_path):
    """``eval/bounds.py env=bomb/base-1 teams=[] runs=[R]`` writes the hand-worked bounds and
    shows the finished run ``R``'s mean rounds beside them (table and plot)."""
    run = tmp_path / "llm.json"
    run.write_text(json.dumps({"agent": "llm", "variants": {"bomb/base-1": {
        "episodes": 9, "success_rate": 0.5, "mean_rounds": 4.25}}}))
    out_dir = tmp_path / "out"
    out = _cli("eval/bounds.py", "env=bomb/base-1", "teams=[]", f"runs=[{run}]",
               f"out_dir={out_dir}")
    assert out.returncode == 0, out.stderr
    v = json.loads((out_dir / "results.json").read_text())["variants"]["bomb/base-1"]
    assert (v["min_rounds"], v["min_symbols"], v["by_turn_order"]["blind-mute-deaf"]) == (1, 3, 2)
    assert "mute" in v["derivation"]
    assert v["teams"] == {f"llm ({run})": {"episodes": 9, "success_rate": 0.5,
                                           "mean_rounds": 4.25, "mean_symbols": None}}
    assert "| base-1 | 1 | 3 | 4.2 / – |" in (out_dir / "bounds.md").read_text()
    assert (out_dir / "bounds.png").stat().st_size > 0


def test_bounds_cli_refuses_unknown_team(tmp_path):
    out = _cli("eval/bounds.py", "env=bomb/base-1", "teams=[nope]", f"out_dir={tmp_path}")
    assert out.returncode != 0 and "teams=" in out.stderr


@pytest.mark.slow
def test_scripted_teams_never_beat_the_bounds(tmp_path):
    """Rollouts of the communicating scripted teams on the hand-worked variants under all six
    turn orders: every defused episode uses at least the bound of its turn order; the oracle
    (privileged, silent) only meets the action bound; the table shows each team."""
    from jaxcollab.agents.bomb import play, rounds_used
    from jaxcollab.core.registry import make
    from jaxcollab.envs.bomb.params import make_params, stack_params

    names = ["base-1", "base-3", "carving-1", "carving-2", "flashing-2"]
    params = stack_params([make_params(T.variant(n), o) for n in names for o in TURN_ORDERS])
    keys = jax.random.split(jax.random.PRNGKey(0), len(names) * len(TURN_ORDERS))
    bound = np.array([B.round_bound(n, tuple(o)) for n in names for o in TURN_ORDERS])
    steps = np.repeat([T.variant(n).steps for n in names], len(TURN_ORDERS))
    env = make("bomb/base-1")
    for team in ("onebit", "symbol", "counting", "oracle"):
        state = play(env, team, keys, params)
        won = np.asarray(state.ending) == T.DEFUSED
        used = np.asarray(rounds_used(state))
        floor = steps if team == "oracle" else bound
        assert (used[won] >= floor[won]).all(), (team, used, floor)
        assert won.any(), team
    out = _cli("eval/bounds.py", "env=bomb/base-1", "teams=[symbol]", "episodes=6",
               f"out_dir={tmp_path}")
    assert out.returncode == 0, out.stderr
    row = json.loads((tmp_path / "results.json").read_text())["variants"]["bomb/base-1"]
    assert row["teams"]["symbol"]["below_bound"] == 0
    assert row["teams"]["symbol"]["mean_rounds"] >= row["min_rounds"]
    assert (tmp_path / "bounds.md").read_text().count("| base-1 |") == 1


def test_versus_bounds_counts_episodes_below_the_bound():
    """Team rows from per-episode traces: means over defused episodes only, and the defused
    episodes faster than the bound of their own turn order (base-1: 1 round under
    deaf-mute-blind, 2 under blind-deaf-mute)."""
    from jaxcollab.agents.bomb.traces import versus_bounds

    orders = TURN_ORDERS.tolist()
    dmb, bdm = orders.index([D, M, BL]), orders.index([BL, D, M])
    traces = {"variant": np.zeros(4, int), "turn_order": np.array([dmb, bdm, bdm, dmb]),
              "success": np.array([True, True, True, False]), "rounds": np.array([1, 1, 3, 8]),
              "symbols": np.array([10, 0, 20, 99])}
    row = versus_bounds(traces, ["bomb/base-1"])["bomb/base-1"]
    assert row == {"episodes": 4, "success_rate": 0.75, "mean_rounds": 5 / 3,
                   "mean_symbols": 10.0, "below_bound": 1}
