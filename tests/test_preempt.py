"""Stopping means stopping (issue 24 item 11): SIGTERM / SIGINT end a rollout within seconds,
also while XLA compiles a chunk and between the environments of a group, keep the finished
chunks, and the rerun ends with the results of an uninterrupted run.

The in-process tests use the stop flag directly; the command-line ones (``slow``: each compiles
its own rollouts) signal ``eval/rollout.py`` in a child process, the compile one with an empty
compilation cache so that the signal really lands in an XLA compile.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from jaxcollab.scale import preempt

ROOT = Path(__file__).resolve().parent.parent
#: results keys that time the run (they differ between two runs of the same config)
TIMING = ("episodes_per_second", "run", "config")
#: Seconds a stop may take, timed from its signal with everything before it compiled: in
#: process, to :class:`~jaxcollab.scale.preempt.Preempted` (the flag is polled every
#: ``POLL_S`` = 0.05 s), and for a child process, to its exit (interpreter teardown included).
#: Both leave room for a loaded machine; the behaviour they guard against took 30-80 s.
STOP_S, EXIT_S = 10.0, 20.0


def test_a_stop_between_environments_ends_the_run_before_the_next_one(tmp_path):
    played = []

    def play(rows):
        played.append(rows.tolist())
        return {"x": rows * 2}

    with preempt.guard():  # the CLI's guard around the whole multi-environment run
        first = preempt.resumable_episodes(play, np.arange(4), 4, tmp_path / "a")
        os.kill(os.getpid(), signal.SIGTERM)  # after env a's last chunk, before env b
        with pytest.raises(preempt.Preempted, match=r"0 chunks of 4 episodes in .*b") as stop:
            preempt.resumable_episodes(play, np.arange(4), 4, tmp_path / "b")
    assert stop.value.code == 128 + signal.SIGTERM and played == [[0, 1, 2, 3]]
    assert first["x"].tolist() == [0, 2, 4, 6] and not (tmp_path / "b").exists()


def test_a_signal_abandons_the_chunk_in_play_at_once(tmp_path):
    """The chunk runs on a worker thread (as an XLA compile would, holding the main thread):
    the stop does not wait for it, and a worker's own error still reaches the caller."""
    release, calls, signalled, finished = threading.Event(), [], [], []

    def play(rows):
        calls.append(int(rows[0]))
        if calls == [0, 4]:  # the second chunk: a signal mid-way through a long compile
            signalled.append(time.perf_counter())
            os.kill(os.getpid(), signal.SIGINT)
            release.wait(60)
            finished.append(int(rows[0]))
        return {"x": rows + 1}

    with pytest.raises(preempt.Preempted, match=r"1 chunks of 4 .*\(the work in progress was "
                                                r"dropped\)") as stop:
        preempt.resumable_episodes(play, np.arange(8), 4, tmp_path)
    assert time.perf_counter() - signalled[0] < STOP_S and stop.value.code == 128 + signal.SIGINT
    assert not finished  # the chunk in play was left blocked, not awaited
    release.set()
    assert [p.name for p in tmp_path.iterdir()] == ["episodes_0.npz"]
    assert preempt.resumable_episodes(play, np.arange(8), 4, tmp_path)["x"].tolist() == \
        list(range(1, 9))
    assert calls == [0, 4, 4] and preempt.requested() == 0

    def broken(rows):
        raise RuntimeError("a bad chunk")

    with preempt.guard(), pytest.raises(RuntimeError, match="a bad chunk"):
        preempt.interruptible(broken, np.arange(2), saved="nothing")


def _env(cache: Path | None = None) -> dict:
    env = dict(os.environ, JAX_PLATFORMS="cpu", WANDB_MODE="disabled", PYTHONPATH=str(ROOT))
    if cache is not None:  # a cold cache: the rollouts really compile
        env["JAX_COMPILATION_CACHE_DIR"] = str(cache)
    return env


def _stopped(args: list[str], after: str, delay: float, sig: int, env: dict) -> tuple:
    """Run ``eval/rollout.py args``, send ``sig`` ``delay`` seconds after the first output line
    containing ``after``; ``(exit status, seconds from the signal to the exit, log)``."""
    proc = subprocess.Popen([sys.executable, str(ROOT / "eval" / "rollout.py"), *args],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    log = []
    for line in proc.stdout:
        log.append(line)
        if after in line:
            break
    time.sleep(delay)
    proc.send_signal(sig)
    sent = time.perf_counter()
    rest, _ = proc.communicate(timeout=300)
    return proc.returncode, time.perf_counter() - sent, "".join(log) + rest


def _results(out: Path) -> dict:
    results = json.loads((out / "results.json").read_text())
    for key in TIMING:
        results.pop(key, None)
    for per in results.get("per_module", {}).values():
        per.pop("episodes_per_second", None)
    return results


def _whole(args: list[str], out: Path, env: dict) -> dict:
    subprocess.run([sys.executable, str(ROOT / "eval" / "rollout.py"), *args, f"out_dir={out}"],
                   cwd=ROOT, env=env, check=True, capture_output=True)
    return _results(out)


@pytest.mark.slow
def test_sigterm_during_a_compile_stops_within_seconds_and_the_rerun_finishes(tmp_path):
    """``env=ktane/missions/multi agent=talking`` used to compile and play every remaining
    mission after a SIGTERM (80 s here); now the mission compiling when it arrives is dropped."""
    args = ["env=ktane/missions/multi", "agent=talking", "episodes=2", "chunk=2", "seed=1"]
    env, out = _env(tmp_path / "xla"), tmp_path / "run"
    code, seconds, log = _stopped([*args, f"out_dir={out}"], "saved in", 1.0, signal.SIGTERM,
                                  env)
    assert code == 128 + signal.SIGTERM and seconds < EXIT_S, log
    assert "(the work in progress was dropped)" in log and "Traceback" not in log
    assert [p.name for p in (out / "episodes").iterdir()] == ["ktane-missions-multi-1"]
    assert "success_rate" not in json.loads((out / "results.json").read_text())
    rerun = subprocess.run([sys.executable, str(ROOT / "eval" / "rollout.py"), *args,
                            f"out_dir={out}"], cwd=ROOT, env=env, check=True,
                           capture_output=True, text=True)
    assert "ktane-missions-multi-1\n" not in rerun.stdout  # the kept mission was loaded
    assert _results(out) == _whole(args, tmp_path / "whole", env)


@pytest.mark.slow
def test_sigint_between_the_environments_of_a_group_plays_no_more(tmp_path):
    """``env=ktane/all agent=oracle`` used to print "stopping at the next safe point" and then
    play every remaining module."""
    args = ["env=ktane/all", "agent=oracle", "episodes=3", "chunk=2", "seed=2"]
    env, out = _env(), tmp_path / "run"
    code, seconds, log = _stopped([*args, f"out_dir={out}"], "2/2 saved in", 0.0, signal.SIGINT,
                                  env)
    assert code == 128 + signal.SIGINT and seconds < EXIT_S, log
    after = log.split("SIGINT received")[1]
    assert "saved in" not in after and "stopped by SIGINT" in after  # nothing more was played
    kept = sorted(p.name for p in (out / "episodes").iterdir())
    assert "ktane-wires" in kept and len(kept) < 11
    subprocess.run([sys.executable, str(ROOT / "eval" / "rollout.py"), *args, f"out_dir={out}"],
                   cwd=ROOT, env=env, check=True, capture_output=True)
    resumed = _results(out)
    assert resumed == _whole(args, tmp_path / "whole", env) and resumed["episodes"] == 33


def _timeless(tree):
    """``tree`` without its wall-time keys (``*seconds*``) and the run's own ``config`` /
    ``run``."""
    if isinstance(tree, dict):
        return {k: _timeless(v) for k, v in tree.items()
                if "seconds" not in k and k not in ("config", "run")}
    if isinstance(tree, list):
        return [_timeless(v) for v in tree]
    return tree


@pytest.mark.slow
def test_sigterm_while_training_compiles_stops_within_seconds_and_resumes(tmp_path):
    """``train/collab.py``: a signal while the data are built or the first training chunk
    compiles (cold cache) stops at once, with status 143; the rerun equals an uninterrupted
    run."""
    from tests.test_collab_seeds import TINY

    env, out = _env(tmp_path / "xla"), tmp_path / "run"
    cmd = [sys.executable, str(ROOT / "train" / "collab.py"), *TINY]
    proc = subprocess.Popen([*cmd, f"out_dir={out}"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    while not (out / "results.json").exists():  # start_run has checked and written the config
        assert proc.poll() is None, proc.stdout.read()
        time.sleep(0.05)
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    sent = time.perf_counter()
    log, _ = proc.communicate(timeout=300)
    assert proc.returncode == 128 + signal.SIGTERM and time.perf_counter() - sent < EXIT_S, log
    assert "stopped by SIGTERM" in log and "Traceback" not in log
    assert "protocols" not in json.loads((out / "results.json").read_text())
    subprocess.run([*cmd, f"out_dir={out}"], cwd=ROOT, env=env, check=True, capture_output=True)
    subprocess.run([*cmd, f"out_dir={tmp_path / 'whole'}"], cwd=ROOT, env=env, check=True,
                   capture_output=True)
    resumed, whole = (_timeless(json.loads((d / "results.json").read_text()
                                           .replace(str(d), "OUT_DIR")))
                      for d in (out, tmp_path / "whole"))  # paths of round dirs are recorded
    assert resumed == whole and len(resumed["protocols"]) == 2


@pytest.mark.slow
def test_sigterm_between_the_modules_of_an_llm_run_exits_143_and_the_rerun_finishes(tmp_path):
    """``env=ktane/all agent=llm``: a SIGTERM after the first module's chunk starts no further
    module, writes the finished episodes' results marked ``stopped``, and exits 143."""
    from tests.llm_server import LLMServer

    with LLMServer() as server:
        args = ["env=ktane/all", "agent=llm", f"llm.base_url={server.url}", "llm.model=good",
                "llm.backoff_s=0.01", "ktane.reflection=false", "episodes=1", "chunk=1",
                f"out_dir={tmp_path / 'run'}"]
        code, seconds, log = _stopped(args, "saved in", 0.0, signal.SIGTERM, _env())
        assert code == 128 + signal.SIGTERM and seconds < EXIT_S, log
        assert "saved in" not in log.split("SIGTERM received")[1]
        stopped = json.loads((tmp_path / "run" / "results.json").read_text())
        assert stopped["stopped"] is True and 1 <= stopped["episodes"] < 11
        subprocess.run([sys.executable, str(ROOT / "eval" / "rollout.py"), *args], cwd=ROOT,
                       env=_env(), check=True, capture_output=True)
    done = json.loads((tmp_path / "run" / "results.json").read_text())
    assert "stopped" not in done and done["episodes"] == 11


@pytest.mark.full  # a subprocess compiles a Keep-Talking LLM rollout; CI's full tier runs it
def test_sigint_while_llm_episodes_play_exits_at_once(tmp_path):
    """Ctrl-C while a Keep-Talking LLM chunk plays (1 s per reply): the abandoned chunk's
    episodes stop too, so the process exits within seconds (it waited for the thread pool
    to play them out, ~40 s)."""
    from tests.llm_server import LLMServer, fixed_latency

    with LLMServer(latency=fixed_latency(1.0)) as server:
        proc = subprocess.Popen(
            [sys.executable, str(ROOT / "eval" / "rollout.py"), "env=ktane/wires", "agent=llm",
             f"llm.base_url={server.url}", "llm.model=good", "episodes=2",
             f"out_dir={tmp_path / 'run'}"], cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        deadline = time.perf_counter() + 240
        while len(server.requests) < 2 and proc.poll() is None:
            assert time.perf_counter() < deadline, "no request arrived"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        sent = time.perf_counter()
        proc.wait(timeout=120)
        assert proc.returncode == 128 + signal.SIGINT and time.perf_counter() - sent < EXIT_S
