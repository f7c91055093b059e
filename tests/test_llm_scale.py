"""LLM play at server scale (issue 38): no JAX dispatch inside a host callback, any
concurrency, no prompt generated twice on a serial server, the clock async Keep Talking is
charged with, and a run that always stops (signals, stalls) as a subprocess."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from llm_server import Batching, LLMServer, Never, Serial

from jaxcollab.io.llm_run import RunConfig, evaluate
from jaxcollab.llm import jsonl
from jaxcollab.llm.hostonly import DispatchInCallback, no_dispatch
from jaxcollab.llm.run import transcript_path

ROOT = Path(__file__).parents[1]


def cfg(server, model="good", **kw):
    from jaxcollab.llm.client import LLMConfig

    return LLMConfig(base_url=server.url, model=model, backoff_s=0.01, **kw)


def records(out, env):
    return jsonl.read(transcript_path(out, env))


@pytest.mark.parametrize("op", ["full", "cached_jit", "device_put", "arithmetic", "asarray"])
def test_the_guard_catches_every_kind_of_dispatch(op):
    """:func:`no_dispatch` raises on an eager ``jnp`` op, on a compiled function JAX's C++
    fast path already caches, on a host-to-device transfer and on array arithmetic."""
    double = jax.jit(lambda x: x * 2)
    x = jnp.ones(3)
    double(x)  # cached: the next call would skip Python dispatch entirely
    call = {"full": lambda: jnp.full((2,), 0), "cached_jit": lambda: double(x),
            "device_put": lambda: jax.device_put(np.ones(2)), "arithmetic": lambda: x + 1,
            "asarray": lambda: jnp.asarray(np.ones(2))}[op]
    with pytest.raises((DispatchInCallback, jax.errors.JaxRuntimeError)), no_dispatch():
        call()
    assert float(call().ravel()[0]) in (0.0, 1.0, 2.0)  # outside the guard it runs


def test_the_guard_lets_numpy_through_and_raises_inside_a_callback():
    """NumPy and Python in the guard run; a ``jnp`` op in a ``pure_callback`` under it fails the
    compiled call (the suite runs every LLM callback so: ``JAXCOLLAB_NO_DISPATCH=1``)."""
    with no_dispatch():
        assert np.full(3, 2).sum() == 6

    def host(o, use_jax):
        with no_dispatch():
            return (jnp.full((3,), 1.0) if use_jax else np.asarray(o) + 1).astype(np.float32)

    out = jax.ShapeDtypeStruct((3,), jnp.float32)
    ok = jax.jit(lambda o: jax.pure_callback(lambda a: host(a, False), out, o))(jnp.ones(3))
    assert ok.tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(Exception, match="dispatched inside an LLM host callback"):
        jax.jit(lambda o: jax.pure_callback(lambda a: host(a, True), out, o))(
            jnp.ones(3)).block_until_ready()


def test_concurrency_128_plays_256_bomb_episodes(tmp_path):
    """The hang of issue 38 (a callback's ``jnp.full`` waiting on the pool every waiting
    callback holds), as a user ran it: the CLI at concurrency 128 (its pool sized for that)
    plays all 256 episodes, each written once."""
    with LLMServer() as server:
        done = _cli(server.url, tmp_path, "llm.concurrency=128", "episodes=256").communicate(
            timeout=600)
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["episodes"] == 256 and "stopped" not in results, done[1][-2000:]
    assert sorted(r["episode"] for r in records(tmp_path, "bomb/base-1")) == list(range(256))


@pytest.mark.full
@pytest.mark.parametrize("env,episodes,concurrency,extra", [
    ("bomb/base-1", 1, 256, {}), ("bomb/base-1", 63, 8, {}), ("bomb/base-1", 63, 256, {}),
    ("ktane/wires", 63, 32, {"ktane": {"mode": "sync"}}),
    ("ktane/wires", 63, 64, {"ktane": {"mode": "async"}}),
    ("ktane/wires", 1, 1, {"ktane": {"mode": "async"}}),
    ("maze/split-6x6", 63, 128, {"maze": {"setting": "verbalized", "rounds": 2}}),
])
def test_any_concurrency_and_episode_count_finishes(tmp_path, env, episodes, concurrency, extra):
    """A sample of the matrix concurrency {1 … 256} x episodes {1, 63, 256} over the families
    (the rest is the default-tier test above and the pacing benchmark)."""
    model = "maze" if env.startswith("maze") else "good"
    with LLMServer() as server:
        out = evaluate(cfg(server, model, concurrency=concurrency),
                       RunConfig(env=env, episodes=episodes, options=extra), tmp_path)
    assert out["episodes"] == episodes and "stopped" not in out
    assert sorted(r["episode"] for r in records(tmp_path, env)) == list(range(episodes))


@pytest.mark.full
def test_a_serial_server_generates_no_prompt_twice(tmp_path):
    """8 bomb episodes at once (the CLI) on a one-at-a-time server whose queue (8 x 0.05 s)
    outlasts ``timeout_s=0.3``: no request times out while the server works through the
    others' (the rule holds across episodes), so every request is sent once and generated once,
    nothing is retried, and the replies are timed by the server's own timings."""
    with LLMServer(latency=Serial(0.05)) as server:
        proc = _cli(server.url, tmp_path, "llm.concurrency=8", "llm.timeout_s=0.3",
                    "episodes=8")
        _, err = proc.communicate(timeout=600)
        sent, generated = len(server.requests), sum(server.generated.values())
        most = server.in_flight_max
    out = json.loads((tmp_path / "results.json").read_text())
    assert out["episodes"] == 8 and out["retries"] == {}, err[-2000:]
    turns = sum(len(ts) for r in records(tmp_path, "bomb/base-1") for ts in r["agents"].values())
    assert sent == generated == turns and most >= 4  # several queued at once, none resent
    assert set(out["latency_timed_by"]) == {"server"}
    assert sum(out["queue_s"].values()) > 0  # they did queue: the wait is not the latency


@pytest.mark.full
def test_async_ktane_charges_the_clock_with_service_time_not_queue(tmp_path):
    """Async Keep Talking with 4 games sharing a serial server (0.1 s a generation): every
    reply's dispatch lag is the server's own timing of that generation (GPTNT C.4.2: one game
    against its own API calls), not the time it queued behind the other games' requests."""
    with LLMServer(latency=Serial(0.1)) as server:
        rc = RunConfig(env="ktane/wires", episodes=4, options={"ktane": {"mode": "async"}})
        out = evaluate(cfg(server, concurrency=4), rc, tmp_path)
    turns = [t for r in records(tmp_path, "ktane/wires") for ts in r["agents"].values()
             for t in ts if "dispatch_s" in t]
    lags = [round(t["dispatch_s"] - t["clock_s"], 2) for t in turns]
    assert lags == [round(t["latency_s"], 2) for t in turns] and min(lags) >= 0.1
    assert set(out["latency_timed_by"]) == {"server"}
    assert sum(out["queue_s"].values()) > 0.5  # they queued; the clock was not charged it


@pytest.mark.full
def test_a_batching_server_is_timed_by_the_client(tmp_path):
    """A continuous-batching server (vLLM-like: no timings) serves 16 bomb episodes; each
    latency is the client's wall time since sending. (How many requests are in flight depends
    on this process's XLA:CPU pool, sized before JAX started: the CLI test above checks that.)"""
    with LLMServer(latency=Batching(0.05, 8)) as server:
        out = evaluate(cfg(server, concurrency=16), RunConfig(env="bomb/base-1", episodes=16),
                       tmp_path)
    assert out["episodes"] == 16 and set(out["latency_timed_by"]) == {"client"}


def test_retries_survive_a_resume(tmp_path):
    """Each retry is logged as it happens (``retries.jsonl``); a rerun replayed from the
    cache sends nothing and still reports the first session's retries."""
    with LLMServer() as server:
        first = evaluate(cfg(server, "flaky"), RunConfig(env="bomb/base-1", episodes=2),
                         tmp_path)
        sent = len(server.requests)
        again = evaluate(cfg(server, "flaky"), RunConfig(env="bomb/base-1", episodes=2),
                         tmp_path)
        assert len(server.requests) == sent
    assert first["retries"] == again["retries"] == {"rate_limited": sent // 2}
    assert len(jsonl.read(tmp_path / "retries.jsonl")) == sent // 2


def _cli(url, out, *extra):
    return subprocess.Popen(
        [sys.executable, "eval/rollout.py", "env=bomb/base-1", "agent=llm",
         f"llm.base_url={url}", "llm.model=good", "llm.backoff_s=0.01", f"out_dir={out}",
         *extra], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(condition, proc, what, limit_s=300):
    deadline = time.monotonic() + limit_s
    while not condition():
        assert proc.poll() is None, f"exited before {what}: {proc.communicate()[1][-2000:]}"
        assert time.monotonic() < deadline, f"no {what} in {limit_s} s"
        time.sleep(0.05)


class _AnswersThenHangs(Never):
    """Answers the first ``n`` requests at once, then never again."""

    def __init__(self, n):
        super().__init__()
        self.n, self.seen = n, 0

    def __call__(self, body):
        self.seen += 1
        return {} if self.seen <= self.n or self.closed.is_set() else super().__call__(body)


@pytest.mark.full
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_a_run_stuck_on_a_server_that_never_answers(tmp_path, sig):
    """One episode's requests are answered, then the server hangs with 4 requests in flight:
    the signal ends the CLI within 10 s (room for a loaded machine is in the wait below, not in
    the bound), with ``128 + signal``, the finished episode written and a results.json marked
    stopped; the rerun against a working server resumes."""
    with LLMServer() as probe:  # how many requests one episode makes
        evaluate(cfg(probe), RunConfig(env="bomb/base-1", episodes=1), tmp_path / "probe")
        per_episode = len(probe.requests)
    out, mode = tmp_path / "run", _AnswersThenHangs(per_episode)
    with LLMServer(latency=mode) as server:
        proc = _cli(server.url, out, "llm.concurrency=1", "episodes=5")
        _wait_for(lambda: len(server.requests) > per_episode and len(records(out, "bomb/base-1")),
                  proc, "stuck request after the first episode")
        time.sleep(0.5)  # the stuck request is in flight
        proc.send_signal(sig)
        sent = time.monotonic()
        _, err = proc.communicate(timeout=120)
        took = time.monotonic() - sent
        assert proc.returncode == 128 + sig, err[-2000:]
        assert took < 10, f"took {took:.1f} s to stop"
        stopped = json.loads((out / "results.json").read_text())
        assert stopped["stopped"] is True and stopped["episodes"] == 1
        assert [r["episode"] for r in records(out, "bomb/base-1")] == [0]
        mode.closed.set()  # the server works again
        rerun = _cli(server.url, out, "llm.concurrency=1", "episodes=5")
        _, err = rerun.communicate(timeout=600)
    assert rerun.returncode == 0, err[-2000:]
    done = json.loads((out / "results.json").read_text())
    assert done["episodes"] == 5 and "stopped" not in done


@pytest.mark.full
def test_a_second_signal_exits_at_once(tmp_path):
    """Two SIGTERMs in a row: the process leaves at the second (status 143) however far the
    first got."""
    with LLMServer(latency=Never()) as server:
        proc = _cli(server.url, tmp_path / "run", "llm.concurrency=4", "episodes=4")
        _wait_for(lambda: len(server.requests) >= 4, proc, "requests in flight")
        proc.send_signal(signal.SIGTERM)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err[-2000:]


@pytest.mark.full
def test_a_stalled_run_ends_with_one_error_naming_what_it_waited_on(tmp_path):
    """A server that accepts requests and never answers, ``llm.stall_s=3``: the CLI exits 1
    with one error line naming the stall and the episodes' pending requests, no traceback."""
    with LLMServer(latency=Never()) as server:
        proc = _cli(server.url, tmp_path / "run", "llm.concurrency=2", "episodes=2",
                    "llm.stall_s=3")
        _, err = proc.communicate(timeout=600)
    assert proc.returncode == 1, err[-2000:]
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("Error: no progress for ") and "llm.stall_s=3" in last, err[-2000:]
    assert "episode 0" in last or "episode 1" in last


def test_the_pacing_benchmarks_ideal_schedules():
    """The ideal times ``eval.bench only=[llm_pacing]`` divides by: greedy list scheduling on
    ``concurrency`` workers; a batching server's batch of ``min(concurrency, cap)`` each at a
    full batch's latency; a serial server's sum of every service time."""
    from eval.benchmarks.llm_pacing import ideal

    assert ideal("fixed:1", [3.0, 3.0, 3.0, 3.0, 1.0], 2) == 7.0
    assert ideal("batch:1:4", [2.0] * 8, 8) == 7.0  # 4 at once, each 2 x 1.75 s, two rounds
    assert ideal("batch:1:4", [2.0] * 8, 2) == 10.0  # 2 at once, each 2 x 1.25 s, four rounds
    assert ideal("serial:0.1", [1.0, 2.0, 3.0], 64) == 6.0


@pytest.mark.full
def test_the_tick_benchmark_runs_as_a_user_runs_it():
    """``python -m eval.benchmarks.llm_tick K N EVERY`` and ``… split K`` (README, LLM pacing):
    8 episodes of 24 no-op turns (8 rounds x 3 roles) in 4 slots, the stub host answering 2
    slots a tick, end in 96 stepping ticks plus the last; every piece of the split is timed."""
    import ast

    def run(*args):
        out = subprocess.run([sys.executable, "-m", "eval.benchmarks.llm_tick", *args], cwd=ROOT,
                             capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr
        return ast.literal_eval(out.stdout.strip().splitlines()[-1])

    row = run("4", "8", "2")
    assert (row["slots"], row["episodes"], row["every"], row["ticks"]) == (4, 8, 2, 97)
    split = run("split", "8")
    assert set(split) == {"slots", "step_all", "step_8", "observe", "select", "reset_all",
                          "callback_state", "callback_leaf"}
    assert all(v > 0 for k, v in split.items() if k != "slots")
