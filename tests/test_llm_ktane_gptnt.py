"""GPTNT's channel for LLM Keep-Talking teams (``ktane.view=gptnt``) and the single-agent
ablations (``ktane.solo``): the prompts each role receives, rendered and read; solo runs end to
end; pass@1 on mission sets (async play's clocks: ``test_llm_ktane_async.py``)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest
from llm_server import LLMServer

import jaxcollab
from jaxcollab.agents.ktane import evaluate as ktane_evaluate
from jaxcollab.agents.ktane.llm import (
    MANUAL_HEADER,
    OMITTED,
    PREVIOUS,
    KtaneGame,
    gptnt_system_prompt,
)
from jaxcollab.core.errors import ConfigValueError
from jaxcollab.envs.ktane import KtaneEnv, Mission
from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane import vocab as V
from jaxcollab.envs.ktane.channel import FRAMES, defuser_text, morse_frames
from jaxcollab.envs.ktane.mission import EXPERT
from jaxcollab.envs.ktane.render import manual_text
from jaxcollab.envs.ktane.state import FEEDBACK
from jaxcollab.llm import jsonl
from jaxcollab.llm.bridge import Episode, estimate_tokens
from jaxcollab.llm.client import LLMConfig, Reply
from jaxcollab.llm.run import transcript_path

BOARD = ("morse", "simon", "maze", "wires")  # one bomb, one compile, a slot per module
PARTS = ("# Scenario", "# Role", "# Reasoning", "# Game mechanics", "# Action commands",
         "# Requirements")
#: ktane/wires episode 0 of seed 1: cutting wire B solves it (the local server's Defuser
#: selects [A], then cuts [B])
SOLVED_BY_B = 1


def reply(kind: str, latency_s: float = 0.0, **data) -> Reply:
    action = {"result": {"kind": kind, "data": data}}
    return Reply(f"<thoughts>t</thoughts><action>{json.dumps(action)}</action>",
                 latency_s=latency_s)


@pytest.fixture(scope="module")
def board():
    """``(env, state, observe)`` of a four-module bomb, observed by one compiled function."""
    env = KtaneEnv(Mission(modules=BOARD, time_limit_s=300))
    _, state = jax.jit(env.reset)(jax.random.PRNGKey(3))
    return env, jax.device_get(state), jax.jit(env.observe)


def row(board, **changes) -> np.ndarray:
    env, state, observe = board
    return np.asarray(observe(state.replace(**changes)))[0]


def describe(board, slot: int) -> dict:
    env, state, _ = board
    kind = env.board.types[slot]
    rules = jax.device_get(env.default_params.rules)
    return kind.describe(jax.device_get(kind.layout.unpack(state.modules[slot])), rules)


def units(pattern: str) -> str:
    return "0".join("1" if s == "." else "111" for s in pattern)


# --- the Defuser's channel ----------------------------------------------------------------------

def test_no_outcome_field_and_no_partner_phrase(board):
    phrase = np.zeros_like(board[1].messages)
    phrase[EXPERT, :3] = V.toks(("cut", "red", "wire"))
    obs = row(board, strikes=np.int32(1), feedback=np.int32(FEEDBACK[3]), messages=phrase,
              fresh=np.array([False, True]))
    full = board[0].render_observation(obs, 0)
    assert "last strike" in full and "expert says cut red wire" in full  # the scripted view
    text = defuser_text(obs, 12.0)
    assert text.splitlines()[:4] == ["time 05:00", "strikes 1 of 3", "face front", "zoom none"]
    assert not re.search(r"^last|\bsays\b|\bsaid\b|cut red wire", text, re.M)
    assert "module [A] Morse Code unsolved" in text and "module [D] Wires unsolved" in text


def test_morse_light_is_sixteen_timed_frames(board):
    light = describe(board, 0)
    word, phase, loop = light["word"], light["phase"], light["light_units"]
    text = defuser_text(row(board, zoom=np.int32(0)), 7.5)
    (line,) = [x for x in text.splitlines() if x.startswith("light")]
    frames = line.split(": ")[1].split()
    assert line.startswith(f"light ({FRAMES} frames 0.25 s apart, oldest first)")
    assert len(frames) == 16 and set(frames) <= {"on", "off"}
    assert "pause" not in text and not re.search(r"[.-]{2,}", text)  # no pre-split letters
    # a whole loop, watched from game time 0, is the module's light starting at its phase
    seen = "".join("1" if f == "on" else "0" for f in
                   morse_frames(line_loop(board), np.arange(len(loop)) * 0.25))
    assert seen in loop + loop
    start = (units(T.MORSE_CODE[word[phase]]) + "000") if phase < len(word) else "0" * 7
    assert seen.startswith(start)
    t = np.arange(16) * 0.25 + 7.5 - 3.75  # the window ending at 7.5 s is that light's frames
    assert frames == morse_frames(line_loop(board), t)
    previous = defuser_text(row(board, zoom=np.int32(0)), 7.5, labels=False, frames=1)
    assert f"light (1 frame): {frames[-1]}" in previous and "[" not in previous


def line_loop(board) -> list[str]:
    """The Morse view's loop words, as the environment writes them (the scripted view)."""
    full = board[0].render_observation(row(board, zoom=np.int32(0)), 0)
    return next(x for x in full.splitlines() if x.startswith("light")).split()[1:]


def test_simon_flashes_are_frames_not_a_list(board):
    env, state, _ = board
    kind = env.board.types[1]
    m = kind.layout.unpack(state.modules[1])
    staged = np.array(state.modules)
    staged[1] = np.asarray(kind.layout.pack(dict(m, stage=3)))
    seq = describe(board, 1)["sequence"][:3]
    text = defuser_text(row(board, zoom=np.int32(1), modules=staged), 30.0)
    assert "flashes" not in text and "entered" not in text
    (line,) = [x for x in text.splitlines() if x.startswith("buttons lit")]
    frames = line.split(": ")[1].split()
    assert len(frames) == 16 and set(frames) <= {"dark", *T.SIMON_COLORS}
    lit = [f for f in frames if f != "dark"]
    assert any(lit[i:i + 3] == seq for i in range(len(lit)))  # one whole loop, in order
    assert "[A] red [B] blue [C] green [D] yellow" in text
    solved = defuser_text(row(board, zoom=np.int32(1), modules=staged,
                              solved=np.array([False, True, False, False])), 30.0)
    dark = " ".join(["dark"] * 16)
    assert f"buttons lit (16 frames 0.25 s apart, oldest first): {dark}" in solved


def test_simon_loop_restarts_when_the_defuser_zooms_in(board):
    """GPTNT App. C.2.3: the loop starts again from its first flash on a zoom in (here the
    slot before the observation, 3 s earlier) or a strike."""
    game = KtaneGame(board[0])
    ep = Episode(0, {"defuser": [], "expert": []}, {})
    zero = np.zeros_like(row(board))
    first = describe(board, 1)["sequence"][0]
    for step, zoom in enumerate((-1, -1, -1, -1, 1)):  # zoomed in by the action at 3 s
        obs = np.stack([row(board, zoom=np.int32(zoom)), zero])
        _, (req,) = play(game, ep, step, obs, lambda r: reply("do_nothing"))
    line = next(x for x in req.messages[-1]["content"].splitlines() if x.startswith("buttons"))
    assert line.split(": ")[1].split()[:5] == ["dark", "dark", "dark", first, "dark"]
    assert ep.scratch["ktane"]["simon"] == ((3.0, 3.0, 1),)  # from 3 s: stage 1's loop from 3 s
    assert ep.history["defuser"][-1]["clock_s"] == 6


def test_maze_is_drawn_as_a_grid(board):
    maze = describe(board, 2)
    text = defuser_text(row(board, zoom=np.int32(2)), 3.0)
    lines = text.splitlines()
    top = lines.index(next(x for x in lines if x.startswith("maze grid"))) + 1
    grid = [x.split() for x in lines[top:top + 6]]
    assert all(len(r) == 6 for r in grid) and lines[top + 6] == "[A] up [B] down [C] left [D] right"
    cell = lambda cr: grid[cr[1] - 1][cr[0] - 1]  # noqa: E731  (col, row), 1-based
    assert cell(maze["light"]) == "W" and cell(maze["goal"]) == "R"
    assert sum(r.count("W") for r in grid) == 1 and sum(r.count("R") for r in grid) == 1
    for marker in maze["markers"]:
        assert cell(marker) in ("G", "W", "R")
    assert "markers" not in text and not re.search(r"^(light|goal) \d", text, re.M)


# --- the prompts ---------------------------------------------------------------------------------

def test_system_prompts_have_gptnt_six_parts():
    for mode in ("sync", "async"):
        prompts = {"defuser": gptnt_system_prompt(0, mode), "expert": gptnt_system_prompt(1, mode),
                   **{s: gptnt_system_prompt(0, mode, s) for s in ("with_manual", "no_manual")}}
        for name, text in prompts.items():
            heads = [line for line in text.splitlines() if line.startswith("# ")]
            assert heads == list(PARTS), name
            # GPTNT §10.2 measures the no-manual solo's recall: its prompt must not forbid it
            assert ("remember" in text) == (name != "no_manual"), name
            assert "BOMB DEFUSAL MANUAL" not in text  # the manual comes in the first message
            assert ("clock runs continuously" in text) == (mode == "async")
        assert "interact_game" not in prompts["expert"] and "send_message" in prompts["expert"]
        assert "first message" in prompts["expert"] and "cannot see or read" in prompts["expert"]
        for solo in ("with_manual", "no_manual"):
            assert "send_message" not in prompts[solo] and "single-player" in prompts[solo]
        assert "no manual" in prompts["no_manual"] and "first message" in prompts["with_manual"]
        assert "anything you know about the game" in prompts["no_manual"]
        assert "never told what your actions did" in prompts["defuser"]


def play(game, ep, step, obs, answer):
    """One environment step of ``game``: every request answered by ``answer(req)``; the
    joint action and the requests sent."""
    gen, sent, replies = game.turn(ep, step, obs), [], None
    while True:
        try:
            reqs = next(gen) if replies is None else gen.send(replies)
        except StopIteration as stop:
            return stop.value, sent
        sent += reqs
        replies = [answer(r) for r in reqs]


def test_defuser_holds_its_current_and_previous_view_only(board):
    env = board[0]
    game = KtaneGame(env)
    ep = Episode(0, {"defuser": [], "expert": []}, {})
    obs = np.stack([row(board, zoom=np.int32(0)), np.zeros_like(row(board))])
    answer = lambda r: (reply("send_message", message=f"note {r.nonce}")  # noqa: E731
                        if r.agent == "expert" else reply("do_nothing"))
    for step in range(5):
        _, sent = play(game, ep, step, obs, answer)
    (req,) = sent
    users = [m["content"] for m in req.messages if m["role"] == "user"]
    assert len(users) == 3 and len(req.messages) == 6  # every earlier reply stays
    assert users[0].startswith(OMITTED) and "light" not in users[0]
    assert users[1].startswith(PREVIOUS) and "light (1 frame)" in users[1]
    assert "[A]" not in users[1] and "[A] left [B] right [C] TX" in users[2]
    assert "light (16 frames" in users[2] and not users[2].startswith(PREVIOUS)
    assert "Messages from the Expert:\nnote 0:1" in users[1]  # messages stay in the history
    assert "Messages from the Expert:\nnote 0:3" in users[2]
    assert not any(re.search(r"^last ", u, re.M) for u in users)
    assert all("BOMB DEFUSAL MANUAL" not in m["content"] for m in req.messages)


def test_manual_in_the_experts_first_message_survives_truncation(board):
    game = KtaneGame(board[0])
    ep = Episode(0, {"defuser": [], "expert": []}, {})
    obs = np.stack([row(board), np.zeros_like(row(board))])
    game.budget = estimate_tokens([{"content": game.manual}]) + 1500  # it and a few exchanges
    for step in range(1, 40, 2):
        _, (req,) = play(game, ep, step, obs, lambda r: reply("send_message",
                                                              message="x " * 300))
    system, first = req.messages[:2]
    assert first["content"].startswith(f"{MANUAL_HEADER}\n\n{manual_text()}")
    assert "BOMB DEFUSAL MANUAL" not in system["content"]
    assert len(req.messages) < 2 * 20 + 2  # older exchanges were dropped, not the manual
    assert req.messages[-1]["content"] == "No new messages from the Defuser."


# --- through the HTTP client: solo runs ----------------------------------------------------------

@pytest.fixture(scope="module")
def fast():
    with LLMServer() as srv:
        yield srv


def cfg(server) -> LLMConfig:
    return LLMConfig(base_url=server.url, model="good", backoff_s=0.01)


def test_solo_ablations_end_to_end(fast, tmp_path, cli):
    """``eval/rollout.py agent=llm ktane.solo=with_manual|no_manual``: one player, the
    results in the collaborative run's layout."""
    runs = {}
    for solo in ("null", "with_manual", "no_manual"):
        out = tmp_path / solo
        cli("eval/rollout.py", "env=ktane/wires", "agent=llm", f"llm.base_url={fast.url}",
            "llm.model=good", f"ktane.solo={solo}", f"seed={SOLVED_BY_B}", "episodes=1",
            "ktane.reflection=false", f"out_dir={out}")
        runs[solo] = (json.loads((out / "results.json").read_text()),
                      jsonl.read(transcript_path(out, "ktane/wires"))[0])
    pair, _ = runs["null"]
    for solo in ("with_manual", "no_manual"):
        results, rec = runs[solo]
        assert set(results) == set(pair) and results["config"]["ktane"]["solo"] == solo
        assert list(rec["agents"]) == ["defuser"] and set(results["tokens"]) == {"defuser",
                                                                                  "total"}
        assert rec["success"] and results["success_rate"] == 1.0 and rec["steps"] == 3
        prompts = [m["content"] for turn in rec["agents"]["defuser"] for m in turn["prompt"]]
        assert "single-player" in prompts[0] and "send_message" not in prompts[0]
        assert not any("Messages from the" in p for p in prompts)
        has_manual = any("BOMB DEFUSAL MANUAL" in p for p in prompts)
        assert has_manual == (solo == "with_manual")
    first_user = runs["with_manual"][1]["agents"]["defuser"][0]["prompt"][1]["content"]
    assert first_user.startswith(MANUAL_HEADER) and "zoom none" in first_user


def test_bad_ktane_options_are_refused():
    family = jaxcollab.family("ktane")
    for key, value in (("view", "pixels"), ("solo", "alone"), ("mode", "turbo")):
        with pytest.raises(ConfigValueError, match=f"ktane.{key}='{value}'"):
            family.check(["ktane/wires"], {"ktane": {key: value}})
    with pytest.raises(ValueError, match="unknown ktane view"):
        KtaneGame(jaxcollab.make("ktane/wires"), view="pixels")


# --- pass@1 on mission sets -------------------------------------------------------------------

def test_pass_at_1_on_a_mission_set():
    names = ["ktane/missions/single/wires/0", "ktane/missions/single/wires/1"]
    results = ktane_evaluate(names, "random", 8, 0, chunk=8)
    rates = [results["per_module"][n]["success_rate"] for n in names]
    for n in names:
        out = results["per_module"][n]["outcomes"]
        assert results["per_module"][n]["success_rate"] == out["solved"] / 8
    assert results["pass_at_1"] == pytest.approx(np.mean(rates)) and 0 <= np.mean(rates) <= 1
    assert results["pass_at_1_missions"] == 2
    assert results["pass_at_1_by_module"] == {"wires": pytest.approx(np.mean(rates))}
    fresh = ktane_evaluate(["ktane/wires"], "random", 8, 0, chunk=8)  # fresh bombs: no pass@1
    assert "pass_at_1" not in fresh


@pytest.mark.slow
def test_readme_solo_command_as_a_subprocess(fast, tmp_path):
    """The README's ``python eval/rollout.py env=ktane/missions/single agent=llm …
    ktane.solo=no_manual episodes=1`` on one mission of the set: pass@1 in its results."""
    root = Path(__file__).resolve().parent.parent
    out = tmp_path / "solo"
    done = subprocess.run(
        [sys.executable, "eval/rollout.py", "env=ktane/missions/single/wires/0", "agent=llm",
         f"llm.base_url={fast.url}", "llm.model=good", "ktane.solo=no_manual", "episodes=1",
         "ktane.reflection=false", f"out_dir={out}"],
        cwd=root, env=dict(os.environ, JAX_PLATFORMS="cpu"), text=True, capture_output=True,
        timeout=600)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    results = json.loads((out / "results.json").read_text())
    # the server's player cuts wire B; this bomb's wire to cut is D: a strike, then time out
    assert results["outcomes"]["timeout"] == 1 and results["mean_strikes"] == 1.0
    assert results["pass_at_1"] == 0.0 and results["pass_at_1_missions"] == 1
    assert results["pass_at_1_by_module"] == {"wires": 0.0}
    assert set(results["tokens"]) == {"defuser", "total"}
