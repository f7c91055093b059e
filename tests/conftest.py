"""Shared pytest settings: tests run on the CPU with 64-bit floats off (the library default)
and share JAX's persistent compilation cache (below); ``cli`` runs an entry point in-process on
the config Hydra composes from command-line overrides (the same call its ``main`` makes, without
a subprocess); ``server`` is a stub OpenAI-compatible server (``tests/llm_server.py``), one
per test module (a module that needs another latency defines its own)."""

import importlib
import os
from pathlib import Path

import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("WANDB_MODE", "disabled")
# Every LLM host callback, in-process or in a CLI subprocess, raises on a JAX dispatch (one
# there can deadlock XLA:CPU's pool: jaxcollab.llm.hostonly).
os.environ.setdefault("JAXCOLLAB_NO_DISPATCH", "1")
# The suite is compile-bound: one XLA compile of a program serves every test, worker and
# subprocess that builds the same program (a fresh ``make()``, another closure, the CLI tests).
# The cache lives outside the repository, so a second run is warm; on a clean machine it starts
# cold and still pays each distinct program once. ``JAX_COMPILATION_CACHE_DIR`` overrides it.
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR",
                      str(Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
                          / "jaxcollab" / "xla"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.1")

ROOT = Path(__file__).resolve().parent.parent
#: entry point -> (module with ``run(cfg)``, config name)
ENTRY_POINTS = {
    "train/collab.py": ("train.collab", "collab"),
    "train/maze.py": ("train.maze", "collab"),
    "train/calibration.py": ("train.calibration", "collab"),
    "eval/calibration.py": ("eval.calibration", "calibration"),
    "eval/theory.py": ("eval.theory", "theory"),
    "eval/bench.py": ("eval.bench", "bench"),
    "eval/rollout.py": ("eval.rollout", "rollout"),
    "eval/export.py": ("eval.export", "export"),
    "eval/protocols.py": ("eval.protocols", "protocols"),
    "eval/seeds.py": ("eval.seeds", "seeds"),
    "eval/tables.py": ("eval.tables", "tables"),
    "eval/analyze.py": ("eval.analyze", "analyze"),
}


def compose_entry(script: str, *overrides: str):
    """``(run, cfg)``: the entry point's run function and its composed config."""
    from hydra import compose, initialize_config_dir

    module, config = ENTRY_POINTS[script]
    run = importlib.import_module(module).run  # importing it registers the schemas
    with initialize_config_dir(str(ROOT / "configs"), version_base=None):
        return run, compose(config, overrides=list(overrides))


def run_entry(script: str, *overrides: str):
    """Run ``python <script> <overrides>`` in-process; returns what its ``run`` returns."""
    run, cfg = compose_entry(script, *overrides)
    return run(cfg)


@pytest.fixture
def cli():
    """``cli(script, *overrides)``: see :func:`run_entry`."""
    return run_entry


@pytest.fixture
def composed():
    """``composed(script, *overrides) -> (run, cfg)``: see :func:`compose_entry`."""
    return compose_entry


@pytest.fixture(scope="module")
def server():
    """The stub OpenAI-compatible server (:class:`llm_server.LLMServer`), for one module."""
    from llm_server import LLMServer

    with LLMServer() as srv:
        yield srv


@pytest.fixture
def default_sigint():
    """SIGINT raises KeyboardInterrupt for the test, as in a terminal, whatever the runner
    inherited (a shell without job control starts background jobs with SIGINT ignored)."""
    import signal

    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)
