"""Server-paced LLM play as a user runs it: the CLI keeps ``llm.concurrency`` requests in
flight, which needs XLA:CPU's thread pool sized before JAX starts
(:func:`jaxcollab.llm.play.reserve_callback_threads`): with one thread per core, a 2-core
machine served at most 2 requests at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from llm_server import LLMServer, fixed_latency

from jaxcollab.llm.play import reserve_callback_threads

ROOT = Path(__file__).parents[1]


@pytest.mark.full  # a long run: the default tier's budget (CI runs -m full)
def test_the_cli_keeps_concurrency_requests_in_flight(tmp_path):
    """16 bomb episodes at concurrency 8 against a server that takes 0.5 s per reply: the
    server serves at least 6 requests at once (2 with the default pool on this CPU)."""
    env = {k: v for k, v in os.environ.items() if k != "PJRT_NPROC"}
    with LLMServer(latency=fixed_latency(0.5)) as server:
        subprocess.run([sys.executable, "eval/rollout.py", "env=bomb/base-1", "agent=llm",
                        f"llm.base_url={server.url}", "llm.model=good", "llm.concurrency=8",
                        "episodes=16", f"out_dir={tmp_path}"], cwd=ROOT, env=env, check=True,
                       capture_output=True)
        assert server.in_flight_max >= 6
    assert json.loads((tmp_path / "results.json").read_text())["episodes"] == 16


def test_a_started_backend_is_reported_not_resized(monkeypatch, caplog):
    """In a process whose JAX backend already runs (this one), the pool cannot grow: the call
    says so, naming ``PJRT_NPROC``, and leaves the environment alone."""
    import jax

    jax.devices()  # make sure the backend is up
    monkeypatch.delenv("PJRT_NPROC", raising=False)
    assert reserve_callback_threads(10_000) is False
    assert "PJRT_NPROC" not in os.environ and "PJRT_NPROC=" in caplog.text


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
