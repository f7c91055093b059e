"""GPTNT's perceptual difficulties as options (``ktane.glyphs=described``, ``ktane.hud=gptnt``):
each role's own glyph descriptions, agreeing on nothing but the glyph; the timer and strikes
only on the timer's face; the default keeps the environment's names and header."""

from __future__ import annotations

import json
import re

import pytest

import jaxcollab
from jaxcollab.agents.ktane.llm import KtaneGame
from jaxcollab.agents.ktane.perception import (
    DESCRIPTIONS,
    describe_manual,
    describe_view,
    glyph_words,
    gptnt_hud,
)
from jaxcollab.envs.ktane import tables as KT
from jaxcollab.envs.ktane.render import manual_text
from jaxcollab.envs.ktane.ruleset import vanilla_ruleset
from jaxcollab.io.llm_run import RunConfig, evaluate
from jaxcollab.llm.client import LLMConfig
from jaxcollab.llm.run import transcript_path

ZOOMED = ("time 01:27\nstrikes 0 of 3\nface front\nzoom on\nmodule zoom Keypad unsolved\n"
          "[A] TL cursive unlit\n[B] TR hollow-star unlit\n[C] BL question-mark unlit\n"
          "[D] BR euro unlit")


def test_every_glyph_has_several_descriptions_none_naming_it():
    assert set(DESCRIPTIONS) == set(KT.KEYPAD_SYMBOLS)
    every = [d for ds in DESCRIPTIONS.values() for d in ds]
    assert len(every) == len(set(every))  # no two glyphs (or entries) read alike
    for name, ds in DESCRIPTIONS.items():
        assert len(ds) >= 3
        word = re.compile(rf"\b{name.replace('-', '[- ]')}\b")  # the manual's own name
        assert not any(word.search(d) for d in ds), name


def test_defuser_and_manual_words_differ_and_are_fixed_per_episode():
    defuser, manual = glyph_words(7)
    assert all(defuser[g] != manual[g] for g in DESCRIPTIONS)
    assert glyph_words(7) == (defuser, manual)
    assert any(glyph_words(i)[0] != defuser for i in range(1, 4))  # drawn per episode


def test_descriptions_replace_the_names_in_the_view_and_the_manual():
    defuser, manual = glyph_words(0)
    view = describe_view(ZOOMED, defuser)
    assert f'[A] TL "{defuser["cursive"]}" unlit' in view
    assert f'BR "{defuser["euro"]}" unlit' in describe_view(re.sub(r"\[.\] ", "", ZOOMED),
                                                             defuser)  # the unlabelled frame
    assert not any(n in view for n in ("cursive", "hollow-star", "question-mark", "euro"))
    assert view.splitlines()[:5] == ZOOMED.splitlines()[:5]
    text = manual_text(vanilla_ruleset())
    described = describe_manual(text, manual)
    columns = [line for line in described.splitlines() if line.startswith("  column ")]
    assert len(columns) == 6
    assert columns[0] == "  column 1: " + "; ".join(
        f'"{manual[g]}"' for g in ("balloon", "at", "upside-down-y", "squiggly-n",
                                   "squid-knife", "hook-n", "left-c"))
    others = [line for line in text.splitlines() if not line.startswith("  column ")]
    assert [line for line in described.splitlines() if not line.startswith("  column ")] == \
        others


def test_gptnt_hud_shows_the_clock_only_on_the_timer_face():
    front = "time 01:30\nstrikes 0 of 3\nface front\nzoom none\nmodule [A] Keypad unsolved"
    assert gptnt_hud(front) == front
    assert gptnt_hud(ZOOMED) == ZOOMED.split("\n", 2)[2]
    back = front.replace("face front", "face back")
    assert gptnt_hud(back) == "face back\nzoom none\nmodule [A] Keypad unsolved"


def test_unknown_settings_are_refused():
    env = jaxcollab.make("ktane/keypad")
    with pytest.raises(ValueError, match="unknown ktane glyphs 'drawn'"):
        KtaneGame(env, glyphs="drawn")
    with pytest.raises(ValueError, match="unknown ktane hud 'never'"):
        KtaneGame(env, hud="never")


@pytest.mark.full  # long for the default tier (measured idle)
def test_run_with_both_options(server, tmp_path):
    """A Keep-Talking run under both options: the zoomed Defuser reads its own descriptions
    and no clock, the Expert's manual holds the other descriptions; the default run keeps the
    names and the header (the easings the default view keeps)."""
    llm = LLMConfig(base_url=server.url, model="good", backoff_s=0.01)
    options = {"ktane": {"glyphs": "described", "hud": "gptnt"}}
    evaluate(llm, RunConfig(env="ktane/keypad", episodes=1, options=options), tmp_path / "a")
    rec = json.loads(transcript_path(tmp_path / "a", "ktane/keypad").read_text())
    d, e = rec["agents"]["defuser"], rec["agents"]["expert"]
    defuser, manual = glyph_words(0)
    first, zoomed = d[0]["prompt"][-1]["content"], d[1]["prompt"][-1]["content"]
    assert first.startswith("time ") and "zoom none" in first  # the front face: the timer
    assert "zoom on" in zoomed and not re.search(r"^(time|strikes) ", zoomed, re.M)
    keys = re.findall(r'^\[[A-D]\] (?:TL|TR|BL|BR) "([^"]+)"', zoomed, re.M)
    assert len(keys) == 4 and set(keys) <= set(defuser.values())
    expert_first = e[0]["prompt"][1]["content"]
    assert "column 1: balloon" not in expert_first
    assert f'column 1: "{manual["balloon"]}"' in expert_first
    evaluate(llm, RunConfig(env="ktane/keypad", episodes=1), tmp_path / "b")
    rec = json.loads(transcript_path(tmp_path / "b", "ktane/keypad").read_text())
    zoomed = rec["agents"]["defuser"][1]["prompt"][-1]["content"]
    assert zoomed.startswith("time ") and re.search(r"^\[A\] TL [a-z-]+ unlit", zoomed, re.M)
