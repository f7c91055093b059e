"""Oracle and random Keep-Talking teams, rollouts, and an independent check of exports."""

import json

import pytest

from eval.export import export
from jaxcollab.agents.ktane import evaluate, export_instances
from jaxcollab.agents.ktane.export import export_env
from jaxcollab.envs.ktane import KtaneEnv, Mission
from jaxcollab.envs.ktane import tables as T

ALL = ("wires", "button", "keypad", "simon", "whos_on_first", "memory")


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


def expected_action(kind, m, f, strikes, time):
    return {
        "wires": lambda: ("cut", _wire_to_cut(m["colors"], f)),
        "button": lambda: _button(m, f, time),
        "keypad": lambda: _keypad(m),
        "simon": lambda: _simon(m, f, strikes),
        "whos_on_first": lambda: _wof(m),
        "memory": lambda: _memory(m),
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


def test_export_cli_writes_checkable_jsonl(tmp_path):
    path = export("ktane/memory", 40, 3, tmp_path / "inst.jsonl")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["index"] for r in records] == list(range(40))
    for rec in records:
        check_instance(rec)


@pytest.mark.parametrize("module", ALL)
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
    again = evaluate(["ktane/wires"], "random", 256, 5)
    assert {k: again[k] for k in ("success_rate", "mean_strikes", "outcomes")} == {
        k: res[k] for k in ("success_rate", "mean_strikes", "outcomes")
    }


def test_rollout_rejects_unknown_agent_and_env():
    with pytest.raises(ValueError, match="'smart'.*oracle, random"):
        evaluate(["ktane/wires"], "smart", 4, 0)
    with pytest.raises(ValueError, match="parity/action"):
        evaluate(["parity/action"], "oracle", 4, 0)
