"""The state pictures (Family.draw) and the report's step-by-step replay in headless Chromium.

Default tier: each family's pictures of a fresh state grey exactly what a role does not perceive,
each Keep-Talking module's face is drawn from its facts, and the page's picture store gives
every picture back (no browser). Full tier: LLM bomb, Keep-Talking and maze runs (the stub
server's team) and scripted Keep-Talking and maze runs, each reported with ``replay=1`` and
opened in Chromium at its first and last step (``#replay-<episode>/s<step>``, the script's own
stepping): no script error, the view shows the step asked, its pictures change with the state
(module faces, the cut wire, the maze team's probability vectors by round), the last state is
the ending the run recorded, and the LLM turns of a step sit beside its pictures.
"""

from __future__ import annotations

import json
import re

import jax
import numpy as np
import pytest
from llm_server import LLMServer
from test_report import Dom, assert_loaded, dump_dom, report_cli

import jaxcollab
from jaxcollab.agents.bomb.draw import FILL
from jaxcollab.core.picture import UNSEEN
from jaxcollab.envs.bomb import tables as T
from jaxcollab.report import write_report
from jaxcollab.report.screenshot import WINDOW


def _fresh(name: str):
    env = jaxcollab.make(name)
    params = env.default_params
    _, state = jax.jit(env.reset)(jax.random.key(3), params)
    return env, jax.device_get(state), params


def test_bomb_pictures_show_each_role_its_own_perception():
    env, state, params = _fresh("bomb/base-1")
    pics = jaxcollab.family("bomb").draw.pictures(env, state, params)
    assert list(pics) == ["state", "deaf", "mute", "blind"]
    colours = [FILL[T.COLOURS[c]] for c in np.asarray(state.wire_colour) if c >= 0]
    wire = lambda svg: re.findall(r'stroke="([^"]+)"[^>]*class="wire"', svg)  # noqa: E731
    assert wire(pics["state"]) == wire(pics["deaf"]) == colours  # Deaf sees the colours
    assert wire(pics["blind"]) == [UNSEEN] * len(colours)  # Blind feels wires, not colours
    glyph = T.PLATE_GLYPHS[int(state.plate)]
    plate = lambda svg: re.search(r'class="plate">([^<]*)<', svg).group(1)  # noqa: E731
    assert (plate(pics["state"]), plate(pics["blind"]), plate(pics["deaf"])) == (glyph, glyph,
                                                                                "?")
    assert "board not seen" in pics["mute"] and 'class="wire' not in pics["mute"]


def test_maze_and_parity_pictures_grey_the_other_half():
    env, state, params = _fresh("maze/split-6x6")
    pics = jaxcollab.family("maze").draw.pictures(env, state, params)
    masks = np.asarray(state.masks)
    assert pics["state"].count("cell unseen") == 0
    for k, name in enumerate(env.role_names):
        assert pics[name].count('class="cell unseen"') == int((~masks[k]).sum())
    env, state, params = _fresh("parity/action")
    pics = jaxcollab.family("parity").draw.pictures(env, state, params)
    n = len(np.asarray(state.bits))
    assert [pics[r].count('class="bit unseen"') for r in ("state", "bob", "alice")] == [
        0, n // 2, n - n // 2]


_FACTS = {  # one module of each vanilla type, as its ``describe`` writes it
    "wires": {"colors": ["red", "white", None, "blue", None, None],
              "cut": [False, True, False, False, False, False]},
    "button": {"color": "blue", "label": "abort", "held": True, "strip": "yellow"},
    "keypad": {"symbols": ["omega", "ae", "six", "bt"], "pressed": [True, False, False, False]},
    "simon": {"sequence": ["red", "blue", "green"], "stage": 2, "entered": 1},
    "whos_on_first": {"stage": 2, "display": "UR", "buttons": list("ABCDEF")},
    "memory": {"stage": 3, "display": 4, "labels": [2, 3, 4, 1], "history": []},
    "morse": {"word": "shell", "frequency": "3.505 MHz", "dial": "3.515 MHz", "phase": 0,
              "light_units": "1010100"},
    "complicated_wires": {"wires": [{"color": "red+blue", "led": True, "star": False,
                                     "cut": False}, None, None, None, None, None]},
    "wire_sequence": {"wires": [None, None, None,
                                {"color": "blue", "target": "C", "cut": True}] + [None] * 8,
                      "panel": 2},
    "maze": {"maze": 1, "markers": [[1, 2], [6, 3]], "light": [1, 1], "goal": [6, 6]},
    "passwords": {"columns": ["abcdef"] * 5, "index": [0, 1, 2, 3, 4], "password": "about"},
}
_MARK = {"wires": 'class="wire cut"', "button": 'class="button held"',
         "keypad": 'class="key-light on"', "simon": 'class="flash later"',
         "whos_on_first": 'class="stage done"', "memory": 'class="stage done"',
         "morse": 'class="unit"', "complicated_wires": 'class="led on"',
         "wire_sequence": 'class="wire cut"', "maze": 'class="marker"',
         "passwords": 'class="letter">E<'}


def test_ktane_faces_draw_every_module_from_its_facts():
    from jaxcollab.agents.ktane.faces import DRAWERS, GLYPH, face
    from jaxcollab.envs.ktane import tables as KT

    assert sorted(DRAWERS) == sorted(_FACTS) and set(GLYPH) == set(KT.KEYPAD_SYMBOLS)
    for name, facts in _FACTS.items():
        drawn = "".join(face(name, facts, 0, 0))
        assert _MARK[name] in drawn, name
    wires = "".join(face("wires", _FACTS["wires"], 0, 0))
    assert (wires.count('class="wire"'), wires.count('class="wire cut"')) == (2, 2)  # 2 halves
    assert "".join(face("keypad", _FACTS["keypad"], 0, 0)).count(GLYPH["omega"]) == 1
    assert "".join(face("passwords", _FACTS["passwords"], 0, 0)).count('class="letter"') == 5
    with pytest.raises(KeyError, match="'needy'"):
        face("needy", {}, 0, 0)


def test_picture_store_keeps_each_piece_once_and_gives_pictures_back():
    from jaxcollab.core.picture import rect, svg, text
    from jaxcollab.report.replay import Pictures

    a = svg(10, 10, [rect(0, 0, 5, 5), text(1, 1, "a")], "t")
    b = svg(10, 10, [rect(0, 0, 5, 5), text(1, 1, "")], "t")
    store = Pictures()
    assert [store.add(a), store.add(b), store.add(a)] == [0, 1, 0]
    body = str(store.html())
    assert "</" not in body.removesuffix("</script>")  # no end tag closes the script early
    data = json.loads(re.search(r">(.*)</script>$", body, re.S).group(1))
    assert ["".join(data["parts"][j] for j in pic) for pic in data["pics"]] == [a, b]
    assert len(data["parts"]) == 7  # svg head + title, rect, two texts, </svg>: shared once


# --- full: in the browser -------------------------------------------------------------------

def _view(text: str, anchor: str) -> tuple[int, str]:
    """The step the replay ``anchor`` shows and its view's markup, from a dumped DOM."""
    box = text.split(f'id="{anchor}"', 1)[1]
    m = re.search(r'<div class="view" data-step="(\d+)">(.*?)</div><script', box, re.S)
    return int(m.group(1)), m.group(2)


def _steps(page, tmp_path, anchor: str, last: int) -> list[str]:
    views = []
    for step in (0, last):
        text = dump_dom(page, tmp_path, f"{anchor}/s{step}")
        assert_loaded(Dom(text))
        shown, view = _view(text, anchor)
        assert shown == step
        views.append(view)
    assert views[0] != views[1]  # the picture changes with the state
    return views


@pytest.mark.full
def test_replay_steps_through_one_episode_per_family(tmp_path, cli):
    with LLMServer() as server:
        cli("eval/rollout.py", "env=bomb/base-1", "agent=llm", f"llm.base_url={server.url}",
            "llm.model=good", "llm.backoff_s=0.01", "episodes=1",
            f"out_dir={tmp_path / 'bomb'}")
    (record,) = [json.loads(x) for x in (tmp_path / "bomb").glob("*.jsonl")
                 .__next__().read_text().splitlines()]
    page = write_report([tmp_path / "bomb"], replay=1)
    views = _steps(page, tmp_path, "replay-bomb-base-1-0", record["steps"])
    assert f"· {record['ending']}</title>" in views[1]
    acted = {int(t["step"]) for ts in record["agents"].values() for t in ts}
    first = dump_dom(page, tmp_path, f"replay-bomb-base-1-0/s{min(acted)}")
    assert 'class="replay-turn"' in _view(first, "replay-bomb-base-1-0")[1]

    cli("eval/rollout.py", "env=ktane/missions/multi/3", "agent=oracle", "episodes=1",
        "chunk=1", f"out_dir={tmp_path / 'ktane'}")
    page = write_report([tmp_path / "ktane"], replay=1)
    last = int(re.search(r'max="(\d+)"', page.read_text()).group(1))
    views = _steps(page, tmp_path, "replay-ktane-missions-multi-3-0", last)
    assert "· solved</title>" in views[1] and views[1].split("</figure>")[0].count(
        'class="solved"') == 3  # the state picture: each module's light
    faces = ('class="button', 'class="word-button"', 'class="memory-button"')  # its 3 modules
    assert all(f in views[0].split("</figure>")[0] for f in faces)
    defuser = [v for v in views[0].split("</figure>") if 'data-view="defuser"' in v][0]
    assert not any(f in defuser for f in faces)  # nothing zoomed yet: no face in its view

    maze = cli("eval/rollout.py", "env=maze/split-6x6", "agent=oracle", "episodes=1",
               "maze.rollouts=1", f"out_dir={tmp_path / 'maze'}")
    page = write_report([tmp_path / "maze"], replay=1)
    last = int(re.search(r'max="(\d+)"', page.read_text()).group(1))
    views = _steps(page, tmp_path, "replay-maze-split-6x6-0", last)
    assert maze["success_rate"] == 1.0 and "· success</title>" in views[1]
    state_pic = views[1].split("</figure>")[0]
    assert state_pic.count('class="path"') == last  # one segment per move walked
    shots = report_cli(f"run={tmp_path / 'maze'}", "replay=1",
                       f"screenshots={tmp_path / 'shots'}")
    png = (tmp_path / "shots" / "replay-maze.png").read_bytes()
    assert shots == page and png[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(png[16:20], "big") == WINDOW[0]  # the PNG header's width
    both = Dom(dump_dom(write_report([tmp_path / "maze", tmp_path / "ktane"]), tmp_path))
    links = [c[3] for c in both.tables["runs"][1:]]  # "its page": each run's report.html
    assert [x["text"] for x in links] == ["report.html"] * 2


def _record(run) -> dict:
    (record,) = [json.loads(x) for x in next(run.glob("*.jsonl")).read_text().splitlines()]
    return record


@pytest.mark.full
def test_llm_ktane_and_maze_runs_replay_with_faces_and_vectors(tmp_path, cli):
    """LLM Keep-Talking and maze runs (the stub server's team) replay from their transcripts:
    the wire the Defuser cut is drawn cut by its last step, and each maze step shows its
    rounds' probability vectors as the transcript recorded them."""
    llm = ("agent=llm", "llm.model=good", "llm.backoff_s=0.01", "episodes=1")
    with LLMServer() as server:
        cli("eval/rollout.py", "env=ktane/wires", *llm, f"llm.base_url={server.url}", "seed=1",
            "ktane.reflection=false", f"out_dir={tmp_path / 'ktane'}")
        cli("eval/rollout.py", "env=maze/split-6x6", *llm, f"llm.base_url={server.url}",
            "maze.setting=verbalized", f"out_dir={tmp_path / 'maze'}")
    record = _record(tmp_path / "ktane")
    page = write_report([tmp_path / "ktane"], replay=1)
    views = _steps(page, tmp_path, "replay-ktane-wires-0", record["steps"])
    state = [v.split("</figure>")[0] for v in views]
    assert record["success"] and "· solved</title>" in views[1]
    assert (state[0].count('class="wire cut"'), state[1].count('class="wire cut"')) == (0, 2)
    cut = _view(dump_dom(page, tmp_path, f"replay-ktane-wires-0/s{record['steps'] - 1}"),
                "replay-ktane-wires-0")[1]
    assert 'class="replay-turn" data-agent="defuser"' in cut  # the turn that cut, beside it

    record = _record(tmp_path / "maze")
    page = write_report([tmp_path / "maze"], replay=1)
    views = _steps(page, tmp_path, "replay-maze-split-6x6-0", record["steps"])
    rounds = [v for v in views[0].split("</figure>") if 'data-view="rounds"' in v][0]
    first = [r for r in record["data"]["rounds"] if r["step"] == 0]
    shown = [float(p) for p in re.findall(r'class="prob" data-p="([^"]+)"', rounds)]
    assert shown == pytest.approx([p for r in first for p in r["probs"]], abs=1e-3)
    assert rounds.count('class="round-move"') == len(first) == 4
    assert "no rounds at this step" in views[1] and f"· {record['ending']}</title>" in views[1]
