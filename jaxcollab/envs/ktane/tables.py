"""Rule tables of the Keep-Talking modules, as data (the vanilla KTANE Bomb Defusal Manual; GPTNT,
App. B.1–B.2).

Everything here is a plain tuple or NumPy array built from the manual's tables; the jitted rule
functions index into them and the Expert's manual is rendered from them, so the simulator and
the manual cannot disagree. Names are the manual's, ids are positions in the tuples.
"""

from __future__ import annotations

import numpy as np

# --- §1 bomb, timer, edgework -----------------------------------------------------------------

#: Serial characters: a code ``< 10`` is that digit; letters never include O or Y.
SERIAL_CHARS = "0123456789ABCDEFGHIJKLMNPQRSTUVWXZ"
N_DIGITS = 10
VOWEL_CODES = np.array([SERIAL_CHARS.index(c) for c in "AEIU"], np.int32)
#: The game's serial-number draw table (35 entries, letters first, ``E`` twice, as in its
#: edgework generator): "any" positions draw from all of it, letter positions from its first
#: :data:`SERIAL_DRAW_LETTERS` entries, so a serial has a vowel with p ≈ 0.53.
SERIAL_DRAW = np.array(
    [SERIAL_CHARS.index(c) for c in "ABCDEFGHIJKLMNEPQRSTUVWXZ0123456789"], np.int32
)
SERIAL_DRAW_LETTERS = 25

#: The timer's rate in quarters at 0, 1, 2, 3, ≥4 strikes (×1, ×1.25, ×1.5, ×1.75, ×2: the
#: game's modding-kit timer; 3+ strikes only occur with a strike limit above 3): ``s`` seconds
#: of game time take ``s × rate`` seconds off the bomb's timer.
TIMER_RATE_QUARTERS = np.array([4, 5, 6, 7, 8], np.int32)
#: Game time of one sync-mode Defuser turn, GPTNT's Δ (App. C.4.3), in seconds.
TURN_S = 3
#: Bomb-time cost of one sync-mode Defuser turn in centiseconds, by strikes: Δ × the rate.
TURN_COST_CS = TURN_S * 100 * TIMER_RATE_QUARTERS // 4

WIDGET_KINDS = ("battery", "indicator", "ports")
BATTERY, INDICATOR, PORTS = range(3)
#: Battery holder names indexed by batteries held - 1.
HOLDERS = ("D", "AA")
INDICATOR_LABELS = ("SND", "CLR", "CAR", "IND", "FRQ", "SIG", "NSA", "MSA", "TRN", "BOB", "FRK")
CAR, FRK = INDICATOR_LABELS.index("CAR"), INDICATOR_LABELS.index("FRK")
PORT_NAMES = ("Serial", "Parallel", "DVI-D", "PS/2", "RJ-45", "Stereo RCA")
PARALLEL = PORT_NAMES.index("Parallel")
#: Port groups of a plate: bit masks over :data:`PORT_NAMES`.
PORT_GROUPS = np.array([[0, 1, -1, -1], [2, 3, 4, 5]], np.int32)
INDICATOR_LIT_P = 0.6
MAX_WIDGETS = 5

#: Bomb faces. Modules sit on the front (slots 0–5) and back (slots 6–11); widgets on the sides.
FACES = ("front", "back", "top", "bottom", "left", "right")
SIDE_FACES = (2, 3, 4, 5)
SLOTS_PER_FACE = 6
MAX_SLOTS = 12
ROTATIONS = ("up", "down", "left", "right")
#: NEXT_FACE[face, rotation]: the face seen after turning the bomb to look ``rotation``.
NEXT_FACE = np.array(
    [
        [2, 3, 4, 5],  # front
        [2, 3, 5, 4],  # back
        [1, 0, 4, 5],  # top
        [0, 1, 4, 5],  # bottom
        [2, 3, 1, 0],  # left
        [2, 3, 0, 1],  # right
    ],
    np.int32,
)
#: FLIP_FACE[face]: the opposite face.
FLIP_FACE = np.array([1, 0, 3, 2, 5, 4], np.int32)

OUTCOMES = ("running", "solved", "strikeout", "timeout")
RUNNING, SOLVED, STRIKEOUT, TIMEOUT = range(4)

# --- §2 wires -----------------------------------------------------------------------------------

WIRE_COLORS = ("black", "blue", "red", "white", "yellow")
BLACK, BLUE, RED, WHITE, YELLOW = range(5)
#: Condition kinds over (kind, colour): count == 0, count == 1, count > 1, last wire is colour,
#: last serial digit odd (colour ignored), always true (colour ignored).
NONE_OF, ONE_OF, MANY_OF, LAST_IS, SERIAL_ODD, ALWAYS = range(6)
#: Answer kinds: the k-th wire (k = 0 means the last wire), or the last wire of a colour.
NTH, LAST_OF = range(2)
_T = (ALWAYS, 0)
#: WIRE_RULES[n - 3, row] = (cond1 kind, cond1 colour, cond2 kind, cond2 colour, answer kind,
#: answer arg); the first row whose two conditions hold applies; the last real row always holds.
WIRE_RULES = np.array(
    [
        [  # 3 wires
            (NONE_OF, RED, *_T, NTH, 2),
            (LAST_IS, WHITE, *_T, NTH, 0),
            (MANY_OF, BLUE, *_T, LAST_OF, BLUE),
            (*_T, *_T, NTH, 0),
            (*_T, *_T, NTH, 0),
        ],
        [  # 4 wires
            (MANY_OF, RED, SERIAL_ODD, 0, LAST_OF, RED),
            (LAST_IS, YELLOW, NONE_OF, RED, NTH, 1),
            (ONE_OF, BLUE, *_T, NTH, 1),
            (MANY_OF, YELLOW, *_T, NTH, 0),
            (*_T, *_T, NTH, 2),
        ],
        [  # 5 wires
            (LAST_IS, BLACK, SERIAL_ODD, 0, NTH, 4),
            (ONE_OF, RED, MANY_OF, YELLOW, NTH, 1),
            (NONE_OF, BLACK, *_T, NTH, 2),
            (*_T, *_T, NTH, 1),
            (*_T, *_T, NTH, 1),
        ],
        [  # 6 wires
            (NONE_OF, YELLOW, SERIAL_ODD, 0, NTH, 3),
            (ONE_OF, YELLOW, MANY_OF, WHITE, NTH, 4),
            (NONE_OF, RED, *_T, NTH, 0),
            (*_T, *_T, NTH, 4),
            (*_T, *_T, NTH, 4),
        ],
    ],
    np.int32,
)
#: Number of real rows per wire count (the rest repeat the fallback as padding).
WIRE_ROWS = (4, 5, 4, 4)

# --- §3 the button ------------------------------------------------------------------------------

BUTTON_COLORS = ("red", "blue", "yellow", "white")
B_RED, B_BLUE, B_YELLOW, B_WHITE = range(4)
BUTTON_LABELS = ("Abort", "Detonate", "Hold", "Press")
ABORT, DETONATE, HOLD_LABEL, PRESS_LABEL = range(4)
ANY = -1
#: BUTTON_RULES[row] = (colour, label, batteries greater than, lit indicator, hold?); ANY (-1)
#: matches everything. The first matching row decides hold (1) or tap (0).
BUTTON_RULES = np.array(
    [
        (B_BLUE, ABORT, ANY, ANY, 1),
        (ANY, DETONATE, 1, ANY, 0),
        (B_WHITE, ANY, ANY, CAR, 1),
        (ANY, ANY, 2, FRK, 0),
        (B_YELLOW, ANY, ANY, ANY, 1),
        (B_RED, HOLD_LABEL, ANY, ANY, 0),
        (ANY, ANY, ANY, ANY, 1),
    ],
    np.int32,
)
#: RELEASE_DIGIT[strip colour]: release when the timer display shows this digit.
RELEASE_DIGIT = np.array([1, 4, 5, 1], np.int32)

# --- §4 keypad ----------------------------------------------------------------------------------

KEYPAD_SYMBOLS = (
    "balloon",
    "at",
    "upside-down-y",
    "squiggly-n",
    "squid-knife",
    "hook-n",
    "left-c",
    "euro",
    "cursive",
    "hollow-star",
    "question-mark",
    "copyright",
    "pumpkin",
    "double-k",
    "melted-three",
    "six",
    "paragraph",
    "bt",
    "smiley",
    "pitchfork",
    "right-c",
    "dragon",
    "filled-star",
    "tracks",
    "ae",
    "n-with-hat",
    "omega",
)
_COLUMNS = (
    "balloon at upside-down-y squiggly-n squid-knife hook-n left-c",
    "euro balloon left-c cursive hollow-star hook-n question-mark",
    "copyright pumpkin cursive double-k melted-three upside-down-y hollow-star",
    "six paragraph bt squid-knife double-k question-mark smiley",
    "pitchfork smiley bt right-c paragraph dragon filled-star",
    "six euro tracks ae pitchfork n-with-hat omega",
)
#: KEYPAD_COLUMNS[column, k]: symbol id of the k-th symbol (top to bottom) in a column.
KEYPAD_COLUMNS = np.array(
    [[KEYPAD_SYMBOLS.index(s) for s in col.split()] for col in _COLUMNS], np.int32
)
#: KEYPAD_RANK[column, symbol]: position of a symbol in a column, or 7 if absent.
KEYPAD_RANK = np.full((6, len(KEYPAD_SYMBOLS)), 7, np.int32)
for _c, _col in enumerate(KEYPAD_COLUMNS):
    KEYPAD_RANK[_c, _col] = np.arange(7)
KEYPAD_POSITIONS = ("TL", "TR", "BL", "BR")

# --- §5 simon says ------------------------------------------------------------------------------

SIMON_COLORS = ("red", "blue", "green", "yellow")
#: SIMON_MAP[serial has vowel, min(strikes, 2), flashed colour] = colour to press.
SIMON_MAP = np.zeros((2, 3, 4), np.int32)
_SIMON_ROWS = {
    (1, 0): "blue red yellow green",
    (1, 1): "yellow green blue red",
    (1, 2): "green red yellow blue",
    (0, 0): "blue yellow green red",
    (0, 1): "red blue yellow green",
    (0, 2): "yellow green blue red",
}
for (_v, _s), _row in _SIMON_ROWS.items():
    SIMON_MAP[_v, _s] = [SIMON_COLORS.index(c) for c in _row.split()]
SIMON_MIN_LEN, SIMON_MAX_LEN = 3, 5

# --- §6 who's on first --------------------------------------------------------------------------

WOF_POSITIONS = ("TL", "TR", "ML", "MR", "BL", "BR")
#: Display words grouped by the button position they point at (step 1). "" is the empty display.
_WOF_STEP1 = (
    ("UR",),
    ("FIRST", "OKAY", "C"),
    ("YES", "NOTHING", "LED", "THEY ARE"),
    ("BLANK", "READ", "RED", "YOU", "YOUR", "YOU'RE", "THEIR"),
    ("", "REED", "LEED", "THEY'RE"),
    ("DISPLAY", "SAYS", "NO", "LEAD", "HOLD ON", "YOU ARE", "THERE", "SEE", "CEE"),
)
WOF_DISPLAYS = tuple(w for group in _WOF_STEP1 for w in group)
#: WOF_READ[display id]: position (0 = TL … 5 = BR) of the button to read.
WOF_READ = np.array([p for p, group in enumerate(_WOF_STEP1) for _ in group], np.int32)
WOF_LABELS = (
    "READY",
    "FIRST",
    "NO",
    "BLANK",
    "NOTHING",
    "YES",
    "WHAT",
    "UHHH",
    "LEFT",
    "RIGHT",
    "MIDDLE",
    "OKAY",
    "WAIT",
    "PRESS",
    "YOU",
    "YOU ARE",
    "YOUR",
    "YOU'RE",
    "UR",
    "U",
    "UH HUH",
    "UH UH",
    "WHAT?",
    "DONE",
    "NEXT",
    "HOLD",
    "SURE",
    "LIKE",
)
WOF_GROUP_SIZE = 14
_WOF_LISTS = (
    "5 11 6 10 8 13 9 3 0 2 1 7 4 12",
    "8 11 5 10 2 9 4 7 12 0 3 6 13 1",
    "3 7 12 1 6 0 9 5 4 8 13 11 2 10",
    "12 9 11 10 3 13 0 4 2 6 8 7 5 1",
    "7 9 11 10 5 3 2 13 8 6 12 1 4 0",
    "11 9 7 10 1 6 13 0 4 5 8 3 2 12",
    "7 6 8 4 0 3 10 2 11 1 12 5 13 9",
    "0 4 8 6 11 5 9 2 13 3 7 10 12 1",
    "9 8 1 2 10 5 3 6 7 12 13 0 11 4",
    "5 4 0 13 2 12 6 9 10 8 7 3 11 1",
    "3 0 11 6 4 13 2 12 8 10 9 1 7 5",
    "10 2 1 5 7 4 12 11 8 0 3 13 6 9",
    "7 2 3 11 5 8 1 13 6 12 4 0 9 10",
    "9 10 5 0 13 11 4 7 3 8 1 6 2 12",
    "26 15 16 17 24 20 18 25 22 14 21 27 23 19",
    "16 24 27 20 22 23 21 25 14 19 17 26 18 15",
    "21 15 20 16 24 18 26 19 17 14 22 25 27 23",
    "14 17 18 24 21 15 19 16 22 20 26 23 27 25",
    "23 19 18 20 22 26 16 25 17 27 24 21 15 14",
    "20 26 24 22 17 18 21 23 19 14 27 25 15 16",
    "20 16 15 14 23 25 21 24 26 27 17 18 19 22",
    "18 19 15 17 24 21 23 14 20 27 16 26 25 22",
    "14 25 17 16 19 23 21 27 15 20 18 24 22 26",
    "26 20 24 22 16 18 17 25 27 14 19 15 21 23",
    "22 20 21 16 25 26 24 27 23 15 18 17 19 14",
    "15 19 23 21 14 18 26 22 17 24 25 20 16 27",
    "15 23 27 17 14 25 20 18 26 19 22 24 16 21",
    "17 24 19 18 25 23 21 22 20 14 27 26 15 16",
)
#: WOF_LISTS[L]: step-2 priority list of label L (label ids, highest priority first).
WOF_LISTS = np.array([[int(x) for x in row.split()] for row in _WOF_LISTS], np.int32)
#: WOF_RANK[L, label]: position of ``label`` in list(L), or 28 ("infinity") if absent.
WOF_RANK = np.full((len(WOF_LABELS), len(WOF_LABELS)), len(WOF_LABELS), np.int32)
for _l, _lst in enumerate(WOF_LISTS):
    WOF_RANK[_l, _lst] = np.arange(len(_lst))
WOF_STAGES = 3

# --- §7 memory ----------------------------------------------------------------------------------

#: Memory step kinds: press position N, press label N, press the position / label of stage N.
POSITION, LABEL, POSITION_OF, LABEL_OF = range(4)
_MEM = (
    ("p2", "p2", "p3", "p4"),
    ("l4", "P1", "p1", "P1"),
    ("L2", "L1", "p3", "l4"),
    ("P1", "p1", "P2", "P2"),
    ("L1", "L2", "L4", "L3"),
)
_MEM_KIND = {"p": POSITION, "l": LABEL, "P": POSITION_OF, "L": LABEL_OF}
#: MEMORY_RULES[stage - 1, display - 1] = (kind, argument); arguments are 1-based.
MEMORY_RULES = np.array([[(_MEM_KIND[c[0]], int(c[1])) for c in row] for row in _MEM], np.int32)
MEMORY_STAGES = 5

# --- §8 morse code ------------------------------------------------------------------------------

#: The 16 words in dial order, with their frequencies in MHz (vanilla manual, "Morse Code").
MORSE_WORDS = (
    "shell", "halls", "slick", "trick", "boxes", "leaks", "strobe", "bistro",
    "flick", "bombs", "break", "brick", "steak", "sting", "vector", "beats",
)  # fmt: skip
MORSE_FREQS = (
    "3.505", "3.515", "3.522", "3.532", "3.535", "3.542", "3.545", "3.552",
    "3.555", "3.565", "3.572", "3.575", "3.582", "3.592", "3.595", "3.600",
)  # fmt: skip
#: International Morse for the letters the words use.
MORSE_CODE = {
    "a": ".-", "b": "-...", "c": "-.-.", "e": ".", "f": "..-.", "g": "--.", "h": "....",
    "i": "..", "k": "-.-", "l": ".-..", "m": "--", "n": "-.", "o": "---", "r": ".-.",
    "s": "...", "t": "-", "v": "...-", "x": "-..-",
}  # fmt: skip
#: Light timing in dot units: dot, dash, gap inside a letter, gap between letters, pause
#: before the word repeats (standard Morse timing, as ktanesim plays it).
MORSE_DOT, MORSE_DASH, MORSE_SYMBOL_GAP, MORSE_LETTER_GAP, MORSE_WORD_GAP = 1, 3, 1, 3, 7
#: Seconds per dot unit of the light (our choice; the manual gives no timing).
MORSE_UNIT_S = 0.25
MORSE_MAX_LETTERS = 6
MORSE_START = 0  # the dial starts at 3.505 MHz

# --- §9 complicated wires -----------------------------------------------------------------------

#: Wire colourings; a wire "has red" / "has blue" as in CW_RED / CW_BLUE.
CW_COLORS = ("white", "red", "blue", "red+white", "blue+white", "red+blue")
CW_RED = np.array([0, 1, 0, 1, 0, 1], bool)
CW_BLUE = np.array([0, 0, 1, 0, 1, 1], bool)
#: Instruction letters: cut, do not cut, cut if the last serial digit is even, cut if there is
#: a parallel port, cut if there are two or more batteries.
CW_LETTERS = ("C", "D", "S", "P", "B")
CW_CUT, CW_DONT, CW_SERIAL, CW_PARALLEL, CW_BATTERIES = range(5)
#: CW_RULES[red, blue, led, star]: instruction letter (vanilla manual Venn diagram).
CW_RULES = np.array([CW_LETTERS.index(c) for c in "CCDBSDPPSCBBSPSD"], np.int32).reshape(2, 2, 2, 2)
CW_MAX_WIRES = 6

# --- §10 wire sequence --------------------------------------------------------------------------

WS_COLORS = ("red", "blue", "black")
WS_TARGETS = ("A", "B", "C")
WS_PANELS, WS_PER_PANEL, WS_PER_COLOR = 4, 3, 9
_WS = (  # occurrence k = 1..9: targets to cut for red, blue, black
    ("C", "B", "ABC"), ("B", "AC", "AC"), ("A", "B", "B"), ("AC", "A", "AC"), ("B", "B", "B"),
    ("AC", "BC", "BC"), ("ABC", "C", "AB"), ("AB", "AC", "C"), ("B", "A", "C"),
)  # fmt: skip
#: WS_RULES[colour, occurrence - 1, target]: cut the wire? (vanilla manual "Wire Sequences").
WS_RULES = np.array([[[t in row[c] for t in WS_TARGETS] for row in _WS] for c in range(3)], bool)

# --- §11 maze -----------------------------------------------------------------------------------

MAZE_SIZE = 6
#: The 9 mazes: markers (col, row) 1-based, then V (walls right of column k, per row) and H
#: (walls below row r, per column), our encoding of the vanilla manual's Mazes page.
_MAZES = (
    ((1, 2), (6, 3), "..|.. |.|.. |.|.. |..|. ..|.| .|.|.", ".-..-- ..---. .-..-. .----. .-..-."),
    ((5, 2), (2, 4), "..|.. .|.|. |.|.. .|.|| |||.| |.|..", "-.-..- .-.--. ..-.-. .-.-.. ....-."),
    ((4, 4), (6, 4), "..||. |||.| .||.| ||||| |.||| ...|.", ".-.... -..--. ...... ...... .--..."),
    ((1, 1), (1, 4), ".|... ||... |.|.| |.... ....| ..|.|", "..---. ...--. .--.-. .----. .---.."),
    ((5, 3), (4, 6), "..... ....| .|.|. |..|| |...| |....", "----.. .--.-- ..--.. .--.-. ..---."),
    ((5, 1), (3, 5), "|.|.. |||.| .|||. .|.|| .|||. ...|.", "...-.. ....-. .--..- -..... .--.-."),
    ((2, 1), (2, 6), "...|. |.|.| .|.|. .|..| ||..| .....", ".--... ..---. --.-.- ...--. .---.."),
    ((4, 1), (3, 4), "|..|. ..|.| |...| |.|.. ||... .....", "..-... .----. ..--.. .-.--- ..----"),
    ((3, 2), (1, 5), "|.... ||.|| ..|.| ||.|. |||.| .|.|.", "..--.. ...-.. .--.-. ...--. .....-"),
)
MAZE_MOVES = ("up", "down", "left", "right")
#: (d col, d row) of each move.
MAZE_STEP = np.array([(0, -1), (0, 1), (-1, 0), (1, 0)], np.int32)


def maze_walls(v_rows, h_rows) -> np.ndarray:
    """bool ``[6, 6, 4]`` walls[row, col, move] from the V/H strings; the border is a wall."""
    n = MAZE_SIZE
    walls = np.zeros((n, n, 4), bool)
    walls[0, :, 0] = walls[-1, :, 1] = walls[:, 0, 2] = walls[:, -1, 3] = True
    for r, row in enumerate(v_rows):
        for k, ch in enumerate(row):
            if ch == "|":
                walls[r, k, 3] = walls[r, k + 1, 2] = True
    for r, row in enumerate(h_rows):
        for c, ch in enumerate(row):
            if ch == "-":
                walls[r, c, 1] = walls[r + 1, c, 0] = True
    return walls


#: MAZE_WALLS[maze, row, col, move]; MAZE_MARKERS[maze, k] = (col, row) 0-based.
MAZE_WALLS = np.stack([maze_walls(v.split(), h.split()) for _, _, v, h in _MAZES])
MAZE_MARKERS = np.array([(a, b) for a, b, _, _ in _MAZES], np.int32) - 1

# --- §12 passwords ------------------------------------------------------------------------------

PASSWORD_WORDS = tuple(
    "about after again below could every first found great house large learn never other "
    "place plant point right small sound spell still study their there these thing think three "
    "water where which world would write".split()
)
PW_LETTERS, PW_COLUMN = 5, 6  # letters per word; letters per column
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
#: PASSWORD_CODES[word, k]: letter index 0-25 of the word's k-th letter.
PASSWORD_CODES = np.array([[LETTERS.index(c.upper()) for c in w] for w in PASSWORD_WORDS], np.int32)

# --- randomised rulesets (ours) -------------------------------------------------------------

#: Letters the Morse light can spell (those of :data:`MORSE_CODE`), in a fixed order; a
#: ruleset's Morse words are ids into it.
MORSE_ALPHABET = "".join(sorted(MORSE_CODE))
#: Common English words a random ruleset draws its passwords (the 5-letter ones) and Morse
#: words (4–6 letters spellable in :data:`MORSE_ALPHABET`) from; the vanilla words included.
WORD_POOL = tuple(
    dict.fromkeys(
        PASSWORD_WORDS
        + MORSE_WORDS
        + tuple(
            "alarm blast cable chain chart clock crane crash dance delta earth fable faith field "
            "flame flash ghost giant grass heart horse laser lemon light magic metal night ocean "
            "orbit piano pilot radar radio river robot salad score shade shift siren solar spark "
            "stack steam stone storm sugar table tiger timer torch tower train trace vital voice "
            "whale wheel bright castle chains charge cinema fabric factor falcon forest garlic "
            "hammer lights locket marble master nectar orange rocket silver signal sorbet stream "
            "switch tablet ticket timber".split()
        )
    )
)
