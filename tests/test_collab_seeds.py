"""``train/collab.py seeds=[...]``: seeds vmapped in one job equal the single-seed runs, the
results hold per-seed curves and their spread, a rerun resumes without retraining, and a vmapped
fit stopped by SIGTERM resumes to the same parameters."""

from __future__ import annotations

import json
import os
import signal

import jax
import numpy as np
import pytest

from jaxcollab.collab.fit import TrainConfig, fit
from jaxcollab.models.gpt import GPTConfig
from jaxcollab.scale import preempt

TINY = ["task=parity", "task.n_bits=8", "task.n_examples=1000", "task.test_fraction=0.2",
        "task.view=own", "n_rounds=2", "protocols=[probability,action]", "model.n_layer=1",
        "model.n_head=1", "model.n_embd=8", "train.steps=4", "train.batch_size=32",
        "train.warmup_steps=1", "train.eval_every=2", "train.val_examples=32",
        "train.eval_batch=256", "train.lr=1e-3", "train.min_lr=1e-4"]
# train_seconds is wall time
COMPARED = ("test_mse_vs_pstar", "test_accuracy", "test_ce", "best_val_loss", "best_step",
            "final_train_loss")


@pytest.fixture(scope="module")
def seeds_run(tmp_path_factory):
    from tests.conftest import run_entry

    out = tmp_path_factory.mktemp("seeds")
    return out, run_entry("train/collab.py", *TINY, "seeds=[0,2]", f"out_dir={out}")


@pytest.mark.slow  # the driver end to end: two CLI runs (~35 CPU-s)
def test_each_vmapped_seed_equals_its_single_run(seeds_run, cli, tmp_path):
    out, together = seeds_run
    alone = cli("train/collab.py", *TINY, "seed=2", f"out_dir={tmp_path}")
    for name in ("probability", "action"):
        for r, by_seed in enumerate(together["protocols"][name]["per_round"]):
            single = alone["protocols"][name]["per_round"][r]
            assert by_seed[1]["round"] == single["round"] == r + 1
            for k in COMPARED:
                np.testing.assert_allclose(by_seed[1][k], single[k], rtol=1e-4, atol=1e-6,
                                           err_msg=f"{name} round {r + 1} {k}")
        with np.load(out / name / "seed_2" / "round_2" / "round.npz") as v, \
                np.load(tmp_path / name / "round_2" / "round.npz") as s:
            np.testing.assert_allclose(v["test_probs"], s["test_probs"], atol=1e-5)
    # round 1 of the second protocol is the first's (no messages yet), per seed
    assert together["protocols"]["action"]["per_round"][0][1]["shared_from"] == str(
        out / "probability" / "seed_2" / "round_1")


@pytest.mark.slow  # the driver end to end: two CLI runs (~35 CPU-s)
def test_results_hold_per_seed_curves_and_spread(seeds_run):
    out, together = seeds_run
    entry = together["protocols"]["probability"]
    assert entry["rounds"] == [1, 2] and entry["seeds"] == [0, 2]
    mse = entry["test_mse_vs_pstar"]
    per_seed = [[m[s]["test_mse_vs_pstar"] for m in entry["per_round"]] for s in range(2)]
    assert mse["per_seed"] == per_seed and per_seed[0] != per_seed[1]
    np.testing.assert_allclose(mse["mean"], np.mean(per_seed, 0))
    np.testing.assert_allclose(mse["std"], np.std(per_seed, 0))
    assert entry["theory_mse_vs_pstar"] == [together["theory"]["prob_excess_mse"][r]
                                            for r in (1, 2)]
    assert (out / "seeds.png").stat().st_size > 0
    assert json.loads((out / "results.json").read_text())["config"]["seeds"] == [0, 2]


@pytest.mark.slow  # the driver end to end: two CLI runs (~35 CPU-s)
def test_rerun_resumes_without_retraining(seeds_run, cli):
    out, together = seeds_run
    again = cli("train/collab.py", *TINY, "seeds=[0,2]", f"out_dir={out}")
    # loaded rounds keep their recorded wall times: nothing was trained again
    assert again["protocols"] == together["protocols"]


@pytest.mark.full  # long for the default tier (measured idle)
def test_vmapped_fit_equals_each_seed_alone_and_resumes_after_sigterm(tmp_path):
    cfg = GPTConfig(vocab_size=14, block_size=8, n_layer=1, n_head=2, n_embd=16)
    tc = TrainConfig(steps=6, batch_size=16, lr=3e-3, min_lr=3e-4, warmup_steps=2,
                     eval_every=2, val_examples=32, eval_batch=32)
    rng = np.random.default_rng(0)
    data = (rng.integers(0, 14, (3, 96, 8)), rng.integers(0, 2, (3, 96)),
            rng.integers(0, 14, (3, 32, 8)), rng.integers(0, 2, (3, 32)))
    keys = jax.vmap(jax.random.PRNGKey)(np.arange(3))
    whole = fit(cfg, tc, *data, keys, seeds=True)
    alone = fit(cfg, tc, *(x[1] for x in data), keys[1])  # seed 1 by itself: the same model
    np.testing.assert_allclose(whole.best_val_loss[1], alone.best_val_loss, rtol=1e-5)
    assert whole.best_step[1] == alone.best_step
    for a, b in zip(jax.tree.leaves(whole.params), jax.tree.leaves(alone.params), strict=True):
        np.testing.assert_allclose(a[1], b, atol=1e-5)

    def kill_at_step_2(step, loss):
        if step == 2:
            os.kill(os.getpid(), signal.SIGTERM)

    with pytest.raises(preempt.Preempted, match="after step 2"):
        fit(cfg, tc, *data, keys, kill_at_step_2, checkpoint_dir=tmp_path / "state", seeds=True)
    steps = []
    resumed = fit(cfg, tc, *data, keys, lambda step, loss: steps.append(step),
                  checkpoint_dir=tmp_path / "state", seeds=True)
    assert steps == [3, 4, 5, 6] and not (tmp_path / "state").exists()
    np.testing.assert_array_equal(resumed.best_step, whole.best_step)
    np.testing.assert_array_equal(resumed.best_val_loss, whole.best_val_loss)
    for a, b in zip(jax.tree.leaves(resumed.params), jax.tree.leaves(whole.params), strict=True):
        np.testing.assert_array_equal(a, b)


def test_seed_trainers_refuse_trainers_that_differ_beyond_the_seed(tmp_path):
    from jaxcollab.collab.data import make_task
    from jaxcollab.collab.messages import MessageCodec
    from jaxcollab.collab.trainer import RoundTrainer, SeedTrainers

    spec = {"name": "parity", "alphas": [0.2, 0.15, 0.1, 0.02], "n_bits": 8, "alpha_sum": 0.49,
            "split": "alternate", "n_examples": 1000, "test_fraction": 0.2, "view": "own"}
    tc = TrainConfig(steps=2, batch_size=32, warmup_steps=1, eval_every=2, val_examples=32,
                     eval_batch=64)

    def trainer(seed, n_rounds):
        task = make_task(spec, jax.random.PRNGKey(seed))
        codec = MessageCodec("probability", task.vocab, task.class_chars)
        return RoundTrainer(task, codec, {"n_layer": 1, "n_head": 1, "n_embd": 8}, tc, n_rounds,
                            tmp_path / str(seed), jax.random.PRNGKey(seed))

    with pytest.raises(ValueError, match="differ only in data, key and run directory"):
        SeedTrainers([trainer(0, 2), trainer(1, 3)], tmp_path)
    with pytest.raises(ValueError, match="at least one trainer"):
        SeedTrainers([], tmp_path)
