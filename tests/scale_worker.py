"""A child process for the scale tests: ``python tests/scale_worker.py OUT_DIR``.

Starts the multi-controller runtime if the ``JAX_*`` launch variables are set
(:func:`jaxcollab.scale.distributed.initialize`), plays a sharded parity rollout and two tiny
training rounds into ``OUT_DIR``, and (process 0) writes ``OUT_DIR/worker.json`` with the
episode returns, each round's metrics and where it ran. Prints ``step <j>`` as training steps
finish, so a test can signal it mid-round.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

from jaxcollab.scale.distributed import initialize, is_main, run_info

initialize()  # before any other JAX call

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import jaxcollab  # noqa: E402
from jaxcollab.collab.data import make_task  # noqa: E402
from jaxcollab.collab.fit import TrainConfig  # noqa: E402
from jaxcollab.collab.messages import MessageCodec  # noqa: E402
from jaxcollab.collab.trainer import RoundTrainer  # noqa: E402
from jaxcollab.core.rollout import episode_keys, rollout, stateless  # noqa: E402

PARITY = {"name": "parity", "alphas": [0.2, 0.15, 0.1, 0.02], "n_bits": 8, "alpha_sum": 0.49,
          "split": "alternate", "n_examples": 1000, "test_fraction": 0.2, "view": "own"}
TRAIN = TrainConfig(steps=8, batch_size=32, lr=1e-3, min_lr=1e-4, warmup_steps=1, eval_every=2,
                    val_examples=32, eval_batch=256)


def random_messages(key, obs):
    return jax.random.randint(key, (2,), 0, 100)


def progress(desc, total):
    def update(step, loss):
        print(f"step {step}", flush=True)

    return contextlib.nullcontext(update)


def main(out: Path) -> None:
    env = jaxcollab.make("parity/probability")
    played = rollout(env, stateless(random_messages), episode_keys(0, 8), max_steps=5)
    task = make_task(PARITY, jax.random.PRNGKey(0))
    codec = MessageCodec("probability", task.vocab, task.class_chars)
    trainer = RoundTrainer(task, codec, {"n_layer": 1, "n_head": 1, "n_embd": 8}, TRAIN, 2,
                           out / "run", jax.random.PRNGKey(3), progress=progress)
    metrics = trainer.run()
    if is_main():
        (out / "worker.json").write_text(json.dumps({
            "returns": jnp.asarray(played.episode_return).tolist(),
            "rounds": metrics, "run": run_info()}, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
