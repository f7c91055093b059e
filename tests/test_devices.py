"""XLA:CPU device counts (:func:`jaxcollab.core.devices.use_cpu_devices`), each case in a fresh
process: the count can only be set before JAX's CPU backend starts. The optimisation level's
flag (:func:`~jaxcollab.core.devices.use_xla_cpu_opt_level`) is set once in a fresh process, its
other cases in this one."""

from __future__ import annotations

import os
import subprocess
import sys

import jax
import pytest
from jax._src import xla_bridge

from jaxcollab.core import devices
from jaxcollab.core.devices import cpu_cores, use_cpu_devices, use_xla_cpu_opt_level

#: the module alone (it imports only JAX), so each fresh process starts in about a second
LOAD = ("import importlib.util, jax; s = importlib.util.spec_from_file_location('d', {path!r}); "
        "d = importlib.util.module_from_spec(s); s.loader.exec_module(d); ")


def _python(code: str, **env: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("JAX_NUM_CPU_DEVICES", "XLA_FLAGS")
           } | {"JAX_PLATFORMS": "cpu"} | env
    out = subprocess.run([sys.executable, "-c", LOAD.format(path=devices.__file__) + code],
                         capture_output=True, text=True, env=env, check=True)
    return out.stdout.strip()


def _run(requested, batch: int, **env: str) -> str:
    return _python(f"r = d.use_cpu_devices({requested!r}, {batch}); "
                   "print(r, len(jax.devices('cpu')))", **env)


def _largest_divisor(batch: int) -> int:
    return max(d for d in range(1, cpu_cores() + 1) if batch % d == 0)


def test_cores_gives_one_device_per_core_that_divides_the_batch():
    assert _run("cores", 256) == f"{_largest_divisor(256)} {_largest_divisor(256)}"
    assert _run("cores", 7) == f"{_largest_divisor(7)} {_largest_divisor(7)}"  # 1 below 7 cores


def test_a_count_is_set_exactly_and_none_leaves_jax_alone():
    assert _run(3, 6) == "3 3"
    assert _run(None, 256) == "None 1"


@pytest.mark.full  # long: the default tier's time (issue 36)
def test_a_user_set_count_or_a_started_backend_is_left_as_it_is():
    assert _run("cores", 256, JAX_NUM_CPU_DEVICES="3") == "None 3"
    assert _run(2, 256, XLA_FLAGS="--xla_force_host_platform_device_count=5") == "None 5"
    assert _python("jax.devices(); print(d.use_cpu_devices(4, 256), len(jax.devices('cpu')))"
                   ) == "None 1"


@pytest.mark.parametrize("requested, message", [
    (3, r"^a count that divides the batch size 256 \(3 does not\), or 'cores'$"),
    (0, "^null, a count >= 1 or 'cores'$"),
    (True, "^null, a count >= 1 or 'cores'$"),
    ("all", "^null, a count >= 1 or 'cores'$"),
])
def test_bad_counts_are_refused_naming_the_value(requested, message):
    with pytest.raises(ValueError, match=message):
        use_cpu_devices(requested, 256)


def test_opt_level_is_added_to_xla_flags_unless_named_or_started(monkeypatch):
    show = "print(r, os.environ.get('XLA_FLAGS'))"
    # in a fresh process the flag lands before the backend starts
    assert _python(f"import os; r = d.use_xla_cpu_opt_level(1); {show}") == (
        "True --xla_backend_optimization_level=1")
    # the other cases in this process (one fresh process each cost the default tier ~30 s):
    # its backend has started, so the flag is not set; then as if it had not, on user flags
    jax.devices()
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    assert use_xla_cpu_opt_level(1) is False and "XLA_FLAGS" not in os.environ
    monkeypatch.setattr(xla_bridge, "backends_are_initialized", lambda: False)
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=false")
    assert use_xla_cpu_opt_level(1) is True and os.environ["XLA_FLAGS"] == (
        "--xla_cpu_enable_fast_math=false --xla_backend_optimization_level=1")
    monkeypatch.setenv("XLA_FLAGS", "--xla_backend_optimization_level=3")
    assert use_xla_cpu_opt_level(0) is False
    assert os.environ["XLA_FLAGS"] == "--xla_backend_optimization_level=3"
    monkeypatch.delenv("XLA_FLAGS")
    assert use_xla_cpu_opt_level(None) is False and "XLA_FLAGS" not in os.environ


@pytest.mark.parametrize("level", [4, -1, 1.0, True, "1"])
def test_bad_opt_levels_are_refused(level):
    with pytest.raises(ValueError, match=r"^null or an optimisation level 0\.\.3$"):
        use_xla_cpu_opt_level(level)
