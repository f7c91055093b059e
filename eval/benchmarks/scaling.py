"""Scaling efficiency (issue 16): rollout and training throughput on 1, 2 and 4 devices.

Each device count runs in its own process (:mod:`eval.benchmarks._scaling_probe`): real GPUs
when this host has four (through ``CUDA_VISIBLE_DEVICES``), otherwise fake CPU devices
(``--xla_force_host_platform_device_count``). Fake devices share the host's cores: XLA's CPU
client already spreads one device's work over them, so on a CPU the figures show what sharding
costs or gains over that, not a multi-chip speed-up. Strong scaling: the global
batch (episodes, training examples per step) is the same at every count, and
``efficiency = rate(n) / (n · rate(1))``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jax

ROOT = Path(__file__).resolve().parents[2]
COUNTS = (1, 2, 4)


def _env(n: int) -> dict:
    """Child environment for ``n`` devices: GPUs when this host has ``max(COUNTS)`` of them (so
    every count uses the same kind), otherwise fake CPU devices."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if jax.default_backend() == "gpu" and jax.device_count() >= max(COUNTS):
        env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, range(n)))
    else:
        env.update(JAX_PLATFORMS="cpu", XLA_FLAGS=f"--xla_force_host_platform_device_count={n}")
    return env


def probe(n: int, quick: bool) -> dict:
    """One child process's measurement on ``n`` devices (see module docstring)."""
    cmd = [sys.executable, "-m", "eval.benchmarks._scaling_probe", str(quick).lower()]
    out = subprocess.run(cmd, env=_env(n), cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(quick: bool) -> list[dict]:
    measured = {n: probe(n, quick) for n in COUNTS}
    rows = []
    for what, unit in (("rollout", "episodes/s"), ("train", "steps/s")):
        base = measured[1][what]
        for n, m in measured.items():
            size = f"{m['episodes']} episodes" if what == "rollout" else f"batch {m['batch']}"
            note = f"{n} x {m['backend']} ({m['device_kind']}), {size}"
            rows.append({"name": f"{what} throughput, {n} devices", "value": m[what],
                         "unit": unit, "notes": note})
            rows.append({"name": f"{what} scaling efficiency, {n} devices",
                         "value": m[what] / (n * base), "unit": "fraction",
                         "notes": f"rate({n}) / ({n} x rate(1)), same global batch"})
    return rows
