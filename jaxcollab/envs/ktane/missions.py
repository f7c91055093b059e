"""GPTNT's mission sets as data: the single-module set and the ten multi-module missions.

* ``ktane/missions/single``: every module type × 10 seeds (GPTNT §5 "single-module missions"),
  registered as ``ktane/missions/single/<module>/<seed>``; each mission's time limit is its
  turn budget (:func:`turn_budget`) × the 3 s synchronous action interval (GPTNT App. B.4.2).
* ``ktane/missions/multi``: ten missions of 3–4 distinct modules at 180 s or 300 s, 3 strikes,
  5 widgets, registered as ``ktane/missions/multi/<k>`` (k = 1 … 10, easiest first).

Every mission carries its own seed, so it is one fixed bomb: all its episodes reset to the same
bomb and differ only in the players' randomness (GPTNT App. C.1.1: "the seed fixes every sampled
component of the bomb").
"""

from __future__ import annotations

from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane.mission import Mission
from jaxcollab.envs.ktane.modules import MODULE_TYPES

#: Turn-cost weights of GPTNT's budget (App. B.4.2, Table B.15): a bomb rotation costs 8 turns,
#: 3 turns of slack for strikes and 10 dialogue turns per module.
ROTATION_TURNS, STRIKE_TURNS, DIALOGUE_TURNS = 8, 3, 10
#: (max actions, stages, rotations, zooms) per module type. Actions and stages follow the
#: manual (e.g. Memory 5 presses in 5 stages, Simon 1+2+…+5 presses, Maze a 35-move path,
#: Passwords 5×5 presses to read the columns and 5×5 to set them plus submit, Wire Sequence
#: 12 cuts and 4 downs over 4 panels). GPTNT's per-module breakdown (Table B.16) is not in the
#: text we have; the entries marked "fit" are ours, chosen so each total equals the published
#: limit (Wires 81 … Passwords 231 s), and a test pins all eleven totals.
TURN_FACTORS = {
    "wires": (1, 1, 1, 4),
    "keypad": (4, 1, 1, 4),
    "whos_on_first": (3, 3, 1, 4),
    "memory": (5, 5, 1, 4),
    "simon": (15, 5, 1, 4),
    "wire_sequence": (16, 4, 1, 4),
    "maze": (35, 1, 1, 4),
    "passwords": (51, 1, 1, 4),
    "button": (14, 1, 2, 4),  # fit: hold, release and up to 12 turns waiting for the digit
    "morse": (22, 1, 1, 4),  # fit: 15 dial steps, TX and 6 turns watching the light loop
    "complicated_wires": (6, 1, 2, 6),  # fit: 6 cuts; a second rotation for the edgework
}
SINGLE_SEEDS = 10


def turn_budget(module: str) -> int:
    """GPTNT's turn allowance for one module (App. B.4.2): actions + stages + 8·rotations +
    zooms + 3 strike turns + 10 dialogue turns.

    Raises:
        KeyError: unknown module (lists valid names).
    """
    if module not in TURN_FACTORS:
        raise KeyError(f"unknown Keep-Talking module {module!r}; valid: {', '.join(MODULE_TYPES)}")
    actions, stages, rotations, zooms = TURN_FACTORS[module]
    return actions + stages + ROTATION_TURNS * rotations + zooms + STRIKE_TURNS + DIALOGUE_TURNS


def single_missions() -> dict[str, Mission]:
    """``ktane/missions/single/<module>/<seed>`` → its mission (module types × 10 seeds)."""
    return {
        f"ktane/missions/single/{m}/{s}": Mission(
            modules=(m,), time_limit_s=turn_budget(m) * T.TURN_S, seed=1000 * i + s
        )
        for i, m in enumerate(MODULE_TYPES)
        for s in range(SINGLE_SEEDS)
    }


#: The ten multi-module missions, easiest first, after GPTNT's mapping to the game's levels
#: (App. B.3: Wires, Button, Keypad from level 1; Simon, Who's on First, Memory, Maze from level
#: 2; Morse, Complicated Wires, Wire Sequence, Passwords from level 3). 34 modules in all (6
#: missions of 3, 4 of 4) and the last two hold three level-3 modules each, as in GPTNT §4;
#: the exact list of its Table B.14 is not in the text we have, so the module choice is ours.
MULTI = (
    (("wires", "button", "keypad"), 300),
    (("wires", "keypad", "simon"), 300),
    (("button", "whos_on_first", "memory"), 300),
    (("keypad", "simon", "maze"), 300),
    (("wires", "whos_on_first", "memory", "maze"), 300),
    (("button", "keypad", "simon", "memory"), 180),
    (("wires", "morse", "complicated_wires"), 300),
    (("keypad", "maze", "passwords"), 300),
    (("memory", "morse", "complicated_wires", "wire_sequence"), 300),
    (("simon", "complicated_wires", "wire_sequence", "passwords"), 180),
)


def multi_missions() -> dict[str, Mission]:
    """``ktane/missions/multi/<k>`` → its mission (3 strikes, 5 widgets, seed ``k``)."""
    return {
        f"ktane/missions/multi/{k}": Mission(
            modules=modules, time_limit_s=limit, max_strikes=3, n_widgets=5, seed=k
        )
        for k, (modules, limit) in enumerate(MULTI, start=1)
    }


#: Every fixed mission by registered name (single set, then multi set).
MISSIONS: dict[str, Mission] = {**single_missions(), **multi_missions()}
