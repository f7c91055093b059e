"""One device count's throughput for :mod:`eval.benchmarks.scaling` (run as a child process, so
the device count can be set before JAX starts): ``python -m eval.benchmarks._scaling_probe
QUICK`` prints one JSON line with rollout episodes/s and training steps/s over every device."""

from __future__ import annotations

import json
import sys

import jax
import numpy as np
from flax import nnx

import jaxcollab
from eval.benchmarks._timing import best_time
from jaxcollab.collab.fit import TrainConfig, make_optimizer, make_train_chunk
from jaxcollab.core.rollout import episode_keys, rollout, stateless
from jaxcollab.envs.parity import VOCAB
from jaxcollab.models.gpt import GPT, GPTConfig
from jaxcollab.scale.distributed import run_info
from jaxcollab.scale.mesh import replicate, replicated

SEQ_LEN = 22  # the cpu preset's round-3 prefix (see eval/benchmarks/train.py)
MODEL = {"n_layer": 2, "n_head": 4, "n_embd": 64}


def random_messages(key, obs):
    return jax.random.randint(key, (2,), 0, 100)


def rollout_rate(episodes: int, repeats: int) -> float:
    """Parity episodes (5 rounds, random messages) per second, sharded over ``data``."""
    env, policy, keys = jaxcollab.make("parity/probability"), stateless(random_messages), \
        episode_keys(0, episodes)
    return episodes / best_time(lambda: rollout(env, policy, keys, max_steps=5).length, repeats)


def train_rate(batch: int, steps: int, repeats: int) -> float:
    """Optimiser steps per second of the cpu-preset model (one compiled chunk of ``steps``)."""
    cfg = GPTConfig(vocab_size=len(VOCAB), block_size=SEQ_LEN, **MODEL)
    graphdef, params = nnx.split(GPT(cfg, nnx.Rngs(0)))
    tx = make_optimizer(TrainConfig(batch_size=batch, steps=steps, warmup_steps=1))
    chunk = make_train_chunk(graphdef, tx, batch, dropout=False)
    rng = np.random.default_rng(0)
    tokens, targets = replicate((rng.integers(0, len(VOCAB), (4 * batch, SEQ_LEN), np.int32),
                                 rng.integers(0, 2, 4 * batch).astype(np.int32)))
    state = list(jax.device_put((params, tx.init(params)), replicated()))

    def run():
        state[0], state[1], losses = chunk(*state, jax.random.PRNGKey(0), 1, tokens, targets,
                                           n_steps=steps)
        return losses

    return steps / best_time(run, repeats)


if __name__ == "__main__":
    quick = sys.argv[1] == "true"
    episodes, batch, steps, repeats = (4096, 128, 10, 2) if quick else (65536, 512, 50, 3)
    print(json.dumps({**run_info(), "rollout": rollout_rate(episodes, repeats),
                      "train": train_rate(batch, steps, repeats), "episodes": episodes,
                      "batch": batch}))
