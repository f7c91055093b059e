"""Oracle and random Keep-Talking teams, rollouts, and an independent check of exports."""

import json

import pytest

from eval.export import export
from jaxcollab.agents.ktane import evaluate, export_instances
from jaxcollab.agents.ktane.export import export_env
from jaxcollab.envs.ktane import KtaneEnv, Mission
from jaxcollab.envs.ktane import tables as T

ALL = ("wires", "button", "keypad", "simon", "whos_on_first", "memory")
NEW = ("morse", "complicated_wires", "wire_sequence", "maze", "passwords")


# --- an independent, plain-Python reading of the rules, applied to exported instances ---------


def _facts(edge):
    widgets = edge["widgets"]
    return {
        "odd": int(edge["serial"][-1]) % 2 == 1,
        "vowel": any(c in "AEIU" for c in edge["serial"]),
        "batteries": sum(w.get("batteries", 0) for w in widgets),
        "lit": {w["label"] for w in widgets if w["kind"] == "indicator" and w["lit"]},
        "parallel": any("Parallel" in w.get("ports", ()) for w in widgets),
    }


def _wire_to_cut(colors, f):
    slots = [i for i, c in enumerate(colors) if c]
    w = [colors[i] for i in slots]
    n, count, last = len(w), w.count, w[-1]

    def last_of(c):
        return slots[max(i for i, x in enumerate(w) if x == c)]

    if n == 3:
        k = 1 if not count("red") else -1 if last == "white" else None
        if k is None:
            return last_of("blue") if count("blue") > 1 else slots[-1]
    elif n == 4:
        if count("red") > 1 and f["odd"]:
            return last_of("red")
        k = 0 if (last == "yellow" and not count("red")) or count("blue") == 1 else None
        k = k if k is not None else (-1 if count("yellow") > 1 else 1)
    elif n == 5:
        if last == "black" and f["odd"]:
            k = 3
        elif count("red") == 1 and count("yellow") > 1:
            k = 0
        else:
            k = 1 if not count("black") else 0
    else:
        if not count("yellow") and f["odd"]:
            k = 2
        elif count("yellow") == 1 and count("white") > 1:
            k = 3
        else:
            k = -1 if not count("red") else 3
    return slots[k]


def _button(m, f, time):
    hold = True
    if m["color"] == "blue" and m["label"] == "Abort":
        hold = True
    elif f["batteries"] > 1 and m["label"] == "Detonate":
        hold = False
    elif m["color"] == "white" and "CAR" in f["lit"]:
        hold = True
    elif f["batteries"] > 2 and "FRK" in f["lit"]:
        hold = False
    elif m["color"] == "yellow":
        hold = True
    elif m["color"] == "red" and m["label"] == "Hold":
        hold = False
    if not m["held"]:
        return ("hold" if hold else "press"), 0
    digit = {"blue": "4", "yellow": "5"}.get(m["strip"], "1")
    return ("release" if digit in time else "wait"), 0


def _keypad(m):
    column = next(c for c in T.KEYPAD_COLUMNS if all(
        T.KEYPAD_SYMBOLS.index(s) in c for s in m["symbols"]))  # fmt: skip
    names = [T.KEYPAD_SYMBOLS[s] for s in column]
    todo = [i for i in range(4) if not m["pressed"][i]]
    return "press", min(todo, key=lambda i: names.index(m["symbols"][i]))


_SIMON = {  # (vowel, strikes capped at 2) -> presses for red, blue, green, yellow flashes
    (True, 0): "blue red yellow green", (True, 1): "yellow green blue red",
    (True, 2): "green red yellow blue", (False, 0): "blue yellow green red",
    (False, 1): "red blue yellow green", (False, 2): "yellow green blue red",
}  # fmt: skip


def _simon(m, f, strikes):
    row = _SIMON[(f["vowel"], min(strikes, 2))].split()
    flash = m["sequence"][m["entered"]]
    return "press", T.SIMON_COLORS.index(row[T.SIMON_COLORS.index(flash)])


_WOF_READ = {"UR": 0, "FIRST": 1, "OKAY": 1, "C": 1, "YES": 2, "NOTHING": 2, "LED": 2,
             "THEY ARE": 2, "": 4, "REED": 4, "LEED": 4, "THEY'RE": 4}  # fmt: skip
_WOF_READ.update({w: 3 for w in ("BLANK", "READ", "RED", "YOU", "YOUR", "YOU'RE", "THEIR")})


def _wof(m):
    read = m["buttons"][_WOF_READ.get(m["display"], 5)]
    order = [T.WOF_LABELS[i] for i in T.WOF_LISTS[T.WOF_LABELS.index(read)]]
    return "press", min(range(6), key=lambda i: order.index(m["buttons"][i]))


_MEMORY = ("p2 p2 p3 p4", "l4 P1 p1 P1", "L2 L1 p3 l4", "P1 p1 P2 P2", "L1 L2 L4 L3")


def _memory(m):
    rule = _MEMORY[m["stage"] - 1].split()[m["display"] - 1]
    kind, n = rule[0], int(rule[1])
    if kind in "lL":
        label = n if kind == "l" else m["history"][n - 1]["label"]
        return "press", m["labels"].index(label)
    return "press", (n if kind == "p" else m["history"][n - 1]["position"]) - 1


_MORSE_FREQ = ("3.505 3.515 3.522 3.532 3.535 3.542 3.545 3.552 3.555 3.565 3.572 3.575 3.582 "
               "3.592 3.595 3.600").split()  # fmt: skip
_MORSE = {".-": "a", "-...": "b", "-.-.": "c", ".": "e", "..-.": "f", "--.": "g", "....": "h",
          "..": "i", "-.-": "k", ".-..": "l", "--": "m", "-.": "n", "---": "o", ".-.": "r",
          "...": "s", "-": "t", "...-": "v", "-..-": "x"}  # fmt: skip
_MORSE_WORDS = ("shell halls slick trick boxes leaks strobe bistro flick bombs break brick steak "
                "sting vector beats").split()  # fmt: skip


def _morse(m):
    # decode the exported light (one loop, 1 = on per dot unit): the word, hence its frequency
    word = "".join(
        _MORSE["".join("." if len(s) == 1 else "-" for s in letter.split("0") if s)]
        for letter in m["light_units"].rstrip("0").split("000")
    )
    want, dial = _MORSE_FREQ[_MORSE_WORDS.index(word)], m["dial"]
    return "press", 1 if dial < want else 0 if dial > want else 2


_VENN = "CCDBSDPPSCBBSPSD"  # index 8·red + 4·blue + 2·LED + star


def _complicated(m, f):
    for i, w in enumerate(m["wires"]):
        if w is None or w["cut"]:
            continue
        red, blue = "red" in w["color"], "blue" in w["color"]
        letter = _VENN[8 * red + 4 * blue + 2 * w["led"] + w["star"]]
        cut = {"C": True, "D": False, "S": not f["odd"], "P": f["parallel"],
               "B": f["batteries"] >= 2}[letter]  # fmt: skip
        if cut:
            return "cut", i
    raise AssertionError("no wire left to cut")


_WSEQ = {"red": "C B A AC B AC ABC AB B".split(), "blue": "B AC B A B BC C AC A".split(),
         "black": "ABC AC B AC B BC AB C C".split()}  # fmt: skip


def _wire_sequence(m):
    seen = {c: 0 for c in _WSEQ}
    for i, w in enumerate(m["wires"]):
        if w is None:
            continue
        seen[w["color"]] += 1
        must = w["target"] in _WSEQ[w["color"]][seen[w["color"]] - 1]
        if i // 3 == m["panel"] - 1 and must and not w["cut"]:
            return "cut", i % 3
    return "press", 3


_MAZE_V = ("..|.. |.|.. |.|.. |..|. ..|.| .|.|.", "..|.. .|.|. |.|.. .|.|| |||.| |.|..",
           "..||. |||.| .||.| ||||| |.||| ...|.", ".|... ||... |.|.| |.... ....| ..|.|",
           "..... ....| .|.|. |..|| |...| |....", "|.|.. |||.| .|||. .|.|| .|||. ...|.",
           "...|. |.|.| .|.|. .|..| ||..| .....", "|..|. ..|.| |...| |.|.. ||... .....",
           "|.... ||.|| ..|.| ||.|. |||.| .|.|.")  # fmt: skip
_MAZE_H = (".-..-- ..---. .-..-. .----. .-..-.", "-.-..- .-.--. ..-.-. .-.-.. ....-.",
           ".-.... -..--. ...... ...... .--...", "..---. ...--. .--.-. .----. .---..",
           "----.. .--.-- ..--.. .--.-. ..---.", "...-.. ....-. .--..- -..... .--.-.",
           ".--... ..---. --.-.- ...--. .---..", "..-... .----. ..--.. .-.--- ..----",
           "..--.. ...-.. .--.-. ...--. .....-")  # fmt: skip


def _maze(m):
    v, h = _MAZE_V[m["maze"] - 1].split(), _MAZE_H[m["maze"] - 1].split()

    def moves(c, r):  # 1-based (col, row) → [(move id, (col, row))] through openings
        out = []
        if r > 1 and h[r - 2][c - 1] == ".":
            out.append((0, (c, r - 1)))
        if r < 6 and h[r - 1][c - 1] == ".":
            out.append((1, (c, r + 1)))
        if c > 1 and v[r - 1][c - 2] == ".":
            out.append((2, (c - 1, r)))
        if c < 6 and v[r - 1][c - 1] == ".":
            out.append((3, (c + 1, r)))
        return out

    goal, dist, frontier = tuple(m["goal"]), {tuple(m["goal"]): 0}, [tuple(m["goal"])]
    while frontier:
        cell = frontier.pop(0)
        for _, nxt in moves(*cell):
            if nxt not in dist:
                dist[nxt] = dist[cell] + 1
                frontier.append(nxt)
    light = tuple(m["light"])
    assert light != goal
    return "press", next(k for k, nxt in moves(*light) if dist[nxt] == dist[light] - 1)


_PASSWORDS = ("about after again below could every first found great house large learn never "
              "other place plant point right small sound spell still study their there these "
              "thing think three water where which world would write").split()  # fmt: skip


def _passwords(m):
    cols = m["columns"]
    (word,) = [w for w in _PASSWORDS if all(c.upper() in cols[k] for k, c in enumerate(w))]
    for k, c in enumerate(word.upper()):
        ahead = (cols[k].index(c) - m["index"][k]) % 6
        if ahead:
            return "press", (5 + k) if ahead <= 3 else k
    return "press", 10


def expected_action(kind, m, f, strikes, time):
    return {
        "wires": lambda: ("cut", _wire_to_cut(m["colors"], f)),
        "button": lambda: _button(m, f, time),
        "keypad": lambda: _keypad(m),
        "simon": lambda: _simon(m, f, strikes),
        "whos_on_first": lambda: _wof(m),
        "memory": lambda: _memory(m),
        "morse": lambda: _morse(m),
        "complicated_wires": lambda: _complicated(m, f),
        "wire_sequence": lambda: _wire_sequence(m),
        "maze": lambda: _maze(m),
        "passwords": lambda: _passwords(m),
    }[kind]()


def check_instance(rec):
    """The instance was solved with no strike, and every module action is what an independent
    reading of the rules prescribes."""
    f = _facts(rec["edgework"])
    assert rec["outcome"] == "solved" and rec["strikes"] == 0
    for a in rec["oracle_actions"]:
        if a["verb"] in ("select", "flip"):  # navigation; outcome and strikes checked above
            continue
        kind = rec["modules"][a["slot"]]["type"]
        assert (a["verb"], a["target"]) == expected_action(
            kind, a["module"], f, a["strikes"], a["time"]
        ), a


@pytest.mark.full  # a long run: the default tier's budget (CI runs -m full)
def test_oracle_solves_1000_instances_of_every_module_by_the_rules_without_a_strike():
    # every module type on the front, plus a Memory on the back (the oracle must flip)
    env = KtaneEnv(Mission(ALL + ("memory",), time_limit_s=600), "ktane-test/all")
    records = export_env(env, 1000, 0)
    assert [r["index"] for r in records] == list(range(1000))
    for rec in records:
        check_instance(rec)
    assert {len(r["edgework"]["serial"]) for r in records} == {6}
    flips = sum(a["verb"] == "flip" for r in records for a in r["oracle_actions"])
    assert flips == 1000


@pytest.mark.full  # the default tier keeps its sibling tests; CI runs -m full
def test_oracle_solves_the_five_new_modules_by_an_independent_reading_of_the_rules():
    # all five on the front, a second Maze on the back
    env = KtaneEnv(Mission(NEW + ("maze",) * 2, time_limit_s=1800), "ktane-test/new")
    for rec in export_env(env, 200, 0):
        check_instance(rec)


def test_export_cli_writes_checkable_jsonl(tmp_path):
    path = export("ktane/memory", 40, 3, tmp_path / "inst.jsonl")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["index"] for r in records] == list(range(40))
    for rec in records:
        check_instance(rec)


#: Every module's rules are checked by default on the all-module bomb above; one single-module
#: export by default, the other modules' in the full tier.
@pytest.mark.parametrize("module", [
    pytest.param(m, marks=() if m == "passwords" else pytest.mark.full) for m in ALL + NEW])
@pytest.mark.full  # long: the default tier's time (issue 36)
def test_exported_instances_follow_the_rules_all_modules(module):
    for rec in export_instances(f"ktane/{module}", 300, 11):
        check_instance(rec)


def test_rollout_cli_results_and_determinism(tmp_path, cli):
    res = cli("eval/rollout.py", "env=ktane/wires", "agent=random", "episodes=256", "seed=5",
              f"out_dir={tmp_path}")
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["env"] == "ktane/wires" and saved["agent"] == "random"
    for key in ("success_rate", "mean_strikes", "outcomes", "mean_time_left_s",
                "episodes_per_second"):  # fmt: skip
        assert key in saved
    assert sum(saved["outcomes"].values()) == 256 and saved["outcomes"]["running"] == 0
    assert 0 < saved["success_rate"] < 1 and saved["mean_strikes"] > 0
    # one module: partial credit equals success; the random team never sends a word
    assert saved["modules_solved_fraction"] == saved["success_rate"]
    assert saved["mean_modules_solved"] == saved["success_rate"]
    assert saved["messages_per_defuser_cycle"] == 0.0
    again = evaluate(["ktane/wires"], "random", 256, 5)
    assert {k: again[k] for k in ("success_rate", "mean_strikes", "outcomes")} == {
        k: res[k] for k in ("success_rate", "mean_strikes", "outcomes")
    }


def test_rollout_rejects_unknown_agent_and_env():
    with pytest.raises(ValueError, match="'smart'.*oracle, random"):
        evaluate(["ktane/wires"], "smart", 4, 0)
    with pytest.raises(ValueError, match="parity/action"):
        evaluate(["parity/action"], "oracle", 4, 0)
