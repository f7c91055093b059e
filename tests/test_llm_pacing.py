"""Server-paced LLM play as a user runs it: the CLI keeps ``llm.concurrency`` requests in
flight (one batched rollout, one event loop for every episode's requests:
:mod:`jaxcollab.llm.play`), whatever XLA:CPU's thread pool and device count."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from llm_server import LLMServer, fixed_latency

ROOT = Path(__file__).parents[1]


@pytest.mark.full  # a long run: the default tier's budget (CI runs -m full)
@pytest.mark.parametrize("concurrency,episodes,latency,at_once", [(8, 16, 0.5, 6),
                                                                   (64, 64, 2.0, 48)])
def test_the_cli_keeps_concurrency_requests_in_flight(tmp_path, concurrency, episodes, latency,
                                                      at_once):
    """Bomb episodes against a server that takes ``latency`` s per reply: at concurrency 8 the
    server serves at least 6 requests at once (2 when each waiting episode held a thread of
    XLA:CPU's default pool on this CPU), at concurrency 64 at least 48 (32 when each held one
    of a CPU device's 32 computations)."""
    env = {k: v for k, v in os.environ.items() if k != "PJRT_NPROC"}
    with LLMServer(latency=fixed_latency(latency)) as server:
        subprocess.run([sys.executable, "eval/rollout.py", "env=bomb/base-1", "agent=llm",
                        f"llm.base_url={server.url}", "llm.model=good",
                        f"llm.concurrency={concurrency}", f"episodes={episodes}",
                        f"out_dir={tmp_path}"], cwd=ROOT, env=env, check=True,
                       capture_output=True)
        assert server.in_flight_max >= at_once
    assert json.loads((tmp_path / "results.json").read_text())["episodes"] == episodes


def test_importing_jaxcollab_starts_no_backend():
    """Every module of the package imports without starting JAX's backend (a module-level
    device array would), so an entry point can still size the thread pool after its imports.
    The JaxMARL adapter is left out: the ``jaxmarl`` package itself starts it at import."""
    code = ("import importlib, pkgutil, jaxcollab\n"
            "from jax._src import xla_bridge\n"
            "for m in pkgutil.walk_packages(jaxcollab.__path__, 'jaxcollab.'):\n"
            "    if m.name == 'jaxcollab.marl.adapter': continue\n"
            "    importlib.import_module(m.name)\n"
            "    assert not xla_bridge.backends_are_initialized(), m.name\n")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
