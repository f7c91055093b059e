"""Server-paced LLM play: wall time of 256-episode bomb runs against the local test server
(``tests/llm_server.py``) over the time of the ideal asynchronous schedule, at concurrency 64,
128 and 256, with the process's threads and peak memory beside each row.

The measured time is the team's pooled play (:attr:`jaxcollab.llm.play.Host.play_s`: from the
first episode's start to the last one's end, the compiling warm-up excluded); ``wall_s`` in the
row is the whole run's time, compile and transcript writing included.

The run is the library LLM team (:mod:`jaxcollab.llm.run`, ``bomb/base-1``, the server's
``good`` strategy, ``llm.concurrency`` episodes in flight) against four servers: fixed latency
(every reply ``FIXED_S``), heavy-tailed (``FAST_S``, one request in ten ``SLOW_S``, by a hash
of the request), continuous batching (``batch:BASE:CAP``: a request takes ``BASE * (1 + (n -
1) / CAP)`` with ``n`` in the batch, at most ``CAP`` at once, the rest queue) and serial (one
request at a time, ``SERIAL_S`` each, as llama.cpp). The ideal schedule is computed from the
same run's transcripts: each episode is the chain of its requests' service times, and the
ideal workers take the next episode the moment one is free, with zero overhead (greedy list
scheduling in episode order): ``concurrency`` workers at the fixed and heavy-tailed servers;
at the batching server ``min(concurrency, CAP)`` workers, each request taking the latency of a
full batch of them; at the serial server one worker (the sum of all service times). ``value`` is
measured time / ideal time (1.0 = bound by the server alone; target 1.3 at the fixed and
heavy-tailed servers). ``threads`` is the most OS threads of the process seen during the run
(the host's event loop, the batched rollout's thread, the finishing threads, the cache writer,
XLA:CPU's own), ``peak_rss_mb`` its peak resident memory: neither grows with the number of
episodes or the concurrency beyond the slots' arrays (one batched rollout:
:mod:`jaxcollab.llm.play`). ``play_cpu_s`` is the process's CPU time during the pooled play
(over ``requests``: the host's CPU per request). Compilation is excluded (see above);
``wall_s`` includes it (once per environment and chunk size). Each row runs in a fresh Python
process (``python -m eval.benchmarks.llm_pacing SPEC EPISODES CONCURRENCY``), as
``eval/rollout.py agent=llm`` does.
"""

from __future__ import annotations

import contextlib
import heapq
import importlib.util
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import jaxcollab
from jaxcollab.core.family import Spec
from jaxcollab.io.llm_run import RunConfig
from jaxcollab.llm.client import ChatClient, LLMConfig, Request
from jaxcollab.llm.run import LLMTeam, read_transcripts, transcript_path

EPISODES, CONCURRENCIES = 256, (64, 128, 256)
FIXED_S, FAST_S, SLOW_S, BATCH_S, CAP, SERIAL_S = 1.0, 0.2, 2.0, 1.0, 128, 0.01
QUICK = {"EPISODES": 16, "CONCURRENCIES": (8,), "FIXED_S": 0.2, "FAST_S": 0.05, "SLOW_S": 0.3,
         "BATCH_S": 0.2, "CAP": 4, "SERIAL_S": 0.01}


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


def ideal(spec: str, chain_s: list[float], concurrency: int) -> float:
    """The ideal schedule's time (module docstring) of episodes ``chain_s`` (each the sum of
    its requests' service times at a lone request) on the server ``spec``."""
    kind, *values = spec.split(":")
    if kind == "serial":
        return sum(chain_s)
    if kind == "batch":
        cap = int(values[1])
        n = min(concurrency, cap)
        return ideal_async([c * (1 + (n - 1) / cap) for c in chain_s], n)
    return ideal_async(chain_s, concurrency)


class _Peak:
    """The most OS threads this process had, sampled every 50 ms on a daemon thread."""

    def __init__(self):
        self.threads, self._stop = 0, threading.Event()
        threading.Thread(target=self._sample, daemon=True).start()

    def _sample(self):
        while not self._stop.wait(0.05):
            self.threads = max(self.threads, len(os.listdir("/proc/self/task")))

    def stop(self) -> int:
        self._stop.set()
        return self.threads


def _row(label: str, spec: str, episodes: int, concurrency: int) -> dict:
    """One row, measured in a child process (module docstring)."""
    out = subprocess.run([sys.executable, "-m", "eval.benchmarks.llm_pacing", spec,
                          str(episodes), str(concurrency)], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[2])
    return {"name": f"bomb LLM run / ideal async schedule ({label}, concurrency "
                     f"{concurrency})", **json.loads(out.stdout.splitlines()[-1])}


def _measure(spec: str, episodes: int, concurrency: int) -> dict:
    mod = _server_module()
    kind, *values = spec.split(":")
    lone = {"batch": lambda: mod.fixed_latency(float(values[0])),  # a request alone
            "serial": lambda: mod.fixed_latency(float(values[0]))}.get(
        kind, lambda: mod.latency_from_spec(spec))()
    with served(spec) as url, tempfile.TemporaryDirectory() as tmp:
        cfg = LLMConfig(base_url=url, model="good", concurrency=concurrency, backoff_s=0.01)
        options = RunConfig(env="bomb/base-1", episodes=episodes).config(cfg, tmp)
        family = jaxcollab.family("bomb")
        team = LLMTeam(family, options, tmp)
        peak = _Peak()
        start = time.perf_counter()
        family.evaluate(["bomb/base-1"], team, Spec(episodes, 0, options=options))
        wall = time.perf_counter() - start
        threads = peak.stop()
        records = read_transcripts(transcript_path(tmp, "bomb/base-1"))
        per_ep = chains(records, ChatClient(team.cfg), lone)
        played, play_cpu = team.host.play_s, team.host.play_cpu_s
        retries = team.retries()
    best = ideal(spec, [sum(c) for c in per_ep], concurrency)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"value": played / best, "unit": "x", "played_s": played, "wall_s": wall,
            "ideal_s": best, "episodes": episodes, "requests": sum(map(len, per_ep)),
            "concurrency": concurrency, "threads": threads, "peak_rss_mb": round(rss, 1),
            "retries": retries, "cpu_s": round(time.process_time(), 2),
            "play_cpu_s": round(play_cpu, 2),
            "notes": f"{episodes} episodes at concurrency {concurrency} on {spec}: played "
                     f"{played:.2f} s vs ideal {best:.2f} s; {threads} threads, "
                     f"{rss:.0f} MB peak"}


def run(quick: bool = False) -> list[dict]:
    q = QUICK if quick else {"EPISODES": EPISODES, "CONCURRENCIES": CONCURRENCIES,
                             "FIXED_S": FIXED_S, "FAST_S": FAST_S, "SLOW_S": SLOW_S,
                             "BATCH_S": BATCH_S, "CAP": CAP, "SERIAL_S": SERIAL_S}
    servers = [(f"fixed {q['FIXED_S']} s", f"fixed:{q['FIXED_S']}"),
               (f"heavy tail {q['FAST_S']} s, 1 in 10 {q['SLOW_S']} s",
                f"tail:{q['FAST_S']}:{q['SLOW_S']}"),
               (f"batching {q['BATCH_S']} s, cap {q['CAP']}", f"batch:{q['BATCH_S']}:{q['CAP']}")]
    rows = [_row(label, spec, q["EPISODES"], c) for label, spec in servers
            for c in q["CONCURRENCIES"]]
    return rows + [_row(f"serial {q['SERIAL_S']} s", f"serial:{q['SERIAL_S']}", q["EPISODES"],
                        q["CONCURRENCIES"][0])]


if __name__ == "__main__":
    print(json.dumps(_measure(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))))
