"""Compile-time guard (issue 23): the unbatched ``reset`` and ``step`` of two bombs holding every
Keep-Talking module type (six and five: a face holds six) compile in bounded time. The worst
case seen was one module's unbatched ``reset`` (Passwords: over 15 minutes, where vmapped it took
3 s): unbatched, XLA CPU fused the hash chain behind a gather's index into every element of a
loop. Each compile takes 1–2 s of CPU; the bound is generous (a loaded machine must not fail
it) and the compiles run in a child process with a timeout, so a regression fails instead of
hanging the suite. Per-program figures: ``python -m eval.bench only=[compile]``."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BOUND_CPU_S, TIMEOUT_S = 60, 600

PROBE = """
import json, time, jax
from jaxcollab.envs.ktane import KtaneEnv, Mission
from jaxcollab.envs.ktane.modules import MODULE_TYPES
out, key = {}, jax.random.key(0)
for half in (list(MODULE_TYPES)[:6], list(MODULE_TYPES)[6:]):
    env = KtaneEnv(Mission(tuple(half), time_limit_s=600), "test/" + "+".join(half))
    params = env.default_params
    state = jax.eval_shape(env.reset, key, params)[1]
    actions = jax.eval_shape(env.action_space(params).sample, key)
    for name, fn, args in (("reset", env.reset, (key, params)),
                           ("step", env.step, (key, state, actions, params))):
        cpu = time.process_time()
        jax.jit(fn).lower(*args).compile()
        out[f"{env.name} {name}"] = time.process_time() - cpu
print(json.dumps(out))
"""


def test_unbatched_reset_and_step_of_every_module_type_compile_in_bounded_time():
    env = {**os.environ, "JAX_ENABLE_COMPILATION_CACHE": "false"}  # a real compile
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=TIMEOUT_S, check=True)
    seconds = json.loads(done.stdout.splitlines()[-1])
    assert len(seconds) == 4
    assert all(s < BOUND_CPU_S for s in seconds.values()), seconds
