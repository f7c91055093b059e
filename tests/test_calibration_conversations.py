"""Paper R2 as conversations: treatments, calibrated messages fed forward, exact theory, CLI."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcollab.agents.parity.ideal import conversation_mse
from jaxcollab.collab import conversations as conv
from jaxcollab.collab.bias import safe_log
from jaxcollab.collab.biased_rounds import bias_messages
from jaxcollab.collab.data import make_task
from jaxcollab.collab.fit import TrainConfig
from jaxcollab.collab.messages import MessageCodec
from jaxcollab.collab.trainer import _load_round, calibration_folds
from jaxcollab.envs.parity import make_alphas

TINY = {"n_layer": 1, "n_head": 1, "n_embd": 8}
FAST = TrainConfig(steps=3, batch_size=32, lr=1e-3, min_lr=1e-4, warmup_steps=1, eval_every=3,
                   val_examples=32, eval_batch=512)
PARITY = {"name": "parity", "alphas": [0.2, 0.15, 0.1, 0.02], "n_bits": 8, "alpha_sum": 0.49,
          "split": "alternate", "n_examples": 1000, "test_fraction": 0.2, "view": "own"}
CONDITIONS = {"global": (2.0, 0.0), "global_anchoring": (2.0, 1.0)}


def test_exact_theory_conversation_recovers_unbiased_and_self_does_not_under_anchoring():
    alphas = make_alphas()
    unbiased = [(alphas[k:] ** 2).sum() for k in range(1, 5)]
    for beta, gamma in [(2.0, 1.0), (1.0, 0.5)]:
        conversation = conversation_mse(alphas, 4, beta, gamma, "conversation")
        self_cal = conversation_mse(alphas, 4, beta, gamma, "self")
        np.testing.assert_allclose(conversation, unbiased, rtol=1e-4)
        assert np.all(np.asarray(self_cal[1:]) > np.asarray(conversation[1:]) + 1e-4)
    # β = 1, γ = 0.5, round 3: self 0.00166 (ideal.py's note), conversation 0.00042 (REFERENCE)
    assert float(conversation_mse(alphas, 4, 1.0, 0.5, "self")[2]) == pytest.approx(1.662e-3,
                                                                                    rel=1e-3)
    # Without anchoring the self calibrator is the exact inverse too.
    np.testing.assert_allclose(conversation_mse(alphas, 4, 2.0, 0.0, "self"), unbiased,
                               rtol=1e-4)
    # Raw reports anchor on the previous report either way: REFERENCE's raw row.
    np.testing.assert_allclose(conversation_mse(alphas, 4, 1.0, 0.5, None),
                               [0.03292, 0.01661, 0.00882, 0.00854], atol=6e-6)


@pytest.mark.parametrize("conditions,message", [
    ({"global": {"beta": 2, "gamma": 0.5}}, "global.gamma=0.5; expected 0"),
    ({"global_anchoring": {"beta": 2, "gamma": 0}}, "global_anchoring.gamma=0.0; expected > 0"),
    ({"local": {"beta": 2, "gamma": 0}}, "unknown bias condition 'local'"),
    ({"global": {"beta": -1, "gamma": 0}}, "bias.beta=-1.0"),
    ({}, "bias.conditions is empty"),
])
def test_bad_conditions_are_named(conditions, message):
    with pytest.raises(ValueError, match=message):
        conv.check_conditions(conditions)


def test_fold_calibration_never_labels_rows_it_was_fitted_on():
    key = jax.random.PRNGKey(0)
    q = jax.random.uniform(key, (400,), minval=0.05, maxval=0.95)
    labels = np.asarray(jax.random.bernoulli(jax.random.PRNGKey(1), q), np.int32)
    log_r = safe_log(jnp.stack([1 - q, q], -1) ** 2)  # over-confident reports
    log_prev = jnp.full_like(log_r, -np.log(2.0))
    base, cals = conv.fold_calibrate("self", log_r, log_prev, labels)
    assert cals.weights.shape == (2, 1) and bool(np.all(cals.converged))
    flipped = labels.copy()
    flipped[200:] = 1 - flipped[200:]  # change the second half's labels only
    again, _ = conv.fold_calibrate("self", log_r, log_prev, flipped)
    np.testing.assert_array_equal(np.asarray(again[200:]), np.asarray(base[200:]))
    assert not np.allclose(np.asarray(again[:200]), np.asarray(base[:200]))
    with pytest.raises(ValueError, match="at least 4 rows"):
        conv.fold_calibrate("self", log_r[:3], log_prev[:3], labels[:3])


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """Every conversation of both conditions on a tiny parity task, 2 rounds."""
    out = tmp_path_factory.mktemp("r2")
    task = make_task(PARITY, jax.random.PRNGKey(0))
    codec = MessageCodec("probability", task.vocab, task.class_chars)
    common = {"task": task, "codec": codec, "model": TINY, "train": FAST, "n_rounds": 2,
              "key": jax.random.PRNGKey(3), "cross_fit": False}
    fits = []
    runs = conv.make_trainers(common, out, CONDITIONS,
                              on_fit=lambda name: lambda r, c: fits.append((name, r, c)))
    for trainer in runs.values():
        trainer.run()
    return task, codec, runs, fits


def test_every_treatment_is_its_own_conversation_sharing_round_one(tiny):
    task, _, runs, fits = tiny
    names = ["unbiased"] + [f"{c}/{t}" for c in CONDITIONS
                            for t in ("biased_conversation", "biased_self", "biased_raw")]
    assert list(runs) == names
    for name in names[1:]:
        assert json.loads((runs[name].round_dir(1) / "metrics.json").read_text())[
            "shared_from"] == str(runs["unbiased"].round_dir(1))
    # calibrated runs fit per round on the held-out rows, once per call (labelled training
    # rows and test set in round 1; test set only in round 2, the last): the same fit each time
    for name in ("global/biased_self", "global_anchoring/biased_conversation"):
        mine = [(r, c) for m, r, c in fits if m == name]
        assert [r for r, _ in mine] == [1, 1, 2]
        np.testing.assert_array_equal(mine[0][1].weights, mine[1][1].weights)
    for cond in CONDITIONS:
        scores = conv.condition_treatments(runs, cond, task.test.labels, task.test.target, 10)
        assert set(scores) == {"unbiased", "biased_raw", "biased_self", "biased_conversation",
                               "posthoc_self", "posthoc_conversation"}
        for m in scores.values():
            assert set(m) == {"accuracy", "ece", "cce", "mse_vs_pstar"}
            assert all(len(v) == 2 and np.all(np.isfinite(v)) for v in m.values())


@pytest.mark.parametrize("name,kind", [("global_anchoring/biased_conversation", "conversation"),
                                       ("global_anchoring/biased_self", "self"),
                                       ("global_anchoring/biased_raw", None)])
def test_next_round_trains_on_and_reads_the_calibrated_messages(tiny, name, kind):
    # Rebuild round 1's sent messages from its saved predictions (bias, then cross-fitted
    # calibration with the rows' labels) and check they are what round 2 read.
    task, codec, runs, _ = tiny
    trainer = runs[name]
    beta, gamma = CONDITIONS["global_anchoring"]
    with np.load(trainer.round_dir(1) / "round.npz") as z:
        saved = {k: z[k] for k in z.files}
    held = trainer.held_out_rows(1)
    log = lambda m: safe_log(jnp.asarray(codec.decode(m)))  # noqa: E731
    uniform = lambda n: jnp.full((n, 2), -np.log(2.0))  # noqa: E731  r_0
    if kind is not None:  # fitted on the held-out rows only, never on the test set
        held_reports = bias_messages(codec, codec.encode(saved["val_probs"]), None, beta, gamma)
        cals = conv.fit_folds(kind, log(held_reports), uniform(len(held_reports)),
                              task.train.labels[held], calibration_folds(held, held))
    n_train, n_test = len(task.train), len(task.test)
    for split, probs, fold in (
            ("train", saved["train_probs"], calibration_folds(slice(0, n_train), held)),
            ("test", saved["test_probs"], np.arange(n_test) % 2)):
        expected = bias_messages(codec, codec.encode(probs), None, beta, gamma)
        if kind is not None:
            log_c = conv.apply_folds(kind, cals, log(expected), uniform(len(expected)), fold)
            expected = np.asarray(codec.encode(jnp.exp(log_c)), np.uint8)
        np.testing.assert_array_equal(saved[f"{split}_messages"], expected)
    # the same model on the same rows, predicted in batches of another size: XLA:CPU's matmul
    # rounding may differ in the last bit (5.96e-8 seen on this CPU), so not bit-exact
    np.testing.assert_allclose(saved["val_probs"], saved["train_probs"][held], rtol=0, atol=1e-6)
    if kind is not None:  # calibration changed what was sent
        raw = bias_messages(codec, saved["test_posterior_messages"], None, beta, gamma)
        assert not np.array_equal(saved["test_messages"], raw)
    # Round 2's prefixes (training rows and test set) carry exactly those messages.
    out1 = _load_round(trainer.round_dir(1))
    width = task.test.views[1].shape[1]
    for rows, sent in ((slice(0, len(task.train)), saved["train_messages"]),
                       (None, saved["test_messages"])):
        prefix = trainer.prefixes(2, rows, [out1])
        np.testing.assert_array_equal(prefix[:, width + 1: width + 1 + codec.width], sent)


@pytest.mark.slow
@pytest.mark.parametrize("experiment", ["parity_calibration", "maze_calibration"])
def test_cli_tiny_writes_the_issue_layout(tmp_path, cli, experiment):
    cli("train/calibration.py", f"experiment={experiment}", "preset=cpu",
        "task.n_examples=6000", "train.steps=10", "train.warmup_steps=2",
        "train.eval_every=5", "train.val_examples=128", "model.n_layer=1", "model.n_embd=16",
        "n_rounds=2", f"out_dir={tmp_path}")
    results = json.loads((tmp_path / "results.json").read_text())
    metric = "mse_vs_pstar" if experiment == "parity_calibration" else "maze_success"
    expected = set(conv.TREATMENTS) | set(conv.POSTHOC)
    if metric == "maze_success":
        expected.add(conv.NAIVE)
    assert results["rounds"] == [1, 2] and results["cross_fit"] is False
    assert set(results["conditions"]) == {"global", "global_anchoring"}
    for cond, gamma in (("global", 0.0), ("global_anchoring", 1.0)):
        data = results["conditions"][cond]
        assert (data["beta"], data["gamma"]) == (2.0, gamma)
        assert set(data["treatments"]) == expected
        for m in data["treatments"].values():
            assert set(m) == {"accuracy", "ece", "cce", metric}
            assert all(len(v) == 2 for v in m.values())
        assert all(data["calibrators"]["biased_conversation"]["round_2"]["converged"])
    assert results["calibrators_converged"] is True
    png = "mse.png" if metric == "mse_vs_pstar" else "success.png"
    assert (tmp_path / png).stat().st_size > 10_000
