"""Data tables of the bomb families (SANZARU, Tables 1, 2, 8, 9): roles, channels, palettes, the
token vocabulary and the **24-variant table**. Every rule difference between variants lives in
:data:`VARIANTS`; the state functions read it through
:class:`jaxcollab.envs.bomb.params.BombParams`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

# ---- roles and channels (SANZARU, Table 1) ----------------------------------------------------
DEAF, MUTE, BLIND = 0, 1, 2
ROLE_NAMES = ("deaf", "mute", "blind")
N_AGENTS = 3
SPEECH, GESTURE = 0, 1
CHANNEL_NAMES = ("speech", "gesture")
#: CAN_SEND[role, channel]: Deaf speaks and gestures, Mute only gestures, Blind only speaks.
CAN_SEND = np.array([[1, 1], [0, 1], [1, 0]], bool)
BOUNCE, FULL, BLANKS = 0, 1, 2  # how a call arrives
#: RECEIVE[role, channel]: how a call on ``channel`` reaches ``role``. Deaf cannot hear (speech
#: bounces), Mute gets both, Blind hears speech and gets a gesture as blanks, one ``?`` per
#: symbol (SANZARU Table 1: Blind receives ``Mute: [? ?]``; Fig. 9: Blind reads a value from the
#: number of blanks). Anything but ``FULL`` is dead-channel use (SANZARU Table 6 ``dead_channel``).
RECEIVE = np.array([[BOUNCE, FULL], [FULL, FULL], [FULL, BLANKS]], np.int32)

# ---- actions -------------------------------------------------------------------------------
WAIT, CUT, PRESS = 0, 1, 2
ACT_NAMES = ("wait", "cut", "press")
NO_TARGET = -1  # speak_to / gesture_to value meaning "send nothing"
#: speak_to / gesture_to value meaning "every teammate the channel reaches" (SANZARU Table 1:
#: Deaf's ``speak(text=…)`` without ``to`` reaches Mute and Blind).
EVERYONE = N_AGENTS
TARGET_NAMES = (*ROLE_NAMES, "everyone")

# ---- endings -------------------------------------------------------------------------------
RUNNING, DEFUSED, WRONG_ACTION, TIMED_OUT = 0, 1, 2, 3
ENDING_NAMES = ("running", "defused", "wrong_action", "timed_out")

# ---- parts (SANZARU, Table 8; palettes and glyphs are ours) -----------------------------------
#: Wire palette; the first five are also the light palette (black is ours, so the generator can
#: keep every named colour unique on seven-wire boards).
COLOURS = ("red", "green", "blue", "yellow", "white", "black")
N_COLOURS = len(COLOURS)
N_LIGHTS = 5
PLATE_GLYPHS = "ᚠᚢᚦᚨᚱᚲᚷᚹ"  # engraved plate glyphs, no common names
STRIP_GLYPHS = "◆◇○●□■△▽"  # raised strip glyphs (never used by a manual)
MAX_WIRES = 7
N_KEYS = 4
STRIP_SLOTS = 3
MANUAL_ENTRIES = 20  # largest manual: a 5 x 4 grid
SEQ = 8  # longest per-stage / per-cycle / flash sequence
MAX_ROUNDS = 24  # longest round budget; history arrays hold one slot per round
#: Earlier rounds of chat each observation carries (a fixed window, ours; SANZARU Fig. 2 shows
#: per-agent conversation histories). The state keeps one more row: the current round.
CHAT_ROUNDS = 4
CHAT_SLOTS = CHAT_ROUNDS + 1  # rows of the state's message ring
DEFAULT_SPEECH_BYTES = 256
DEFAULT_GESTURE_SYMBOLS = 32

# ---- gesture alphabet (SANZARU, Fig. 5; ids ours): symbol ids 1..42, 0 = empty slot -----------
# Fig. 5 shows the 42 emoji; the paper's text names only a few (thumbs_up, point_up, fist in
# Table 1): the other names, and their order, are ours.
GESTURES = (
    ("thumbs_up", "👍"), ("thumbs_down", "👎"), ("point_up", "☝️"), ("point_down", "👇"),
    ("point_left", "👈"), ("point_right", "👉"), ("point_at_you", "🫵"), ("fist", "✊"),
    ("raised_fist", "✊🏽"), ("left_fist", "🤛"), ("right_fist", "🤜"), ("open_hand", "🖐️"),
    ("raised_hand", "✋"), ("wave", "👋"), ("clap", "👏"), ("victory", "✌️"), ("ok_hand", "👌"),
    ("pinch", "🤏"), ("crossed_fingers", "🤞"), ("call_me", "🤙"), ("love_you", "🤟"),
    ("horns", "🤘"), ("vulcan", "🖖"), ("pray", "🙏"), ("muscle", "💪"), ("handshake", "🤝"),
    ("palms_up", "🤲"), ("writing_hand", "✍️"), ("nod", "🙂‍↕️"), ("head_shake", "🙂‍↔️"),
    ("shrug", "🤷"), ("facepalm", "🤦"), ("salute", "🫡"), ("eyes", "👀"), ("thinking", "🤔"),
    ("smile", "🙂"), ("frown", "🙁"), ("wink", "😉"), ("check", "✅"), ("cross", "❌"),
    ("question", "❓"), ("exclamation", "❗"),
)
N_SYMBOLS = len(GESTURES)
SYMBOL_IDS = {name: i + 1 for i, (name, _) in enumerate(GESTURES)}

# ---- observation token vocabulary ----------------------------------------------------------
PAD, UNREADABLE, CUT_MARK, ABSENT, DARK, HIDDEN, YES, NO, BLANK = range(9)  # BLANK: a `?`
COLOUR_TOK = 9  # + colour id (6)
DIGIT_TOK = COLOUR_TOK + N_COLOURS  # + digit 0..9
PLATE_TOK = DIGIT_TOK + 10  # + plate glyph id (8)
STRIP_TOK = PLATE_TOK + len(PLATE_GLYPHS)  # + strip glyph id (8)
SYMBOL_TOK = STRIP_TOK + len(STRIP_GLYPHS) - 1  # + symbol id 1..42
ROLE_TOK = SYMBOL_TOK + N_SYMBOLS + 1  # + role (3)
MODE_TOK = ROLE_TOK + N_AGENTS  # + manual key mode (3)
TASK_TOK = MODE_TOK + 3  # + task (2)
NUM_TOK = TASK_TOK + 2  # + small number 0..31 (rounds, picks)
BYTE_TOK = NUM_TOK + 32 - 1  # + byte 1..255
VOCAB_SIZE = BYTE_TOK + 256

# ---- variant table (SANZARU, Table 9) ---------------------------------------------------------
TASK_CUT, TASK_CODE = 0, 1
KEY_LIGHT, KEY_GLYPH, KEY_FLASH = 0, 1, 2  # what selects the manual entry
LIGHT_STAGE, LIGHT_CYCLE, LIGHT_FLASH = 0, 1, 2  # how the light behaves
KEYPAD_NONE, KEYPAD_REAL, KEYPAD_DECOY = 0, 1, 2
FAMILIES = ("base", "carving", "flashing", "flashback", "shuffle", "haystack", "bait")


class Variant(NamedTuple):
    """One row of the variant table.

    ``steps`` is the number of required actions (cuts, or code digits for ``TASK_CODE``);
    ``rows x cols`` is the manual size (``cols > 1``: a light x display grid); ``period`` is the
    light cycle length (flashing), ``flashes`` the flash count and ``window`` the visible history
    in rounds (flashback; 0 = every round); ``pick_rule`` picks one flash by a manual rule
    instead of one flash per cut in order.
    """

    name: str
    subset: str
    wires: int
    steps: int
    rounds: int
    rows: int
    cols: int = 1
    task: int = TASK_CUT
    key: int = KEY_LIGHT
    light: int = LIGHT_STAGE
    period: int = 1
    flashes: int = 0
    window: int = 0
    pick_rule: bool = False
    shuffle: bool = False
    haystack: bool = False
    keypad: int = KEYPAD_NONE
    strip: bool = False
    bait: bool = False

    @property
    def family(self) -> str:
        return self.name.split("-")[0]


_C, _P = "Core", "Plus"
_CYC, _FL = LIGHT_CYCLE, LIGHT_FLASH
#: The 24 variants. Base rows follow the paper; where it gives no detail the rest are ours.
#: Deviation: bait-3 has 4 wires (3 in our reading of SANZARU, Table 9) so that a bait wire can be
#: present at every cut, including the last.
VARIANTS: tuple[Variant, ...] = (
    Variant("base-1", _C, 3, 1, 8, rows=3),
    Variant("base-2", _C, 3, 1, 8, rows=3, cols=3),
    Variant("base-3", _C, 3, 3, 12, rows=3),
    Variant("base-4", _P, 5, 3, 16, rows=5, cols=4),
    Variant("base-5", _P, 7, 5, 24, rows=5, cols=4),
    Variant("carving-1", _C, 3, 1, 8, rows=3, key=KEY_GLYPH),
    Variant("carving-2", _C, 3, 2, 10, rows=4, key=KEY_GLYPH, task=TASK_CODE, keypad=KEYPAD_REAL),
    Variant("flashing-1", _C, 3, 1, 8, rows=3, light=_CYC, period=2),
    Variant("flashing-2", _C, 3, 1, 10, rows=3, light=_CYC, period=3),
    Variant("flashing-3", _P, 5, 1, 12, rows=3, cols=3, light=_CYC, period=3),
    Variant("flashing-4", _P, 5, 3, 16, rows=3, light=_CYC, period=3),
    Variant("flashing-5", _P, 7, 3, 20, rows=5, cols=4, light=_CYC, period=4),
    Variant("flashback-1", _C, 3, 1, 10, rows=3, key=KEY_FLASH, light=_FL, flashes=3, window=4,
            pick_rule=True),
    Variant("flashback-2", _C, 3, 3, 12, rows=3, key=KEY_FLASH, light=_FL, flashes=3, window=4),
    Variant("flashback-3", _P, 5, 3, 16, rows=5, key=KEY_FLASH, light=_FL, flashes=5, window=3),
    Variant("shuffle-1", _C, 4, 2, 10, rows=3, shuffle=True),
    Variant("shuffle-2", _C, 5, 3, 14, rows=3, shuffle=True),
    Variant("shuffle-3", _P, 7, 4, 20, rows=5, cols=4, shuffle=True),
    Variant("haystack-1", _C, 3, 1, 8, rows=3, haystack=True, strip=True),
    Variant("haystack-2", _C, 3, 3, 12, rows=3, haystack=True, strip=True, keypad=KEYPAD_DECOY),
    Variant("haystack-3", _P, 5, 3, 16, rows=3, haystack=True, strip=True, keypad=KEYPAD_DECOY),
    Variant("bait-1", _C, 3, 1, 8, rows=3, bait=True),
    Variant("bait-2", _C, 3, 1, 8, rows=3, cols=3, bait=True),
    Variant("bait-3", _C, 4, 3, 12, rows=3, bait=True),
)
VARIANT_BY_NAME = {v.name: v for v in VARIANTS}


def variant(name: str) -> Variant:
    """Look up a variant by name (``"base-1"`` or ``"bomb/base-1"``).

    Raises:
        KeyError: unknown variant; the message lists the valid ones.
    """
    short = name.removeprefix("bomb/")
    if short not in VARIANT_BY_NAME:
        raise KeyError(f"unknown bomb variant {name!r}; valid: {', '.join(VARIANT_BY_NAME)}")
    return VARIANT_BY_NAME[short]
