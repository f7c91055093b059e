"""Server-paced LLM play: wall time of a 64-episode bomb run against the local test server
(``tests/llm_server.py``) over the time of the ideal asynchronous schedule.

The measured time is the team's pooled play (:attr:`jaxcollab.llm.play.Host.play_s`: from the
first episode's start to the last one's end, the compiling warm-up excluded); ``wall_s`` in the
row is the whole run's time, compile and transcript writing included.

The run is the library LLM team (:mod:`jaxcollab.llm.run`, ``bomb/base-1``, the server's
``good`` strategy, ``llm.concurrency`` episodes in flight) under two server latencies: fixed
(every reply ``FIXED_S``) and heavy-tailed (``FAST_S``, one request in ten ``SLOW_S``, by a hash
of the request). The ideal schedule is computed from the same run's transcripts: each
episode is the chain of its requests' server latencies, and ``concurrency`` ideal workers take
the next episode the moment one is free, with zero overhead (greedy list scheduling in episode
order). ``value`` is measured wall time / ideal time (1.0 = bound by the server alone); the
notes also give the lockstep time the same latencies would cost when chunks of 8 episodes wait
for their slowest reply at every step (the previous design; computed, not run). Compilation is
excluded (see above). Each row runs in a fresh Python process (``python -m
eval.benchmarks.llm_pacing SPEC EPISODES``), as ``eval/rollout.py agent=llm`` does, so the team
sizes XLA:CPU's thread pool before JAX starts (:func:`jaxcollab.llm.play.reserve_callback_threads`)
whatever the benchmarks before it ran.
"""

from __future__ import annotations

import contextlib
import heapq
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import jaxcollab
from jaxcollab.core.family import Spec
from jaxcollab.llm.client import ChatClient, LLMConfig, Request
from jaxcollab.llm.play import reserve_callback_threads
from jaxcollab.llm.run import LLMTeam, RunConfig, read_transcripts, transcript_path

EPISODES, CONCURRENCY, LOCKSTEP = 64, 16, 8
FIXED_S, FAST_S, SLOW_S = 1.0, 0.1, 1.0
QUICK = {"FIXED_S": 0.2, "FAST_S": 0.05, "SLOW_S": 0.3}


SERVER = Path(__file__).resolve().parents[2] / "tests" / "llm_server.py"


def _server_module():
    spec = importlib.util.spec_from_file_location("llm_server", SERVER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def served(latency_spec: str) -> Iterator[str]:
    """The test server in its own process (as a real server is: no GIL shared with the run);
    its base URL."""
    proc = subprocess.Popen([sys.executable, str(SERVER), latency_spec], stdout=subprocess.PIPE,
                            text=True)
    try:
        yield proc.stdout.readline().strip()
    finally:
        proc.terminate()
        proc.wait()


def chains(records: list[dict], client: ChatClient, latency) -> list[list[float]]:
    """Per episode (in episode order), the server latency of each request it made, in order."""
    out = []
    for r in sorted(records, key=lambda r: r["episode"]):
        turns = sorted((t for ts in r["agents"].values() for t in ts), key=lambda t: t["step"])
        out.append([latency(client.body(Request(t.get("agent", ""), tuple(t["prompt"]))))
                    for t in turns])
    return out


def ideal_async(chain_s: list[float], workers: int) -> float:
    """Makespan of greedy list scheduling of episodes (durations ``chain_s``, in order)."""
    free = [0.0] * workers
    for d in chain_s:
        heapq.heappush(free, heapq.heappop(free) + d)
    return max(free)


def lockstep(steps: list[list[float]], chunk: int) -> float:
    """Time when chunks of ``chunk`` episodes run one after another, each step waiting for the
    chunk's slowest reply."""
    total = 0.0
    for start in range(0, len(steps), chunk):
        part = steps[start: start + chunk]
        total += sum(max(s[i] if i < len(s) else 0.0 for s in part)
                     for i in range(max(map(len, part))))
    return total


def _row(label: str, spec: str, episodes: int) -> dict:
    """One row, measured in a child process (module docstring)."""
    out = subprocess.run([sys.executable, "-m", "eval.benchmarks.llm_pacing", spec, str(episodes)],
                         capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])
    return {"name": f"bomb LLM run / ideal async schedule ({label})",
            **json.loads(out.stdout.splitlines()[-1])}


def _measure(spec: str, episodes: int) -> dict:
    reserve_callback_threads(CONCURRENCY)
    latency = _server_module().latency_from_spec(spec)
    with served(spec) as url, tempfile.TemporaryDirectory() as tmp:
        cfg = LLMConfig(base_url=url, model="good", concurrency=CONCURRENCY,
                        backoff_s=0.01)
        options = RunConfig(env="bomb/base-1", episodes=episodes).config(cfg, tmp)
        family = jaxcollab.family("bomb")
        team = LLMTeam(family, options, tmp)
        start = time.perf_counter()
        family.evaluate(["bomb/base-1"], team, Spec(episodes, 0, options=options))
        wall = time.perf_counter() - start
        records = read_transcripts(transcript_path(tmp, "bomb/base-1"))
        per_ep = chains(records, ChatClient(team.cfg), latency)
        played = team.host.play_s
    ideal = ideal_async([sum(c) for c in per_ep], CONCURRENCY)
    return {"value": played / ideal,
            "unit": "x", "played_s": played, "wall_s": wall, "ideal_s": ideal,
            "lockstep_chunk8_s": lockstep(per_ep, LOCKSTEP), "episodes": episodes,
            "requests": sum(map(len, per_ep)), "concurrency": CONCURRENCY,
            "notes": f"{episodes} episodes, played {played:.2f} s vs ideal {ideal:.2f} s "
                     f"(lockstep chunks of {LOCKSTEP}: {lockstep(per_ep, LOCKSTEP):.2f} s)"}


def run(quick: bool = False) -> list[dict]:
    lat = QUICK if quick else {"FIXED_S": FIXED_S, "FAST_S": FAST_S, "SLOW_S": SLOW_S}
    return [
        _row(f"fixed {lat['FIXED_S']} s", f"fixed:{lat['FIXED_S']}", EPISODES),
        _row(f"heavy tail {lat['FAST_S']} s, 1 in 10 {lat['SLOW_S']} s",
             f"tail:{lat['FAST_S']}:{lat['SLOW_S']}", EPISODES),
    ]


if __name__ == "__main__":
    print(json.dumps(_measure(sys.argv[1], int(sys.argv[2]))))
