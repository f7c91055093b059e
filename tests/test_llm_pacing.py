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
@pytest.mark.parametrize("concurrency,episodes,latency,at_once", [(8, 16, 0.5, 6),
                                                                   (64, 64, 2.0, 48)])
def test_the_cli_keeps_concurrency_requests_in_flight(tmp_path, concurrency, episodes, latency,
                                                      at_once):
    """Bomb episodes against a server that takes ``latency`` s per reply: at concurrency 8 the
    server serves at least 6 requests at once (2 with the default pool on this CPU), at
    concurrency 64 at least 48 (32 with one CPU device: XLA:CPU runs 32 computations per device
    at once; 46 were seen with 0.5 s replies at load average 21, episodes starting slowly)."""
    env = {k: v for k, v in os.environ.items() if k != "PJRT_NPROC"}
    with LLMServer(latency=fixed_latency(latency)) as server:
        subprocess.run([sys.executable, "eval/rollout.py", "env=bomb/base-1", "agent=llm",
                        f"llm.base_url={server.url}", "llm.model=good",
                        f"llm.concurrency={concurrency}", f"episodes={episodes}",
                        f"out_dir={tmp_path}"], cwd=ROOT, env=env, check=True,
                       capture_output=True)
        assert server.in_flight_max >= at_once
    assert json.loads((tmp_path / "results.json").read_text())["episodes"] == episodes


def test_waiting_episodes_get_a_cpu_device_per_32_that_no_mesh_spans():
    """Before JAX starts, concurrency 65 asks for 3 CPU devices (32 waiting computations
    each); the pool spreads over all 3 (32 workers over one), while ``data_mesh`` and a
    rollout's default mesh span the first only, so a 1-episode rollout still runs. A device
    count the user set (``JAX_NUM_CPU_DEVICES``) is left as it is, every device meshed (a
    rollout then needs 2 episodes), and the call says it falls short of 65."""
    code = ("import jax, jaxcollab\n"
            "from jaxcollab.llm.play import callback_meshes, reserve_callback_threads\n"
            "from jaxcollab.core.devices import compute_devices\n"
            "from jaxcollab.scale.mesh import data_mesh\n"
            "ok = reserve_callback_threads(65)\n"
            "pol = jaxcollab.stateless(lambda k, o: o[:, 0] * 0, 'zeros')\n"
            "out = jaxcollab.rollout(jaxcollab.make('parity/action'), pol,\n"
            "                        jaxcollab.episode_keys(0, data_mesh().size), max_steps=2)\n"
            "print(ok, len(jax.devices()), len(compute_devices()), data_mesh().size,\n"
            "      [m.devices.item().id for m in callback_meshes(65)],\n"
            "      len(callback_meshes(32)), out.length.shape)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PJRT_NPROC", "XLA_FLAGS")}

    def run(**extra) -> str:
        return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env | extra,
                              check=True, capture_output=True, text=True).stdout.strip()

    assert run() == "True 3 1 1 [0, 1, 2] 1 (1,)"
    assert run(JAX_NUM_CPU_DEVICES="2") == "False 2 2 2 [0, 1] 1 (2,)"


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
