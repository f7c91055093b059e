"""Compile guard (issue 23): the unbatched ``reset`` and ``step`` of two bombs holding every
Keep-Talking module type (six and five: a face holds six) compile. The worst case seen was one
module's unbatched ``reset`` (Passwords: over 15 minutes, where vmapped it took 3 s):
unbatched, XLA CPU fused the hash chain behind a gather's index into every element of a loop.
Each compile takes 1–2 s of CPU; they run in a child process whose timeout (minutes, far beyond
them even on a loaded machine) turns such a runaway compile into a failure instead of a hung
suite. No compile is timed here: the per-program seconds and their budget are
``python -m eval.bench only=[compile]`` (``eval/benchmarks/compile.py``)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_S = 600

PROBE = """
import json, jax
from jaxcollab.envs.ktane import KtaneEnv, Mission
from jaxcollab.envs.ktane.modules import MODULE_TYPES
compiled, key = [], jax.random.key(0)
for half in (list(MODULE_TYPES)[:6], list(MODULE_TYPES)[6:]):
    env = KtaneEnv(Mission(tuple(half), time_limit_s=600), "test/" + "+".join(half))
    params = env.default_params
    state = jax.eval_shape(env.reset, key, params)[1]
    actions = jax.eval_shape(env.action_space(params).sample, key)
    for name, fn, args in (("reset", env.reset, (key, params)),
                           ("step", env.step, (key, state, actions, params))):
        jax.jit(fn).lower(*args).compile()
        compiled.append(f"{env.name} {name}")
print(json.dumps(compiled))
"""


@pytest.mark.full  # a long run: the default tier's budget (CI runs -m full)
def test_unbatched_reset_and_step_of_every_module_type_compile():
    env = {**os.environ, "JAX_ENABLE_COMPILATION_CACHE": "false"}  # a real compile
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=TIMEOUT_S, check=True)
    compiled = json.loads(done.stdout.splitlines()[-1])
    assert [c.rsplit(" ", 1)[1] for c in compiled] == ["reset", "step"] * 2
    assert len({c.rsplit(" ", 1)[0] for c in compiled}) == 2  # the two bombs
