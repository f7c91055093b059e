"""Round trainer: prefixes, cross-fitting, fresh weights, checkpoints, resume, learning, errors."""

import contextlib
import dataclasses
import shutil

import jax
import numpy as np
import pytest
from flax import nnx

from jaxcollab.collab import fit as fit_module
from jaxcollab.collab.data import CollabTask, TaskSplit, build_prefix, make_task, round_chunks
from jaxcollab.collab.fit import TrainConfig, predict_probs
from jaxcollab.collab.messages import MessageCodec
from jaxcollab.collab.trainer import RoundTrainer, _load_round, calibration_folds
from jaxcollab.envs.parity import VOCAB, encode
from jaxcollab.io.checkpoints import load_params
from jaxcollab.models.gpt import GPT
from jaxcollab.scale import mesh as scale_mesh

TINY = {"n_layer": 1, "n_head": 1, "n_embd": 8}
FAST = TrainConfig(steps=3, batch_size=32, lr=1e-3, min_lr=1e-4, warmup_steps=1, eval_every=3,
                   val_examples=32, eval_batch=512)
PARITY = {"name": "parity", "alphas": [0.2, 0.15, 0.1, 0.02], "n_bits": 8, "alpha_sum": 0.49,
          "split": "alternate", "n_examples": 1000, "test_fraction": 0.2, "view": "own"}
KEY = jax.random.PRNGKey(3)


class RecordingFresh:
    """``fit``'s fresh-model builder, remembering the parameters every fit starts from (the
    model class stays GPT, so its compiled train chunk is shared with the other tests)."""

    starts: list = []

    def __init__(self):
        self.original = fit_module._fresh

    def __call__(self, model_cfg, tx, key, seeds):
        graphdef, params, opt_state = self.original(model_cfg, tx, key, seeds)
        RecordingFresh.starts.append(jax.tree.map(np.asarray, params))
        return graphdef, params, opt_state


@contextlib.contextmanager
def recording_starts():
    """Within the block, ``RecordingFresh.starts`` collects each fit's initial parameters."""
    RecordingFresh.starts = []
    fresh = RecordingFresh()
    fit_module._fresh = fresh
    try:
        yield RecordingFresh.starts
    finally:
        fit_module._fresh = fresh.original


@pytest.fixture(scope="module")
def parity_task():
    return make_task(PARITY, jax.random.PRNGKey(0))


def _trainer(task, run_dir, kind="probability", **kw):
    codec = MessageCodec(kind, task.vocab, task.class_chars)
    return RoundTrainer(task, codec, kw.pop("model", TINY), kw.pop("train", FAST),
                        kw.pop("n_rounds", 2), run_dir, KEY, **kw)


@pytest.fixture(scope="module")
def finished(parity_task, tmp_path_factory):
    """A 2-round probability run with each fit's initial parameters recorded."""
    with recording_starts() as starts:
        trainer = _trainer(parity_task, tmp_path_factory.mktemp("run"))
        metrics = trainer.run()
    return trainer, metrics, list(starts)


def test_build_prefix_exact_tokens(parity_task):
    view = np.array([[1, 0, 1]], np.uint8)
    messages = [encode("73")[None], encode("05")[None]]
    assert "".join(VOCAB[t] for t in build_prefix(parity_task, view, messages)[0]) == "101|73|05="
    assert "".join(VOCAB[t] for t in build_prefix(parity_task, view, [])[0]) == "101="


def test_round_chunks_are_disjoint_and_cover():
    chunks = round_chunks(10, 3)
    assert [(c.start, c.stop) for c in chunks] == [(0, 3), (3, 6), (6, 10)]
    with pytest.raises(ValueError, match="cannot be cut into 3 round chunks"):
        round_chunks(5, 3)


def test_prefix_holds_exactly_earlier_messages_in_order(finished, parity_task):
    trainer, _, _ = finished
    outputs = [trainer.run_dir / f"round_{r}" / "round.npz" for r in (1, 2)]
    test_msgs = [np.load(p)["test_messages"] for p in outputs]
    assert trainer.prefixes(1, None, []).shape[1] == 4 + 1  # own 4 bits, '='
    loaded = [_load_round(trainer.round_dir(r)) for r in (1, 2)]
    p3 = trainer.prefixes(3, None, loaded)  # round 3: agent 0 again, two messages
    view = parity_task.test.views[0]
    np.testing.assert_array_equal(p3[:, :4], view)
    for i, msgs in enumerate(test_msgs):
        start = 4 + 3 * i
        assert (p3[:, start] == VOCAB.index("|")).all()
        np.testing.assert_array_equal(p3[:, start + 1 : start + 3], msgs)
    assert (p3[:, -1] == VOCAB.index("=")).all()
    p2 = trainer.prefixes(2, slice(0, 5), loaded)  # round 2 reads agent 1's view
    np.testing.assert_array_equal(p2[:, :4], parity_task.train.views[1][:5])


def test_cross_fitting_no_model_labels_its_training_rows(finished, parity_task):
    trainer, metrics, _ = finished
    n_train = len(parity_task.train)
    assert metrics[0]["fit_rows"] == [0, 400] and metrics[1]["fit_rows"] == [400, 800]
    assert metrics[0]["labelled_train_rows"] == [400, n_train]
    assert metrics[1]["labelled_train_rows"] == [n_train, n_train]
    with np.load(trainer.round_dir(1) / "round.npz") as z:
        msgs = z["train_messages"]
    assert (msgs[:400] == 0).all()  # rows round 1 trained on carry no round-1 message
    digits = [VOCAB.index(str(d)) for d in range(10)]
    assert np.isin(msgs[400:], digits).all() and not (msgs[400:] == 0).all()


def test_every_round_starts_from_fresh_weights(finished):
    trainer, _, starts = finished
    assert len(starts) == 2
    for r, start in enumerate(starts, 1):
        k_init = jax.random.split(jax.random.fold_in(KEY, r))[0]
        fresh = jax.tree.map(np.asarray, nnx.state(GPT(trainer.model_cfg, nnx.Rngs(k_init))))
        assert jax.tree.all(jax.tree.map(np.array_equal, start, fresh))
    assert not jax.tree.all(jax.tree.map(np.array_equal, starts[0], starts[1]))


def test_checkpoint_restores_identical_predictions(finished, parity_task):
    trainer, _, _ = finished
    graphdef, like = nnx.split(GPT(trainer.model_cfg, nnx.Rngs(99)))
    params = load_params(trainer.round_dir(1) / "checkpoint", like)
    probs = predict_probs(graphdef, params, trainer.prefixes(1, None, []),
                          parity_task.class_tokens, 512)
    with np.load(trainer.round_dir(1) / "round.npz") as z:
        np.testing.assert_array_equal(probs, z["test_probs"])


def test_killed_run_resumes_at_first_unfinished_round(finished, parity_task, tmp_path):
    trainer, reference, _ = finished
    shutil.copytree(trainer.round_dir(1), tmp_path / "round_1")  # round 1 finished earlier

    def killing_progress(desc, total):
        def update(step, loss):
            if step == 2:
                raise KeyboardInterrupt

        return contextlib.nullcontext(update)

    with pytest.raises(KeyboardInterrupt):
        _trainer(parity_task, tmp_path, progress=killing_progress).run()
    assert not (tmp_path / "round_2" / "round.npz").exists()
    with recording_starts() as starts:
        metrics = _trainer(parity_task, tmp_path).run()
    assert len(starts) == 1  # only round 2 was trained again
    assert metrics[0] == reference[0]
    timing = ("train_seconds",)
    assert {k: v for k, v in metrics[1].items() if k not in timing} == {
        k: v for k, v in reference[1].items() if k not in timing
    }  # the resumed round reproduces the uninterrupted one exactly


def test_tiny_run_learns_a_trivially_learnable_task(tmp_path):
    rng = np.random.default_rng(0)

    def split(n):
        bits = rng.integers(0, 2, (n, 4)).astype(np.uint8)
        labels = bits[:, 0].astype(np.int32)
        return TaskSplit((bits,), labels, np.eye(2, dtype=np.float32)[labels])

    task = CollabTask("copy", VOCAB, "01", split(3000), split(500))
    train = dataclasses.replace(FAST, steps=80, batch_size=64, lr=1e-2, min_lr=1e-3,
                                warmup_steps=5, eval_every=40, val_examples=200)
    model = {"n_layer": 1, "n_head": 2, "n_embd": 16}
    (metrics,) = _trainer(task, tmp_path, "action", model=model, train=train, n_rounds=1).run()
    assert metrics["test_accuracy"] == 1.0
    assert metrics["test_ce"] < 0.05 and metrics["best_val_loss"] < 0.05


def test_bad_input_fails_before_training(parity_task, tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="context too long for the model: round 2 needs 9"):
        _trainer(parity_task, tmp_path, model={**TINY, "block_size": 8})
    with pytest.raises(ValueError, match="val_examples=300 must be at most half"):
        _trainer(parity_task, tmp_path, train=dataclasses.replace(FAST, val_examples=300))
    with pytest.raises(ValueError, match="n_rounds=0"):
        _trainer(parity_task, tmp_path, n_rounds=0)
    with pytest.raises(ValueError, match="unknown task 'maze9'; expected one of"):
        make_task({**PARITY, "name": "maze9"}, KEY)
    with pytest.raises(ValueError, match="unknown parity view 'all'"):
        make_task({**PARITY, "view": "all"}, KEY)
    with pytest.raises(ValueError, match="min_lr"):
        TrainConfig(lr=1e-4, min_lr=1e-3)
    monkeypatch.setattr(scale_mesh, "data_size", lambda mesh=None: 3)  # a 3-device data axis
    with pytest.raises(ValueError, match="batch_size=32 is not divisible by the 3 devices"):
        _trainer(parity_task, tmp_path)
    assert not any(tmp_path.iterdir())  # nothing was trained or written


def test_message_transform_changes_what_is_sent_not_what_is_predicted(finished, parity_task,
                                                                       tmp_path):
    trainer, reference, _ = finished
    calls = []
    flip = lambda m: 9 - m + 2 * VOCAB.index("0")  # noqa: E731  digit d -> 9 - d

    def transform(r, held_out, rows):
        calls.append((r, len(held_out.labels), None if rows.previous is None
                      else rows.previous.shape, len(rows.labels)))
        return flip(rows.messages)

    metrics = _trainer(parity_task, tmp_path, message_transform=transform).run()
    n_labelled = len(parity_task.train) - 400
    n_test = len(parity_task.test)
    n_val = trainer.train.val_examples
    # round 1: train rows, test; round 2: test (the last round labels no training rows); each
    # call sees the round's held-out validation rows
    assert calls == [(1, n_val, None, n_labelled), (1, n_val, None, n_test),
                     (2, n_val, (n_test, 2), n_test)]
    assert metrics[0]["test_mse_vs_pstar"] == reference[0]["test_mse_vs_pstar"]
    with np.load(tmp_path / "round_1" / "round.npz") as z:
        sent, posterior = z["test_messages"], z["test_posterior_messages"]
        train_sent = z["train_messages"][400:]
    with np.load(trainer.round_dir(1) / "round.npz") as z:
        np.testing.assert_array_equal(posterior, z["test_messages"])
        np.testing.assert_array_equal(train_sent, flip(z["train_messages"][400:]))
    np.testing.assert_array_equal(sent, flip(posterior))


def test_calibration_folds_split_the_held_out_rows_and_alternate_elsewhere():
    held = slice(10, 14)
    np.testing.assert_array_equal(calibration_folds(held, held), [1, 1, 0, 0])
    np.testing.assert_array_equal(calibration_folds(slice(8, 16), held),
                                  [0, 1, 1, 1, 0, 0, 0, 1])


def test_first_round_is_shared_across_protocols(finished, parity_task, tmp_path):
    trainer, reference, _ = finished
    with recording_starts() as starts:
        action = _trainer(parity_task, tmp_path, "action", first_round_from=trainer.run_dir)
        metrics = action.run()
    assert len(starts) == 1  # round 2 only: round 1 came from the probability run
    assert metrics[0]["shared_from"] == str(trainer.round_dir(1))
    assert metrics[0]["test_mse_vs_pstar"] == reference[0]["test_mse_vs_pstar"]
    with np.load(trainer.round_dir(1) / "round.npz") as src, \
            np.load(action.round_dir(1) / "round.npz") as z:
        np.testing.assert_array_equal(z["test_probs"], src["test_probs"])
        decisions = src["test_probs"][:, 1] >= 0.5  # action message: 1{q >= 1/2}
        np.testing.assert_array_equal(z["test_messages"][:, 0] == VOCAB.index("1"), decisions)
    with pytest.raises(FileNotFoundError, match="has not finished"):
        _trainer(parity_task, tmp_path / "b", first_round_from=tmp_path / "missing").run()


@pytest.mark.full  # its own fit and labelling shapes (whole training set): ~25 s cold on 2 cores
def test_paper_data_plan_trains_and_labels_every_row(parity_task, tmp_path):
    # cross_fit=False (the paper): each round fits on the whole training set and labels all of
    # it; the last round labels nothing.
    trainer = _trainer(parity_task, tmp_path, n_rounds=2, cross_fit=False)
    n = len(parity_task.train)
    assert trainer.labelled_rows(1) == slice(0, n) and trainer.labelled_rows(2) == slice(n, n)
    metrics = trainer.run()
    assert [m["fit_rows"] for m in metrics] == [[0, n], [0, n]]
    assert all(m["cross_fit"] is False for m in metrics)
    with np.load(tmp_path / "round_1" / "round.npz") as z:
        assert np.all(z["train_messages"] > 0)  # every training row got a message
