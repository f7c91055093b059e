"""LLM runs against a misbehaving local server: context limits, accounting that adds up, long
replies clipped, torn transcripts (a chunk saved beside one replayed), and SIGTERM stopping a
run at the next safe point."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import jax
import numpy as np
import pytest
from llm_server import good_reply

from jaxcollab.agents.ktane.llm import OMITTED
from jaxcollab.io.llm_run import RunConfig, evaluate
from jaxcollab.llm import jsonl
from jaxcollab.llm.bridge import MAX_FEEDBACK_CHARS, Episode, Game
from jaxcollab.llm.client import ChatClient, LLMConfig, LLMError
from jaxcollab.llm.play import Host
from jaxcollab.llm.run import transcript_path
from jaxcollab.scale.preempt import Preempted


def cfg(server, model="good", **kw) -> LLMConfig:
    return LLMConfig(base_url=server.url, model=model, backoff_s=0.01, **kw)


def records(out, env):
    return jsonl.read(transcript_path(out, env))


def test_fit_drops_the_oldest_turns():
    game, ep = Game(), Episode(0, {}, {})
    msgs = [{"role": "system", "content": "s" * 30}] + [
        {"role": r, "content": f"{i}" * 300} for i in range(4) for r in ("user", "assistant")]
    msgs.append({"role": "user", "content": "now"})
    assert game.fit(ep, msgs) == tuple(msgs)  # no limit known
    game.budget = 300  # tokens (270 estimated): system + the last exchange + the current turn
    kept = game.fit(ep, msgs)
    assert kept[0] == msgs[0] and kept[1:] == tuple(msgs[-3:])


@pytest.mark.full  # long: the default tier's time (issue 36)
def test_ktane_context_limit_is_a_counted_event_and_old_views_leave(server, tmp_path):
    """The ``context`` model refuses prompts over 3,000 words; the Expert's manual alone is
    longer, so each Expert turn is a counted ``context_length`` wait, the run goes on, and the
    episode is written. The Defuser's history keeps only the previous view (GPTNT)."""
    results = evaluate(cfg(server, "context"), RunConfig(env="ktane/wires", episodes=1, options={
        "ktane": {"reflection": False}}), tmp_path)
    (rec,) = records(tmp_path, "ktane/wires")
    assert rec["parse_errors"]["context_length"] == len(rec["agents"]["expert"]) > 0
    assert results["parse_errors"]["context_length"] == rec["parse_errors"]["context_length"]
    third = [m["content"] for m in rec["agents"]["defuser"][2]["prompt"]]
    assert third[1].startswith(OMITTED) and not third[3].startswith(OMITTED)


def test_tokens_count_every_request(server, tmp_path):
    n = len(server.requests)
    results = evaluate(cfg(server), RunConfig(env="ktane/wires", episodes=1,
                                              options={"ktane": {"reflection": True}}), tmp_path)
    sent = server.requests[n:]
    assert any("Reflect on the game" in b["messages"][-1]["content"] for b in sent)
    expect = sum(sum(len(str(m["content"]).split()) for m in b["messages"])
                 + len(good_reply(b["messages"]).split()) for b in sent)
    assert results["tokens"]["total"] == expect
    assert set(results["queue_s"]) == {"defuser", "expert"}


def test_long_replies_are_clipped_in_later_prompts(server, tmp_path):
    evaluate(cfg(server, "long"), RunConfig(env="ktane/wires", episodes=1,
                                          options={"ktane": {"reflection": False}}),
             tmp_path)
    rec = records(tmp_path, "ktane/wires")[0]
    turns = [t for turns in rec["agents"].values() for t in turns]
    assert max(len(t["reply"]) for t in turns) > 100_000  # the transcript keeps the reply
    fed = [m["content"] for t in turns for m in t["prompt"] if m["role"] == "assistant"]
    assert fed and max(map(len, fed)) <= MAX_FEEDBACK_CHARS + 40


@pytest.mark.full  # long: the default tier's time (issue 36)
def test_torn_transcript_line_is_replayed(server, tmp_path):
    rc = RunConfig(env="bomb/base-1", episodes=2, batch=2)
    evaluate(cfg(server), rc, tmp_path)
    path = transcript_path(tmp_path, "bomb/base-1")
    whole = path.read_text()
    # a kill during the chunk's transcript append: the second record torn, and the chunk (kept
    # only after its transcript is synced) not yet saved
    path.write_text(whole[: len(whole) - 200])
    shutil.rmtree(tmp_path / "episodes")
    assert len(records(tmp_path, "bomb/base-1")) == 1
    n = len(server.requests)
    again = evaluate(cfg(server), rc, tmp_path)
    assert len(server.requests) == n and again["episodes"] == 2  # replayed from the cache
    assert [r["episode"] for r in records(tmp_path, "bomb/base-1")] == [0, 1]


@pytest.mark.parametrize("cut", ["torn", "lost"])
def test_a_transcript_cut_short_beside_saved_chunks_is_replayed(server, tmp_path, cut):
    """The chunks were saved, then the transcript lost its last record (torn by a kill, or
    cut by a copy): the rerun replays the saved chunks from the request cache (sending
    nothing) and its results equal the first run's, never those of the partial transcript
    (maze path play: the solo model walks both mazes right, so one record alone gives the
    same 1.0 success rate but half the mazes and tokens)."""
    rc = RunConfig(env="maze/split-6x6", episodes=2, batch=1,
                   options={"maze": {"setting": "solo", "advance": "path"}})
    first = evaluate(cfg(server, "maze"), rc, tmp_path)
    assert first["success_rate"] == 1.0 and first["protocols"]["solo"]["mazes"] == 2
    path = transcript_path(tmp_path, "maze/split-6x6")
    kept, last = path.read_text().splitlines(keepends=True)
    path.write_text(kept + (last[:100] if cut == "torn" else ""))
    assert sorted(p.name for p in (tmp_path / "episodes" / "maze-split-6x6").iterdir()) == [
        "episodes_0.npz", "episodes_1.npz"]
    n = len(server.requests)
    again = evaluate(cfg(server, "maze"), rc, tmp_path)
    assert len(server.requests) == n and again == first
    assert [r["episode"] for r in records(tmp_path, "maze/split-6x6")] == [0, 1]


def test_sigterm_stops_at_the_next_safe_point(server, tmp_path):
    rc = RunConfig(env="bomb/base-1", episodes=6, batch=2)
    path = transcript_path(tmp_path, "bomb/base-1")
    signalled = []

    def stop_after_first_chunk():  # (its rollout compiled by then; the stop is timed from here)
        while not (path.exists() and path.read_text().count("\n") >= 2):
            time.sleep(0.02)
        signalled.append(time.perf_counter())
        os.kill(os.getpid(), signal.SIGTERM)

    watcher = threading.Thread(target=stop_after_first_chunk, daemon=True)
    watcher.start()
    with pytest.raises(Preempted) as stop:
        evaluate(cfg(server, "slow"), rc, tmp_path)
    # at most the chunk in play (turns of 0.3 s) after the signal, with room for a loaded machine
    assert time.perf_counter() - signalled[0] < 30 and stop.value.code == 128 + signal.SIGTERM
    kept = records(tmp_path, "bomb/base-1")
    assert 2 <= len(kept) < 6  # every finished episode, the first chunk's at least
    stopped = json.loads((tmp_path / "results.json").read_text())
    assert stopped["stopped"] is True and stopped["episodes"] == len(kept)
    done = evaluate(cfg(server, "slow"), rc, tmp_path)  # the rerun finishes the rest
    assert done["episodes"] == 6 and "stopped" not in done
    assert sorted(r["episode"] for r in records(tmp_path, "bomb/base-1")) == list(range(6))


def test_progress_moves_every_agent_turn(server, tmp_path):
    calls = []  # (episodes done so far, postfix)

    def progress(n, **postfix):
        done = (calls[-1][0] if calls else 0) + n
        calls.append((done, postfix))

    evaluate(cfg(server), RunConfig(env="ktane/wires", episodes=1,
                                          options={"ktane": {"reflection": False}}), tmp_path,
             progress=progress)
    assert calls[-1][0] == 1 and set(calls[-1][1]) == {"requests", "tokens"}  # its finish
    during = [kw for done, kw in calls if done == 0]  # before the episode finished
    assert len(during) >= 3 and [kw["requests"] for kw in during] == sorted(
        kw["requests"] for kw in during) and during[-1]["tokens"] > during[0]["tokens"] > 0


class _Interrupted(Game):
    """A game whose turn sends a real SIGINT and then waits on a request (its batch is one
    request to a closed port: the client's preflight would fail, so the wait is the stop)."""

    roles = ("a",)
    turns = 0

    def action_struct(self):
        return jax.ShapeDtypeStruct((1,), np.int32)

    def noop(self):
        return np.zeros(1, np.int32)

    def turn(self, ep, step, obs):
        type(self).turns += 1
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.5)  # the signal lands while this turn runs on the host's loop
        yield []
        return np.ones(1, np.int32)


def test_sigint_during_a_turn_stops_the_tick_and_is_not_swallowed(default_sigint):
    """The tick callback runs on one of XLA's threads (here a plain one) while a turn runs
    on the host's loop: a SIGINT (inside ``signals.watch``, as in a run) makes that tick
    answer "stop" with no slot to step, keeps the KeyboardInterrupt for ``reraise`` and starts
    no other turn."""
    from jaxcollab.llm import signals

    game = _Interrupted()
    host = Host(ChatClient(LLMConfig()))
    host._begin([(0, game, 0)], lambda *a: None)
    struct = jax.ShapeDtypeStruct((1, 1), np.int32)
    none = np.full(1, -1, np.int32)
    args = (np.zeros((1, 1, 3), np.int32), np.zeros(1, np.int32), np.zeros(1, np.int32),
            np.zeros(1, np.int32), np.int32(0), none, np.zeros((1, 1), np.int32),
            np.zeros(1, np.int32), np.zeros((1, 1), np.float32))
    out, ended = {}, threading.Event()

    def tick():
        try:
            out["r"] = host.tick_cb(struct, *args)
        finally:
            ended.set()

    with signals.watch():
        threading.Thread(target=tick, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):  # the main thread's handler (signals.watch)
            while not ended.is_set():
                time.sleep(0.05)  # (not Thread.join: an interrupted join forgets the thread)
        assert ended.wait(5)
    slot, actions, stop = out["r"]  # no slot to step: slot K (= 1)
    assert bool(stop) and slot.tolist() == [1] and actions.tolist() == [[0]]
    assert isinstance(host.error, KeyboardInterrupt) and _Interrupted.turns == 1
    with pytest.raises(KeyboardInterrupt):
        host.reraise()
    assert host.error is None


def test_unreachable_endpoint_fails_before_anything_is_written(tmp_path):
    with pytest.raises(LLMError, match="unreachable"):
        evaluate(LLMConfig(base_url="http://127.0.0.1:9/v1", timeout_s=2),
                 RunConfig(env="bomb/base-1", episodes=2, batch=2), tmp_path)
    assert not transcript_path(tmp_path, "bomb/base-1").exists()
    assert not (tmp_path / "results.json").exists()


@pytest.mark.slow  # a subprocess compiles its own rollout
def test_ctrl_c_stops_the_cli(server, tmp_path):
    """``eval/llm.py`` (the README command) as a subprocess: SIGINT after the first chunk ends
    the run within seconds (exit status 130, as any preempted run), keeping that chunk and a
    results.json marked ``stopped`` that still guards the run's config; the rerun resumes."""
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "eval/llm.py", "env=bomb/base-1", f"llm.base_url={server.url}",
         "llm.model=slow", "llm.backoff_s=0.01", "episodes=8", "chunk=2", f"out_dir={out}"],
        cwd=Path(__file__).parents[1], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    path = transcript_path(out, "bomb/base-1")
    deadline = time.perf_counter() + 240
    while not (path.exists() and len(jsonl.read(path)) >= 2) and proc.poll() is None:
        assert time.perf_counter() < deadline, "no chunk finished"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    sent = time.perf_counter()
    proc.communicate(timeout=60)
    assert time.perf_counter() - sent < 20 and proc.returncode == 128 + signal.SIGINT
    kept = jsonl.read(path)
    assert 2 <= len(kept) < 8  # every finished episode
    results = json.loads((out / "results.json").read_text())
    assert results["stopped"] is True and results["episodes"] == len(kept)
    assert results["config"]["llm"]["model"] == "slow"


def test_unreachable_endpoint_is_one_error_line_from_the_cli(tmp_path):
    """The README's LLM command against a port nobody listens on: exit status 1 and the
    endpoint error on one line, no traceback (an outside service's failure is the user's to
    fix: :class:`jaxcollab.core.errors.EndpointError`)."""
    done = subprocess.run(
        [sys.executable, str(Path(__file__).parents[1] / "eval" / "rollout.py"),
         "env=bomb/base-1", "agent=llm", "llm.base_url=http://127.0.0.1:9/v1",
         "llm.timeout_s=2", "episodes=2", f"out_dir={tmp_path / 'run'}"],
        capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("Error: the LLM endpoint http://127.0.0.1:9/v1/models is "
                           "unreachable"), done.stderr[-2000:]
