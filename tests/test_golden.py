"""Golden runs: a dozen README commands at tiny sizes, run as a user runs them (``python
<script> <overrides>`` in a child process), whose results must equal values recorded before the
"Family wings" refactor (issue 33 item 6: nothing changes for users).

One run per family and entry point: scripted bomb teams (a family group, the bank protocol with a
solo baseline, the protocols table, the information bounds), the trace analysis of a finished
run, Keep Talking (a module under a random ruleset, a mission), the maze oracle, an export per
family, the LLM team against the scripted test server (``tests/llm_server.py``) on bomb, Keep
Talking and the maze, a tiny round-trainer run (``train/collab.py``, parity), a tiny RL run
(``train/marl.py``) and the exact theory. Only the CLIs and the files they write are used, never
a library module, so the test survives modules moving.

``tests/data/golden.json`` holds, per run, every key of its ``results.json`` (and
``analysis.json``, or the export records, texts hashed) flattened to dotted paths, less the keys
that depend on the machine or the clock (:data:`DROPPED`) and the configuration block (whose
layout the refactor changes; the values it sets are the overrides below). Integers, strings and
booleans compare exactly; floats within ``rtol=1e-5`` (two recordings on this CPU agreed to the
last bit; the margin is for other CPUs' float reductions). A key the refactor adds is allowed; a
key it drops or a value it changes fails, naming the run and the key.

Recorded at commit 7764d2e on a 2-core x86-64 CPU (JAX on CPU, 32-bit floats) by a one-off script
that ran :data:`RUNS` with exactly these overrides into fresh directories and stored
:func:`golden_values` of each, then ran them again and checked both recordings agreed.
Deliberate changes since: issue 34 turned the Keep-Talking end-of-game reflection off by
default (ours, no paper's), so ``llm_ktane`` sends two requests fewer and its token counts were
re-recorded (total 210,276 → 199,888); nothing else moved.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.llm_server import LLMServer

pytestmark = pytest.mark.full

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).with_name("data") / "golden.json"
RTOL, ATOL = 1e-5, 1e-8

#: the round trainer at toy size (tests/test_collab_seeds.py's sizes): 2 rounds, both protocols
TINY_COLLAB = ["task=parity", "task.n_bits=8", "task.n_examples=1000", "task.test_fraction=0.2",
               "task.view=own", "n_rounds=2", "protocols=[probability,action]",
               "model.n_layer=1", "model.n_head=1", "model.n_embd=8", "train.steps=4",
               "train.batch_size=32", "train.warmup_steps=1", "train.eval_every=2",
               "train.val_examples=32", "train.eval_batch=256", "train.lr=1e-3",
               "train.min_lr=1e-4"]

#: name -> (script, overrides); ``{out}`` is the run's directory, ``{root}`` the directory of
#: every run, ``{llm}`` the test server's base URL.
RUNS = {
    "bomb_counting": ("eval/rollout.py", ["env=bomb/flashback", "agent=counting", "episodes=8",
                                          "out_dir={out}"]),
    "bomb_analyze": ("eval/analyze.py", ["run={root}/bomb_counting"]),  # see ANALYZED
    "bomb_bank": ("eval/rollout.py", ["env=bomb/base", "agent=symbol", "bank=true", "repeats=1",
                                      "solo=solo", "out_dir={out}"]),
    "bomb_protocols": ("eval/protocols.py", ["env=bomb/shuffle-3", "teams=[onebit,random]",
                                             "episodes=6", "out_dir={out}"]),
    "bomb_bounds": ("eval/bounds.py", ["env=bomb/base-5", "teams=[symbol,oracle]", "episodes=6",
                                       "out_dir={out}"]),
    "ktane_module": ("eval/rollout.py", ["env=ktane/wires", "agent=talking", "ruleset=random",
                                         "ruleset_seed=0", "episodes=8", "out_dir={out}"]),
    "ktane_mission": ("eval/rollout.py", ["env=ktane/missions/multi/1", "agent=talking",
                                          "episodes=2", "out_dir={out}"]),
    "maze_oracle": ("eval/rollout.py", ["env=maze/split-6x6", "agent=oracle", "episodes=8",
                                        "out_dir={out}"]),
    "export_bomb": ("eval/export.py", ["env=bomb/base-1", "n=2", "out={out}.jsonl"]),
    "export_ktane": ("eval/export.py", ["env=ktane/morse", "n=2", "out={out}.jsonl"]),
    "export_maze": ("eval/export.py", ["env=maze/split-6x6", "n=3", "out={out}.jsonl"]),
    "llm_bomb": ("eval/rollout.py", ["env=bomb/base-1", "agent=llm", "llm.base_url={llm}",
                                     "llm.model=good", "episodes=2", "out_dir={out}"]),
    "llm_ktane": ("eval/rollout.py", ["env=ktane/wires", "agent=llm", "llm.base_url={llm}",
                                      "llm.model=good", "episodes=2", "out_dir={out}"]),
    "llm_maze": ("eval/rollout.py", ["env=maze/split-6x6", "agent=llm", "llm.base_url={llm}",
                                     "llm.model=maze", "episodes=2", "out_dir={out}"]),
    "collab": ("train/collab.py", [*TINY_COLLAB, "out_dir={out}"]),
    "marl": ("train/marl.py", ["env=bomb/base-1", "preset=tiny", "eval_episodes=16",
                               "out_dir={out}"]),
    "theory": ("eval/theory.py", ["task.alphas=[0.2,0.15,0.1]", "task.n_bits=3",
                                  "task.n_rounds=3", "method=enumeration", "out_dir={out}"]),
}

#: analysis run -> the finished run it replays (and writes ``analysis.json`` into)
ANALYZED = {"bomb_analyze": "bomb_counting"}

#: keys (any path component) that depend on the machine, the clock or the run's location
DROPPED = frozenset({"config", "run", "devices", "base_url", "episodes_per_second",
                     "env_steps_per_second", "latency_s", "queue_s", "seconds", "wall_seconds",
                     "train_seconds", "shared_from"})


def _flat(value, path: str = ""):
    """``(dotted path, leaf)`` pairs; a list of scalars is one leaf, a list of containers is
    indexed (``key[i]``), so a failure names the element."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k not in DROPPED:
                yield from _flat(v, f"{path}.{k}" if path else k)
    elif isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        for i, v in enumerate(value):
            yield from _flat(v, f"{path}[{i}]")
    else:
        yield path, value


def _text_hashes(record: dict) -> dict:
    """An export record with each rendered view (``text``) replaced by its SHA-256."""
    text = record.get("text", {})
    return {**record, "text": {role: hashlib.sha256(t.encode()).hexdigest()
                               for role, t in text.items()}}


def golden_values(name: str, root: Path) -> dict:
    """The compared values of run ``name`` written under ``root``: flat ``{path: leaf}``."""
    out = root / name
    if name.startswith("export"):
        records = [json.loads(line) for line in Path(f"{out}.jsonl").read_text().splitlines()]
        data = {"records": [_text_hashes(r) for r in records]}
    elif name in ANALYZED:
        data = json.loads((root / ANALYZED[name] / "analysis.json").read_text())
    else:
        data = json.loads((out / "results.json").read_text())
    return dict(_flat(data))


def _command(name: str, root: Path, llm: str) -> list[str]:
    script, overrides = RUNS[name]
    fill = {"out": str(root / name), "root": str(root), "llm": llm}
    return [sys.executable, script, *(o.format(**fill) for o in overrides)]


def run_all(root: Path, llm: str, workers: int = 2) -> dict[str, str]:
    """Run every command of :data:`RUNS` under ``root``, ``workers`` at a time (an analysis
    after the run it reads); returns the failures' ``{name: end of output}``."""
    env = dict(os.environ, JAX_PLATFORMS="cpu", WANDB_MODE="disabled")

    def one(name):
        done = subprocess.run(_command(name, root, llm), cwd=ROOT, env=env, text=True,
                              capture_output=True, timeout=900)
        return name, done.returncode, (done.stdout + done.stderr)[-3000:]

    with ThreadPoolExecutor(workers) as pool:
        results = list(pool.map(one, [n for n in RUNS if n not in ANALYZED]))
        results += list(pool.map(one, list(ANALYZED)))
    return {name: log for name, rc, log in results if rc != 0}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Every golden run, once: ``(root, failures)``."""
    root = tmp_path_factory.mktemp("golden")
    with LLMServer() as server:
        failures = run_all(root, server.url)
    return root, failures


def _same(got, want) -> bool:
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(
            _same(g, w) for g, w in zip(got, want))
    if isinstance(want, bool) or isinstance(got, bool) or want is None or got is None:
        return got is want
    if isinstance(want, (int, float)) and isinstance(got, (int, float)):
        if isinstance(want, int) and isinstance(got, int):
            return got == want
        return math.isclose(got, want, rel_tol=RTOL, abs_tol=ATOL) or (
            math.isnan(got) and math.isnan(want))
    return got == want


@pytest.mark.parametrize("name", list(RUNS))
def test_run_matches_the_recorded_values(runs, name):
    root, failures = runs
    assert name not in failures, f"{name} failed:\n{failures[name]}"
    want = json.loads(GOLDEN.read_text())[name]
    got = golden_values(name, root)
    missing = sorted(set(want) - set(got))
    assert not missing, f"{name}: keys gone: {missing[:20]}"
    differ = [f"{k}: got {got[k]!r}, recorded {want[k]!r}" for k in want
              if not _same(got[k], want[k])]
    assert not differ, f"{name}: {len(differ)} values differ:\n" + "\n".join(differ[:20])


def test_every_run_is_recorded():
    assert sorted(json.loads(GOLDEN.read_text())) == sorted(RUNS)
