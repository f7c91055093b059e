"""GPTNT's clocks for LLM Keep-Talking teams, played against the environment: async play in
continuous game time (App. C.4.2: a Defuser action lands at its dispatch time, the bomb's timer
runs while a model thinks, the Expert's loop keeps its own pace) and Simon Says' pauses (App.
C.2.3); the host's message count and the progress bar."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from llm_server import LLMServer
from test_llm_ktane_gptnt import BOARD, SOLVED_BY_B, cfg, describe, play, reply

import jaxcollab
from jaxcollab.agents.ktane.llm import POLL_S, KtaneGame, async_max_steps
from jaxcollab.envs.ktane import KtaneEnv, Mission
from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane.channel import (
    SIMON_PRESS_PAUSE_S,
    frame_times,
    morse_frames,
    simon_event,
    simon_frames,
)
from jaxcollab.envs.ktane.modules.base import SELECT, WAIT
from jaxcollab.envs.ktane.rules import TimedAction
from jaxcollab.io.llm_run import RunConfig
from jaxcollab.io.llm_run import evaluate as llm_evaluate
from jaxcollab.llm import jsonl
from jaxcollab.llm.bridge import Episode
from jaxcollab.llm.run import transcript_path


@pytest.fixture(scope="module")
def bomb():
    """``(env, fresh state, jitted step, jitted observe)`` of the four-module board."""
    env = KtaneEnv(Mission(modules=BOARD, time_limit_s=300))
    _, state = jax.jit(env.reset)(jax.random.PRNGKey(3))
    return env, state, jax.jit(env.step), jax.jit(env.observe)


def drive(game, bomb, steps: int, answer):
    """``steps`` environment steps of ``game`` on the board, each request answered by
    ``answer(req, state)``: ``(episode, [(action, state after it)])``."""
    env, state, step_fn, observe = bomb
    ep = Episode(0, {"defuser": [], "expert": []}, {})
    out = []
    for t in range(steps):
        obs = np.asarray(observe(state))
        action, _ = play(game, ep, t, obs, lambda r, s=state: answer(r, s))
        _, state, *_ = step_fn(jax.random.PRNGKey(t), state, action)
        out.append((action, jax.device_get(state)))
    return ep, out


def lines(turn: dict, head: str) -> str:
    return next(x for x in turn["seen"].splitlines() if x.startswith(head))


# --- async: continuous game time -----------------------------------------------------------

def test_a_slow_defuser_reply_lands_at_its_dispatch_time(bomb):
    """A 10 s Defuser reply is a 10 s wait (the timer runs), then its action lands at 10 s,
    then the 0.5 s poll sleep; its next cycle starts at 10.5 s and sees the timer at 289.5 s.
    Meanwhile a 1 s Expert takes seven turns (0, 1.5, …, 9 s), all of whose messages are in the
    Defuser's next flush."""
    game = KtaneGame(bomb[0], mode="async", reflection=False)
    answer = lambda r, s: (reply("send_message", 1.0, message=f"sent {r.nonce}")  # noqa: E731
                           if r.agent == "expert" else
                           reply("interact_game", 10.0, action="select", location="A"))
    ep, out = drive(game, bomb, 6, answer)
    (think, s0), (_, s1), (land, s2), (idle, s3), (think2, s4), _ = out
    assert isinstance(think, TimedAction) and think.actions[0, 0] == WAIT
    assert int(think.elapsed_cs) == 1000 and int(s0.time_left_cs) == 30000 - 1000
    assert int(s0.zoom) == -1  # nothing happened while the Defuser thought
    assert land.actions[0, :2].tolist() == [SELECT, 0] and int(land.elapsed_cs) == 50
    assert int(s2.zoom) == 0 and int(s2.time_left_cs) == 30000 - 1050
    assert idle.actions[1, 0] == WAIT and int(s3.n_messages[1]) == 1  # no cycle began in 10-10.5 s
    expert = ep.history["expert"]
    assert [h["clock_s"] for h in expert[:7]] == [0.0, 1.5, 3.0, 4.5, 6.0, 7.5, 9.0]
    assert [h["step"] for h in expert[:7]] == [1] * 7
    first, second = ep.history["defuser"]
    assert (first["clock_s"], first["dispatch_s"]) == (0.0, 10.0)
    assert second["clock_s"] == 10.5 and second["seen"].startswith("time 04:49\n")
    inbox = second["seen"].split("Messages from the Expert:\n")[1].split("\n\n")[0]
    assert inbox.splitlines() == [f"sent 0:1{j}" for j in ("", *(f".{k}" for k in range(1, 7)))]
    assert int(think2.elapsed_cs) == 1000 and int(s4.time_left_cs) == 30000 - 2050
    # the Morse light it zoomed into, as 16 frames ending at 10.5 s of game time
    loop = next(x for x in bomb[0].render_text(s2, 0).splitlines() if x.startswith("light"))
    frames = morse_frames(loop.split()[1:], frame_times(10.5))
    assert lines(second, "light") == "light (16 frames 0.25 s apart, oldest first): " \
        + " ".join(frames)
    assert frames != morse_frames(loop.split()[1:], frame_times(12.0))  # it moves on


def test_async_message_waits_for_its_dispatch_time(bomb):
    """A 4 s Expert message reaches the Defuser's first cycle at or after 4 s; a 0.1 s Defuser
    starts a cycle every 0.6 s (reply + sleep), each costing 0.6 s of bomb time."""
    game = KtaneGame(bomb[0], mode="async", reflection=False)
    answer = lambda r, s: (reply("send_message", 4.0, message="late")  # noqa: E731
                           if r.agent == "expert" else reply("do_nothing", 0.1))
    ep, out = drive(game, bomb, 32, answer)
    d = ep.history["defuser"]
    assert [h["clock_s"] for h in d] == pytest.approx([0.6 * k for k in range(8)])
    assert ["late" in h["seen"] for h in d] == [False] * 7 + [True]  # 4.2 s: the first >= 4
    assert [h["clock_s"] for h in ep.history["expert"]] == [0.0, 4.5]
    assert int(out[-1][1].time_left_cs) == 30000 - 8 * 60


def test_the_bomb_explodes_while_a_slow_defuser_thinks():
    """ktane/wires has 81 s: a 90 s reply times the bomb out before its select lands."""
    env = jaxcollab.make("ktane/wires")
    game = KtaneGame(env, mode="async", reflection=False)
    _, state = jax.jit(env.reset)(jax.random.PRNGKey(0))
    ep, out = drive(game, (env, state, jax.jit(env.step), jax.jit(env.observe)), 2,
                    lambda r, s: reply("interact_game", 90.0, action="select", location="A"))
    assert int(out[0][1].outcome) == T.TIMEOUT and int(out[0][1].zoom) == -1
    assert game.max_steps(env) == async_max_steps(env) == 4 * 162 + 2
    assert KtaneGame(env).max_steps(env) == env.max_episode_steps


def test_sync_mode_is_unchanged(bomb):
    """Sync: bare actions, Δ = 3 s per Defuser cycle whatever the latency, one Expert cycle
    per Defuser cycle."""
    game = KtaneGame(bomb[0], mode="sync", reflection=False)
    answer = lambda r, s: reply("send_message" if r.agent == "expert" else "do_nothing",  # noqa: E731
                                9.0, message="hi")
    ep, out = drive(game, bomb, 4, answer)
    assert all(isinstance(a, np.ndarray) for a, _ in out)
    assert [int(s.time_left_cs) for _, s in out] == [29700, 29700, 29400, 29400]
    assert [h["clock_s"] for h in ep.history["defuser"]] == [0.0, 3.0]
    assert [h["clock_s"] for h in ep.history["expert"]] == [3.0, 6.0]


# --- Simon Says' pauses ----------------------------------------------------------------------

def buttons(turn: dict) -> list[str]:
    return lines(turn, "buttons lit").split(": ")[1].split()


def test_simon_pauses_after_presses(bomb):
    """Sync, GPTNT App. C.2.3. 0 s: zoom into Simon (its loop starts at once; stage 1 = one
    colour c1, a 5-frame loop). 3 s: press the right button: stage 1 done, stage 2's loop
    (c1 c2, 7 frames) starts 1 s later, at 4 s. 6 s: press stage 2's first button: dark for
    5 s, the loop again from 11 s. Each window: 16 frames ending at the cycle's start."""
    c1, c2 = describe((bomb[0], bomb[1], bomb[3]), 1)["sequence"][:2]
    game = KtaneGame(bomb[0], reflection=False)

    def answer(req, state):
        if req.agent == "expert":
            return reply("do_nothing")
        if int(state.zoom) < 0:
            return reply("interact_game", action="select", location="B")
        press = int(bomb[0].module_oracle(state)[1])
        if int(state.turn) in (2, 4):
            return reply("interact_game", action="press", location=chr(65 + press))
        return reply("do_nothing")

    ep, out = drive(game, bomb, 9, answer)
    assert [int(s.strikes) for _, s in out] == [0] * 9
    d = ep.history["defuser"]
    o = "dark"
    assert buttons(d[1]) == [o, o, o, c1, o, o, o, o, c1, o, o, o, o, c1, o, o]  # -0.75 … 3 s
    assert buttons(d[2]) == [o, c1, o, o, o, o, o, c1, o, c2, o, o, o, o, c1, o]  # 2.25 … 6 s
    assert buttons(d[3]) == [o, o, c1] + [o] * 13  # 5.25 … 9 s: the 5 s pause from 6 s
    assert buttons(d[4]) == [o] * 11 + [c1, o, c2, o, o]  # 8.25 … 12 s: again from 11 s
    assert ep.scratch["ktane"]["simon"][-1] == (6.0, 6.0 + SIMON_PRESS_PAUSE_S, 2)


def test_simon_frames_and_events_by_hand(bomb):
    env, state, _, observe = bomb
    zoomed = state.replace(zoom=np.int32(1))
    rows = [np.asarray(observe(s))[0] for s in (state, zoomed,
                                              zoomed.replace(strikes=np.int32(1)))]
    assert simon_event(rows[0], rows[1]) == "zoom" and simon_event(rows[1], rows[1]) is None
    assert simon_event(rows[1], rows[2]) == "press"  # a wrong press: its strike
    schedule = ((0.0, 0.0, 1), (3.0, 8.0, 1))  # a loop from 0 s; a press at 3 s, dark until 8 s
    times = [-0.5, 0.0, 1.25, 2.5, 3.0, 4.0, 7.75, 8.0, 9.25]
    assert simon_frames(["red", "blue"], times, schedule=schedule) == [
        "dark", "red", "red", "red", "dark", "dark", "dark", "red", "red"]
    assert simon_frames(["red"], times, solved=True, schedule=schedule) == ["dark"] * 9


# --- the host's counts, the progress bar ------------------------------------------------------

@pytest.fixture(scope="module")
def late():
    """Expert replies in 0.5 s; the Defuser's first reply (nothing zoomed) in 3.2 s, later
    ones in 0.05 s (the server sleeps that long before answering)."""
    def latency(body: dict) -> float:
        if "You are the Expert" in body["messages"][0]["content"]:
            return 0.5
        return 3.2 if "zoom none" in body["messages"][-1]["content"] else 0.05

    with LLMServer(latency=latency) as srv:
        yield srv


@pytest.mark.full  # long for the default tier (measured idle)
def test_async_run_against_a_late_server(late, tmp_path):
    """Through the HTTP client, latencies measured: the select lands at the first reply's
    measured latency, the cut solves the module at the second's; the timer reads 81 s less
    exactly that game time; messages per Defuser cycle are the host's count of queued
    messages; the progress bar counts every request, the reflections included."""
    calls = []
    rc = RunConfig(env="ktane/wires", seed=SOLVED_BY_B, episodes=1,
                   options={"ktane": {"mode": "async", "reflection": True}})
    results = llm_evaluate(cfg(late), rc, tmp_path,
                           progress=lambda n, **kw: calls.append((n, kw)))
    (rec,) = jsonl.read(transcript_path(tmp_path, "ktane/wires"))
    d, e = rec["agents"]["defuser"], rec["agents"]["expert"]
    lags = [round(h["latency_s"], 2) for h in d]
    assert rec["success"] and rec["steps"] == 7 and lags[0] >= 3.2  # think, land, think, land
    assert [h["clock_s"] for h in d] == pytest.approx([0.0, lags[0] + POLL_S])
    assert d[1]["dispatch_s"] == pytest.approx(lags[0] + POLL_S + lags[1])
    # the cut's turn, like every turn, ends with its sleep (the solving turn's time counts)
    assert results["mean_time_left_s"] == pytest.approx(81 - (lags[0] + lags[1] + 2 * POLL_S))
    for prev, cur in zip(e, e[1:]):  # each Expert cycle 0.5 s after the previous dispatch
        assert cur["clock_s"] == pytest.approx(prev["dispatch_s"] + POLL_S)
    delivered = [h for h in e if h["dispatch_s"] <= d[1]["clock_s"]]
    inbox = d[1]["prompt"][-1]["content"].split("Messages from the Expert:\n")[1]
    assert inbox.split("\n\n")[0].splitlines() == ["Cut the second wire."] * len(delivered)
    assert len(delivered) >= 3 and "Cut the second wire" not in d[0]["prompt"][-1]["content"]
    assert results["messages_sent"] == {"defuser": 0.0, "expert": float(len(e))}
    assert results["messages_per_defuser_cycle"] == len(e) / 2  # not the env's one per step
    assert results["mean_defuser_actions"] == 2  # select, cut: not the waits while it thought
    assert rec["data"]["messages_sent"] == {"defuser": 0, "expert": len(e)}
    assert calls[-1] == (1, {"requests": len(d) + len(e) + 2,  # and a reflection each
                             "tokens": calls[-1][1]["tokens"]})
    assert calls[-1][1]["tokens"] == results["tokens"]["total"] > calls[-2][1]["tokens"]
    assert set(rec["data"]["reflection"]) == {"defuser", "expert"}
