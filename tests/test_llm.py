"""LLM path: parser classes, client (retries, cache, preflight, refusals), prompts' information
asymmetry, and end-to-end episodes through the real HTTP client against a local server."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

import jaxcollab
from jaxcollab.agents.bomb.llm import REPHRASE, BombGame
from jaxcollab.agents.ktane.llm import KtaneGame, decode_action
from jaxcollab.agents.maze.llm import parse_move
from jaxcollab.agents.maze.llm_results import bootstrap_interval
from jaxcollab.core.rollout import split_episode_key
from jaxcollab.envs.bomb import tables as T
from jaxcollab.io.llm_run import RunConfig, evaluate
from jaxcollab.llm.bridge import Episode
from jaxcollab.llm.client import ChatClient, LLMConfig, LLMError, Reply, Request
from jaxcollab.llm.parse import ERROR_CLASSES, parse_reply, parse_tool_calls
from jaxcollab.llm.run import transcript_path

GOOD = '[{"call": "wait"}]'
ROOT = Path(__file__).parents[1]


def cfg(server, model="good", **kw) -> LLMConfig:
    return LLMConfig(base_url=server.url, model=model, backoff_s=0.01, **kw)


# --- parser: one case per GPTNT error class --------------------------------------------------

PARSE_CASES = {
    "missing_thoughts": (f"<action>{GOOD}</action>", True),
    "action_before_thoughts": (f"<thoughts>x <action>{GOOD}</action></thoughts>", True),
    "content_after_action": (f"<thoughts>x</thoughts><action>{GOOD}</action> done.", True),
    "malformed_xml": (f"<thoughts>x</thoughts><action>{GOOD}", True),
    "repaired_json": ('<thoughts>x</thoughts><action>[{"call": "wait",}</action>', True),
    "no_action": ("<thoughts>I am not sure.</thoughts>", False),
    "multiple_actions": (f"<thoughts>x</thoughts><action>{GOOD}</action><action>{GOOD}</action>",
                         False),
    "unparseable": ("<thoughts>x</thoughts><action>cut the red one</action>", False),
}


@pytest.mark.parametrize("cls", sorted(PARSE_CASES))
def test_parser_error_class(cls):
    text, ok = PARSE_CASES[cls]
    parsed = parse_reply(text)
    assert cls in parsed.errors and parsed.ok is ok
    assert (parsed.action == [{"call": "wait"}]) is ok
    if cls == "repaired_json":  # GPTNT F.2: a silent repair gives no error signal at all
        assert parsed.note() == ""
        return
    assert parsed.note().startswith("Your previous response was carried out" if ok else
                                    "The response you generated caused you to skip")


def test_parser_salvage_and_truncation():
    assert parse_reply(f"<thought>t</thought><action>{GOOD}</action>").errors == ()
    fenced = parse_reply(f"<thoughts>t</thoughts>\n```json\n{GOOD}\n```")
    assert fenced.action == [{"call": "wait"}] and fenced.errors == ("malformed_xml",)
    loose = parse_reply(f"<thoughts>t</thoughts> so I do {GOOD} now")
    assert loose.action == [{"call": "wait"}] and loose.ok
    cut = parse_reply('<thoughts>t</thoughts><action>[{"call": "speak", "te', "length")
    assert cut.errors == ("malformed_xml", "repaired_json", "truncated")  # salvaged, then judged
    assert "repaired" not in cut.note() and "cut off at the token limit" in cut.note()
    cut = parse_reply("<thoughts>t</thoughts><action>", finish_reason="length")
    assert cut.errors == ("truncated_unrecoverable",) and not cut.ok
    kept = parse_reply(f"<thoughts>t</thoughts><action>{GOOD}</action>", "length")
    assert kept.ok and kept.errors == ("truncated",)


def test_semantic_classes():
    bomb = BombGame(jaxcollab.make("bomb/base-1"))
    from jaxcollab.agents.bomb.llm import decode_calls

    turn, p = decode_calls(parse_reply('<thoughts>t</thoughts><action>[{"call": "act", "op": '
                                       '"cut", "position": 9}]</action>'))
    assert turn == {} and p.errors == ("out_of_bounds",) and not p.ok
    turn, p = decode_calls(parse_reply('<thoughts>t</thoughts><action>[{"call": "dance"}]'
                                       '</action>'))
    assert turn == {} and p.errors == ("invalid_action",)
    turn, p = decode_calls(parse_reply('<thoughts>t</thoughts><action>[{"call": "wait"}, '
                                       '{"call": "act", "op": "cut", "position": 1}]</action>'))
    assert p.errors == ("multiple_actions",)
    turn, p = decode_calls(parse_reply('<thoughts>t</thoughts><action>[{"call": "speak", "to": '
                                       '"deaf", "text": "hi"}, {"call": "act", "op": "cut", '
                                       '"position": 2}]</action>'))
    assert p.ok and turn == {"speak_to": 0, "text": "hi", "act": "cut", "arg": 1}
    assert bomb.noop()["act"].tolist() == [0, 0, 0]
    act = '{"result": {"kind": "interact_game", "data": {"action": "cut", "location": "%s"}}}'
    view = "module [A] Wires unsolved\n[A] red intact\n[B] blue intact"
    (verb, target, _), p = decode_action(parse_reply(f"<thoughts>t</thoughts><action>"
                                                     f"{act % 'Q'}</action>"), 0, view)
    assert p.errors == ("invalid_label",) and verb == 0
    (verb, target, _), p = decode_action(parse_reply(f"<thoughts>t</thoughts><action>"
                                                     f"{act % 'B'}</action>"), 0, view)
    assert p.ok and (verb, target) == (7, 1)  # CUT, the second target


def test_tool_calls_and_maze_parse():
    calls = [{"function": {"name": "act", "arguments": '{"op": "cut", "position": 2}'}},
             {"function": {"name": "wait", "arguments": ""}}]
    assert parse_tool_calls(calls).action == [{"call": "act", "op": "cut", "position": 2},
                                              {"call": "wait"}]
    move, probs, p = parse_move("think ~r then % 0.2, 0.6, 0.1, 0.1", verbalized=True)
    assert move == 1 and np.allclose(probs, [0.2, 0.6, 0.1, 0.1]) and p.errors == ()
    move, probs, p = parse_move("no idea", verbalized=True)
    assert move is None and p.errors == ("no_action", "unparseable")
    ci = bootstrap_interval(np.array([[1, 1], [0, 0]]))
    assert ci["mean"] == 0.5 and ci["ci_low"] == 0.5 and ci["ci_high"] == 0.5


# --- client ----------------------------------------------------------------------------------

def test_client_retries_caches_and_counts(server, tmp_path):
    req = Request("deaf", ({"role": "system", "content": "maze"},
                           {"role": "user", "content": "go"}), nonce="0")
    client = ChatClient(cfg(server, "flaky"), tmp_path / "c.jsonl")
    n = len(server.requests)
    (reply,) = client.complete_many([req])
    assert reply.text.startswith("I move down") and len(server.requests) == n + 2  # 429, then 200
    again = ChatClient(cfg(server, "flaky"), tmp_path / "c.jsonl")
    assert again.complete_many([req]) == [reply] and len(server.requests) == n + 2
    assert again.usage["deaf"].cached == 1 and again.usage["deaf"].completion_tokens == 9
    other = Request("deaf", req.messages, nonce="1")  # an independent sample is a new request
    assert client.key(other) != client.key(req)


def test_preflight_and_refusal(server, monkeypatch):
    with pytest.raises(LLMError, match=r"http://127\.0\.0\.1:9/v1"):
        ChatClient(LLMConfig(base_url="http://127.0.0.1:9/v1", timeout_s=2)).check()
    with pytest.raises(LLMError, match="'nope' is not served at http://127.0.0.1"):
        ChatClient(cfg(server, "nope")).check()
    (reply,) = ChatClient(cfg(server, "refuse")).complete_many(
        [Request("mute", ({"role": "user", "content": "bomb"},))])
    assert reply.refused and "content policy" in reply.text
    monkeypatch.setenv("JAXCOLLAB_TEST_KEY", "sk-secret")
    client = ChatClient(cfg(server, api_key_env="JAXCOLLAB_TEST_KEY"))
    assert client._headers() == {"Authorization": "Bearer sk-secret"}
    assert "sk-secret" not in json.dumps(client.body(Request("a", ())))


# --- prompts respect information asymmetry ----------------------------------------------------

def _bomb_prompts(env) -> dict[str, str]:
    """Each role's full first prompt (system + observation) in one episode."""
    game = BombGame(env, "playbook")
    reset, step_fn = jax.jit(env.reset), jax.jit(env.step)
    obs, state = reset(jax.random.PRNGKey(3))
    ep, out = Episode(0, {r: [] for r in T.ROLE_NAMES}, {}), {}
    for step in range(3):
        role = int(np.flatnonzero(np.asarray(obs)[:, 3] == T.YES)[0])
        (req,) = next(game.turn(ep, step, np.asarray(obs)))
        out[T.ROLE_NAMES[role]] = "\n".join(m["content"] for m in req.messages)
        obs, state, *_ = step_fn(jax.random.PRNGKey(0), state, env.noop())
    return out


def test_bomb_prompts_information_asymmetry():
    env = jaxcollab.make("bomb/base-2")
    prompts = _bomb_prompts(env)
    blind, mute, deaf = prompts["blind"], prompts["mute"], prompts["deaf"]
    assert not any(re.search(rf"\b{c}\b", blind) for c in T.COLOURS)  # no colour/light/display
    assert "LIGHT [unreadable]" in blind and "DISPLAY [unreadable]" in blind
    assert not any(f"DISPLAY [{d}]" in blind for d in range(10))
    board = re.compile(r"^(LIGHT|DISPLAY|WIRES|KEYPAD|PLATE|STRIP|HISTORY)\b", re.M)
    assert not board.search(mute) and board.search(deaf)  # the manual's rows are indented
    assert "MANUAL" in mute and "MANUAL" not in deaf and "MANUAL" not in blind
    assert "thumbs_up 👍" in deaf and "<thoughts>" in deaf  # emoji alphabet, reply format
    assert "Deaf cannot hear" in blind and "Deaf cannot hear" not in deaf  # weak+: others' limits


def test_expert_prompt_has_no_bomb_state():
    env = jaxcollab.make("ktane/wires")
    game = KtaneGame(env)
    obs, _ = jax.jit(env.reset)(jax.random.PRNGKey(0))
    ep = Episode(0, {"defuser": [], "expert": []}, {})
    (d_req,) = next(game.turn(ep, 0, np.asarray(obs)))
    (e_req,) = next(game.turn(ep, 1, np.asarray(obs)))
    defuser = d_req.messages[-1]["content"]
    expert = "\n".join(m["content"] for m in e_req.messages)
    assert "time 01:21" in defuser and "module [A] Wires unsolved" in defuser
    for line in defuser.splitlines()[:5]:
        assert line not in expert  # timer, strikes, face, zoom, last result
    assert "Wires unsolved" not in expert and "BOMB DEFUSAL MANUAL" in expert
    assert "BOMB DEFUSAL MANUAL" not in "\n".join(m["content"] for m in d_req.messages)


def test_ktane_async_latency_is_game_time():
    env = jaxcollab.make("ktane/wires")
    game = KtaneGame(env, mode="async")
    obs = np.asarray(jax.jit(env.reset)(jax.random.PRNGKey(0))[0])
    ep = Episode(0, {"defuser": [], "expert": []}, {})
    act = ('<thoughts>t</thoughts><action>{"result": {"kind": "interact_game", "data": '
           '{"action": "select", "location": "A"}}}</action>')
    gen = game.turn(ep, 0, obs)
    next(gen)
    with pytest.raises(StopIteration) as stop:  # 7 s of thinking: a 7 s wait
        gen.send([Reply(act, latency_s=7.0, queue_s=30.0)])  # waiting in a queue costs nothing
    assert not stop.value.value.actions.any() and int(stop.value.value.elapsed_cs) == 700
    with pytest.raises(StopIteration) as stop:
        next(game.turn(ep, 2, obs))  # no request: the reply lands (SELECT 0), then 0.5 s
    landed = stop.value.value
    assert landed.actions[0, :2].tolist() == [2, 0] and not landed.actions[0, 2:].any()
    assert int(landed.elapsed_cs) == 50 and ep.scratch["ktane"]["clock_s"] == 7.5


# --- end to end through the real HTTP client ----------------------------------------------------

@pytest.mark.full  # long: the default tier's time (issue 36)
def test_bomb_end_to_end_and_cached_rerun(server, tmp_path):
    rc = RunConfig(env="bomb/base-1", episodes=3, batch=2)
    results = evaluate(cfg(server), rc, tmp_path / "a")
    env = jaxcollab.make("bomb/base-1")
    records = [json.loads(x) for x in transcript_path(tmp_path / "a", "bomb/base-1")
               .read_text().splitlines()]
    assert [r["episode"] for r in records] == [0, 1, 2]
    for r in records:  # Blind cuts wire 1 on its first turn (step 2): right iff wire 1 is it
        key = jaxcollab.episode_keys(0, 3)[r["episode"]]  # the one episode-key convention
        state = env.reset(split_episode_key(key)[0])[1]
        right = env.solution(state) == [0]
        assert r["ending"] == ("defused" if right else "wrong_action") and r["steps"] == 3
        assert r["agents"]["blind"][0]["action"] == [{"call": "act", "op": "cut",
                                                      "position": 1}]
        assert '"Cut wire 1."' in r["agents"]["blind"][0]["prompt"][-1]["content"]
    assert results["success_rate"] == np.mean([r["success"] for r in records])
    assert results["variants"]["bomb/base-1"]["episodes"] == 3 and results["parse_errors"] == {}
    assert set(results["tokens"]) == {"deaf", "mute", "blind", "total"}
    n = len(server.requests)
    again = evaluate(cfg(server), rc, tmp_path / "b", cache_path=tmp_path / "a" / "cache.jsonl")
    assert len(server.requests) == n  # everything replayed from the cache
    a, b = (transcript_path(tmp_path / d, "bomb/base-1").read_bytes() for d in "ab")
    assert a == b and again["success_rate"] == results["success_rate"]
    evaluate(cfg(server), rc, tmp_path / "a")  # rerun in place: finished episodes skipped
    assert transcript_path(tmp_path / "a", "bomb/base-1").read_bytes() == a


def test_bomb_refusals_and_garbage_continue(server, tmp_path):
    rc = RunConfig(env="bomb/base-1", episodes=2, batch=2)  # the batch shape of every bomb test
    refused = evaluate(cfg(server, "refuse"), rc, tmp_path / "r")
    # every refused turn asks once to rephrase (refused again by this server): 2 per turn
    assert refused["endings"] == {"defused": 0, "wrong_action": 0, "timed_out": 2}
    assert refused["refusals"] == 2 * 3 * 8 * 2
    rec = json.loads(transcript_path(tmp_path / "r", "bomb/base-1").read_text().splitlines()[0])
    first, again = rec["agents"]["deaf"][:2]
    assert first["step"] == again["step"] and again["prompt"][-1]["content"] == REPHRASE
    assert again["prompt"][:-1] == first["prompt"]
    garbage = evaluate(cfg(server, "garbage"), rc, tmp_path / "g")
    assert garbage["parse_errors"] == {"missing_thoughts": 48, "no_action": 48}
    rec = json.loads(transcript_path(tmp_path / "g", "bomb/base-1").read_text().splitlines()[0])
    second = rec["agents"]["deaf"][1]["prompt"][-1]["content"]
    assert "NOTICE The response you generated caused you to skip your previous turn" in second


def test_bomb_native_tools(server, tmp_path):
    results = evaluate(cfg(server, tools="native"),
                       RunConfig(env="bomb/base-1", episodes=2, batch=2), tmp_path)
    rec = json.loads(transcript_path(tmp_path, "bomb/base-1").read_text().splitlines()[0])
    assert rec["agents"]["blind"][0]["tool_calls"][0]["function"]["name"] == "act"
    assert rec["agents"]["blind"][0]["action"] == [{"call": "act", "op": "cut", "position": 1}]
    assert results["parse_errors"] == {} and rec["steps"] == 3


def test_bomb_solo(server, tmp_path):
    results = evaluate(cfg(server), RunConfig(env="bomb/base-1", episodes=2, batch=2,
                                              options={"bomb": {"solo_player": True}}),
                       tmp_path)
    rec = json.loads(transcript_path(tmp_path, "bomb/base-1").read_text().splitlines()[0])
    assert list(rec["agents"]) == ["solo"] and rec["agents"]["solo"][0]["step"] == 2
    seen = rec["agents"]["solo"][0]["prompt"][-1]["content"]
    assert "ROLE deaf" in seen and "ROLE mute" in seen and "ROLE blind" in seen
    assert "Your teammates' limits" not in rec["agents"]["solo"][0]["prompt"][0]["content"]
    assert results["episodes"] == 2 and rec["steps"] == 3


@pytest.mark.full  # two bank runs as subprocesses (about a minute each on 2 loaded cores)
def test_llm_solo_bank_run_is_table4_solo(server, tmp_path):
    """SANZARU Table 4 as the README runs it: an LLM solo bank run (the same model holding
    every view, no hints) is the ``solo=`` of the trio's bank run, whose gap is solo minus trio
    per family, read from that file (no scripted solver is played)."""
    def rollout(*args):
        done = subprocess.run([sys.executable, "eval/rollout.py", "env=bomb/base-1",
                               "agent=llm", f"llm.base_url={server.url}", "llm.model=good",
                               "llm.backoff_s=0.01", "bank=true", "repeats=1", *args],
                              cwd=ROOT, capture_output=True, text=True, timeout=900,
                              env=os.environ | {"PYTHONPATH": str(ROOT)})
        assert done.returncode == 0, done.stderr[-2000:]

    rollout("bomb.solo_player=true", "bomb.hint=none", f"out_dir={tmp_path / 'solo'}")
    rollout(f"solo={tmp_path / 'solo' / 'results.json'}", f"out_dir={tmp_path / 'trio'}")
    solo = json.loads((tmp_path / "solo" / "results.json").read_text())
    trio = json.loads((tmp_path / "trio" / "results.json").read_text())
    assert solo["config"]["bomb"]["solo_player"] and solo["summary"]["all"]["episodes"] == 3
    assert trio["summary"]["solo"] == solo["summary"]
    gap = solo["summary"]["all"]["success_rate"] - trio["summary"]["all"]["success_rate"]
    assert trio["summary"]["gap"]["all"] == pytest.approx(gap)
    assert not (tmp_path / "trio" / "episodes" / "solo").exists()  # no solo team was played


@pytest.mark.full  # long: the default tier's time (issue 36)
def test_ktane_end_to_end(server, tmp_path):
    results = evaluate(cfg(server), RunConfig(env="ktane/wires", episodes=1), tmp_path)
    rec = json.loads(transcript_path(tmp_path, "ktane/wires").read_text())
    d, e = rec["agents"]["defuser"], rec["agents"]["expert"]
    assert d[0]["action"]["result"]["data"] == {"action": "select", "location": "A"}
    assert "[B] blue intact" in d[1]["prompt"][-1]["content"]  # zoomed in: the wires, marked
    assert "Messages from the Expert:\nCut the second wire." in d[1]["prompt"][-1]["content"]
    assert e[0]["action"]["result"]["kind"] == "send_message"
    assert "reflection" not in rec["data"]  # off by default (ours, no paper's: item 3)
    assert sum(results["outcomes"].values()) == 1 and results["parse_errors"] == {}


@pytest.mark.full  # long: the default tier's time (issue 36)
def test_maze_end_to_end(server, tmp_path):
    rc = RunConfig(env="maze/split-6x6", episodes=2,
                   options={"maze": {"rounds": 2, "setting": "verbalized"}})
    results = evaluate(cfg(server), rc, tmp_path)
    recs = [json.loads(x) for x in transcript_path(tmp_path, "maze/split-6x6")
            .read_text().splitlines()]
    for r in recs:  # the server always answers "~d": success iff the path starts d, d, ...
        labels = r["data"]["labels"]
        first_wrong = next((i for i, m in enumerate(labels) if m != 0), len(labels))
        assert r["steps"] == min(first_wrong + 1, len(labels))
        assert r["data"]["moves"] == "d" * r["steps"]
        round2 = r["agents"]["agent1"][0]["prompt"][-1]["content"]
        assert "Your partner's latest message: down 0.55, right 0.35, up 0.05, left 0.05" \
            in round2
    by_round = results["protocols"]["verbalized"]
    assert len(by_round["calibration_loss"]) == 2 and by_round["rounds"] == [1, 2]
    # the team's own play decides only the last round's maze success (advance=path: all)
    assert by_round["maze_success"] == [None, results["success_rate"]]
    assert results["maze_success"] == results["success_rate"]
    assert len(by_round["step_accuracy"]) == 2
    # calibrators fitted on that run (held-out in real use: another seed), then applied
    calibrated = dataclasses.replace(rc, options={"maze": {
        "rounds": 2, "setting": "verbalized_calibrated", "calibration_dir": str(tmp_path)}})
    evaluate(cfg(server), calibrated, tmp_path / "cal")
    rec = json.loads(transcript_path(tmp_path / "cal", "maze/split-6x6").read_text()
                     .splitlines()[0])
    first = rec["data"]["rounds"][0]
    assert first["raw"] == [0.55, 0.35, 0.05, 0.05] and first["probs"] != first["raw"]
    assert abs(sum(first["probs"]) - 1) < 1e-5
    shown = rec["agents"]["agent1"][0]["prompt"][-1]["content"]
    assert "down 0.55" not in shown and f"down {first['probs'][0]:.2f}" in shown


@pytest.mark.full  # long: the default tier's time (issue 36)
def test_maze_sampled_setting(server, tmp_path):
    rc = RunConfig(env="maze/split-6x6", episodes=1,
                   options={"maze": {"rounds": 2, "setting": "sampled", "samples": 3}})
    evaluate(cfg(server), rc, tmp_path)
    rec = json.loads(transcript_path(tmp_path, "maze/split-6x6").read_text().splitlines()[0])
    assert rec["data"]["rounds"][0]["probs"] == [1.0, 0.0, 0.0, 0.0]  # 3 samples, all "~d"
    step0 = [h for h in rec["agents"]["agent0"] if h["step"] == 0]
    assert len(step0) == 3 and len({json.dumps(h["prompt"]) for h in step0}) == 1
    shown = rec["agents"]["agent1"][0]["prompt"][-1]["content"]
    assert "Your partner's latest message: down 1.00" in shown


def test_bad_options_name_the_value(server, tmp_path):
    with pytest.raises(ValueError, match="'loud'"):
        evaluate(cfg(server), RunConfig(env="bomb/base-1", episodes=1,
                                                  options={"bomb": {"hint": "loud"}}), tmp_path)
    with pytest.raises(ValueError, match="maze.calibration_dir"):
        evaluate(cfg(server), RunConfig(env="maze/split-6x6", episodes=1, options={
            "maze": {"setting": "verbalized_calibrated"}}), tmp_path)
    with pytest.raises(ValueError, match="'chatty'"):
        evaluate(cfg(server), RunConfig(env="maze/split-6x6", episodes=1,
                                                  options={"maze": {"setting": "chatty"}}),
                 tmp_path)
    assert set(ERROR_CLASSES) >= set(PARSE_CASES)
