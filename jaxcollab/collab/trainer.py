"""Round-by-round collaborative training (Narrowing the Collaboration Gap, Probably, §3 and
App. E, "Conversation loop").

In round r (1-based here and in every output) agent ``(r − 1) mod K`` trains a **fresh** model
on its own view plus all earlier messages (:func:`jaxcollab.collab.data.build_prefix`), keeps
the best-validation parameters (saved with orbax), and emits one message per example
(:class:`~jaxcollab.collab.messages.MessageCodec`) onto the later rounds' training rows and
the test set. Two data plans:

* ``cross_fit=True`` *(ours)*: disjoint chunks, see :mod:`jaxcollab.collab.data`; round r
  trains on chunk r and labels chunks r+1.. (no model labels rows it trained on);
* ``cross_fit=False`` (the paper, "Narrowing the Collaboration Gap, Probably", Appendix E,
  conversation loop): every round trains on the whole annotated training set and labels all of
  it (the last ``val_examples`` rows are held out for validation in every round).

Two hooks serve other experiments without subclassing:

* ``message_transform(r, held_out, rows)`` rewrites the encoded messages before they are
  appended (the bias model of the paper's Equation 1,
  :func:`jaxcollab.collab.biased_rounds.bias_transform`, and calibrated conversations,
  :mod:`jaxcollab.collab.conversations`); it is called once for the labelled training rows and
  once for the test set (:class:`Outgoing` each), and may fit on ``held_out``: the round's
  validation rows, which no model trains on. The untransformed test messages are kept as
  ``test_posterior_messages``.
* ``first_round_from``: round 1 reads no messages, so under the same task, chunks, model,
  optimisation and key it is the same model for every protocol. A trainer given another run's
  directory takes that run's round-1 predictions (encoded with its own codec) instead of
  training the identical model again.

Run directory of one protocol::

    round_<r>/checkpoint/   orbax, best-validation parameters (absent for a shared round 1)
    round_<r>/train_state/  orbax, the state of a round stopped by SIGTERM / SIGINT (resumed,
                            then removed; :mod:`jaxcollab.scale.preempt`)
    round_<r>/round.npz     train_probs float32 [N_train, C], train_messages uint8 [N_train, w]
                            (rows of chunks <= r unused: zeros), val_probs float32 [n_val, C]
                            (the round's validation rows), test_probs float32 [N_test, C],
                            test_messages uint8 [N_test, w] (as sent),
                            test_posterior_messages uint8 [N_test, w] (before the transform),
                            test_labels int32 [N_test], test_target float32 [N_test, C]
    round_<r>/metrics.json  the round's metrics (see :func:`test_metrics`)

``round.npz`` is written last; a round whose ``round.npz`` exists is finished, and a resumed run
loads it and starts at the first unfinished round (from fresh weights, as every round does).
A driver plays the rounds itself, ``trainer.play(r)`` for r = 1, 2, … (``train/collab.py``
interleaves its conversations round by round); ``trainer.run()`` plays all of them.

Several seeds of one protocol run in lockstep with :class:`SeedTrainers`: one trainer per seed
(its own task data, key and run directory, laid out as above), each round's models trained
together in one vmapped fit; an interrupted round keeps their stacked state in the
SeedTrainers' ``train_state_round_<r>/``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.collab.data import CollabTask, build_prefix, round_chunks
from jaxcollab.collab.fit import TrainConfig, fit, precompile, predict_probs
from jaxcollab.collab.messages import MessageCodec, decide
from jaxcollab.io.checkpoints import save_params
from jaxcollab.io.phases import phase
from jaxcollab.models.gpt import GPTConfig
from jaxcollab.scale.distributed import is_main
from jaxcollab.scale.mesh import check_divisible


def required_context(task: CollabTask, codec: MessageCodec, n_rounds: int) -> int:
    """Context length the last round needs: its prefix plus the answer token."""
    return max(
        task.prefix_length(r % task.n_agents, r, codec.width) + 1 for r in range(n_rounds)
    )


def model_config(task: CollabTask, codec: MessageCodec, model: Mapping, n_rounds: int):
    """The :class:`GPTConfig` for this task/protocol.

    Args:
        model: :class:`GPTConfig` fields other than ``vocab_size`` (the task's); a missing or
            ``None`` ``block_size`` is sized to :func:`required_context`.

    Raises:
        ValueError: ``block_size`` shorter than :func:`required_context`, or a bad model field.
    """
    need = required_context(task, codec, n_rounds)
    fields = dict(model)
    block = fields.pop("block_size", None) or need
    if block < need:
        raise ValueError(
            f"context too long for the model: round {n_rounds} needs {need} tokens "
            f"(prefix + answer) but model.block_size={block}"
        )
    return GPTConfig(vocab_size=len(task.vocab), block_size=block, **fields)


#: Floor of a probability before its log in ``test_ce`` (keeps the results file finite).
CE_FLOOR = 1e-12


def test_metrics(probs: np.ndarray, labels: np.ndarray, target: np.ndarray) -> dict:
    """Per-round test metrics from class probabilities ``probs [N, C]``.

    Returns:
        ``test_mse_vs_pstar``: mean over examples and classes of ``(probs − target)²`` (for two
        classes exactly E[(p − p*)²], the paper's excess MSE, §3); ``test_accuracy``: fraction where
        the decision (:func:`~jaxcollab.collab.messages.decide`) equals the label;
        ``test_ce``: mean −ln probs[label] (nats), with the probability floored at
        ``CE_FLOOR`` so a confident miss costs at most −ln 1e-12 ≈ 27.6 nats, never inf.
    """
    picked = np.clip(probs[np.arange(len(labels)), labels], CE_FLOOR, 1.0)
    return {
        "test_mse_vs_pstar": float(np.mean((probs - target) ** 2)),
        "test_accuracy": float(np.mean(np.asarray(decide(probs)) == labels)),
        "test_ce": float(-np.mean(np.log(picked))),
    }


def _no_update(step: int, loss: float) -> None:
    """Progress callback that shows nothing."""


def _save_npz(path: Path, **arrays) -> None:
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez(tmp, **arrays)
    os.replace(tmp, path)


@dataclasses.dataclass(frozen=True)
class Outgoing:
    """One round's messages for a set of rows, before any transform.

    Attributes:
        messages: uint8 ``[N, w]`` the encoded posteriors. previous: uint8 ``[N, w]`` the
            previous round's sent messages on these rows, or None in round 1. labels: int32
            ``[N]`` the rows' true labels. fold: int8 ``[N]`` in {0, 1}, each row's calibration
            fold (:func:`calibration_folds`).
    """

    messages: np.ndarray
    previous: np.ndarray | None
    labels: np.ndarray
    fold: np.ndarray


MessageTransform = Callable[[int, Outgoing, Outgoing], np.ndarray]
"""``(round r, held_out, rows) → sent messages uint8 [N, w]`` for ``rows``; ``held_out`` holds
the round's validation rows (held out from every round's training), which a transform may fit
on."""


def calibration_folds(rows: slice, held_out: slice) -> np.ndarray:
    """Calibration folds int8 of the rows ``rows`` (absolute indices): a held-out row gets
    ``1`` in the first half of ``held_out`` and ``0`` in the second (so the fold-``k`` map,
    fitted on held-out rows of the other fold, never labels a row it was fitted on); any other
    row gets its index parity, so both maps label every split alike."""
    idx = np.arange(rows.start, rows.stop)
    first_half = idx < held_out.start + (held_out.stop - held_out.start) // 2
    inside = (idx >= held_out.start) & (idx < held_out.stop)
    return np.where(inside, first_half, idx % 2).astype(np.int8)


@dataclasses.dataclass
class RoundOutput:
    """What later rounds and the caller need from a finished round."""

    train_messages: np.ndarray
    test_messages: np.ndarray
    metrics: dict


def _load_round(rdir: Path) -> RoundOutput:
    with np.load(rdir / "round.npz") as z:
        train, test = z["train_messages"], z["test_messages"]
    return RoundOutput(train, test, json.loads((rdir / "metrics.json").read_text()))


class RoundTrainer:
    """Runs the rounds of one protocol on one task into ``run_dir`` (resumable).

    Args:
        task: the task's data. codec: the protocol's message encoding.
        model: :class:`GPTConfig` fields but ``vocab_size`` (see :func:`model_config`).
        train: per-round optimisation. n_rounds: rounds to play (paper, App. E: 5 for parity).
        run_dir: this protocol's directory. key: PRNG key for initialisation and batches
            (round r uses ``fold_in(key, r)``).
        progress: ``progress(description, total)`` context manager yielding
            ``update(step, loss)`` (e.g. :meth:`jaxcollab.io.logging.RunLogger.progress`).
        message_transform: applied to each round's encoded messages before they are appended
            (module docstring); None sends them as encoded.
        first_round_from: run directory of a trainer with the same task, model, optimisation,
            key and data plan whose round 1 is finished first; its round-1 predictions are
            reused.
        cross_fit: the data plan (module docstring): disjoint round chunks (True) or the whole
            training set every round (False, the paper).

    Raises:
        ValueError: ``n_rounds < 1``, too few training examples for the round chunks,
            ``val_examples`` not below half a chunk, ``batch_size`` not divisible by the device
            count, or a context too long for the model — all before any training.
    """

    def __init__(self, task: CollabTask, codec: MessageCodec, model: Mapping,
                 train: TrainConfig, n_rounds: int, run_dir: str | Path, key: jax.Array,
                 progress: Callable | None = None,
                 message_transform: MessageTransform | None = None,
                 first_round_from: str | Path | None = None, cross_fit: bool = True):
        if n_rounds < 1:
            raise ValueError(f"n_rounds={n_rounds} must be >= 1")
        self.task, self.codec, self.train, self.n_rounds = task, codec, train, n_rounds
        self.model_cfg = model_config(task, codec, model, n_rounds)
        self.message_transform = message_transform
        self.first_round_from = None if first_round_from is None else Path(first_round_from)
        self.cross_fit = bool(cross_fit)
        n_chunks = n_rounds if self.cross_fit else 1
        self.chunks = round_chunks(len(task.train), n_chunks) * (n_rounds // n_chunks)
        smallest = min(c.stop - c.start for c in self.chunks)
        if train.val_examples * 2 > smallest:
            raise ValueError(
                f"val_examples={train.val_examples} must be at most half of the smallest round "
                f"chunk ({smallest} examples = {len(task.train)} train / {n_chunks} chunks)"
            )
        check_divisible(train.batch_size, "batch_size")
        self.run_dir, self.key = Path(run_dir), key
        self.progress = progress or (lambda desc, total: contextlib.nullcontext(_no_update))
        self.outputs: list[RoundOutput] = []  # the rounds played or loaded so far

    def round_dir(self, r: int) -> Path:
        return self.run_dir / f"round_{r}"

    def play(self, r: int) -> dict:
        """Play round r — or load it, if its ``round.npz`` exists — after rounds 1..r−1 of this
        trainer; returns the round's metrics.

        Raises:
            ValueError: r is not the next round of this trainer.
        """
        if r != len(self.outputs) + 1 or r > self.n_rounds:
            raise ValueError(f"round {r} is not the next round ({len(self.outputs) + 1} of "
                             f"{self.n_rounds})")
        rdir = self.round_dir(r)
        self.outputs.append(_load_round(rdir) if self.done(r) else self._play(r, self.outputs))
        return self.outputs[-1].metrics

    def run(self) -> list[dict]:
        """Play every remaining round (skipping finished ones); returns each round's metrics."""
        for r in range(len(self.outputs) + 1, self.n_rounds + 1):
            self.play(r)
        return [o.metrics for o in self.outputs]

    def done(self, r: int) -> bool:
        """Whether round r is finished (its ``round.npz`` exists)."""
        return (self.round_dir(r) / "round.npz").exists()

    def precompile(self, r: int) -> None:
        """Compile round r's programs before :meth:`play` needs them (for a worker thread while
        earlier rounds play; :func:`jaxcollab.collab.fit.precompile`), unless round r is
        finished or shared (``first_round_from``), when it trains nothing."""
        if not self.done(r):
            self.compile_round(r)

    def compile_round(self, r: int, seeds: int = 0) -> None:
        """:meth:`precompile` of round r whatever its state; ``seeds``: for S seeds vmapped
        (:class:`SeedTrainers`). Nothing for a shared round 1."""
        if r == 1 and self.first_round_from is not None:
            return
        chunk, n_val = self.chunks[r - 1], self.train.val_examples
        seq_len = self.task.prefix_length((r - 1) % self.task.n_agents, r - 1, self.codec.width)
        labelled = self.labelled_rows(r)
        rows = [n_val, len(self.task.test), labelled.stop - labelled.start]
        precompile(self.model_cfg, self.train, chunk.stop - chunk.start - n_val, seq_len,
                   [n for n in rows if n > 0], seeds, self.task.class_tokens)

    def labelled_rows(self, r: int) -> slice:
        """Training rows round r labels with its messages: the later rounds' chunks
        (cross-fitting), or every row (the paper's plan); none in the last round."""
        n = len(self.task.train)
        if r == self.n_rounds:
            return slice(n, n)
        return slice(self.chunks[r - 1].stop if self.cross_fit else 0, n)

    def prefixes(self, r: int, rows: slice | None, outputs: list[RoundOutput]) -> np.ndarray:
        """Round r's prefixes for training ``rows`` (or the test set when ``rows`` is None)."""
        split = self.task.test if rows is None else self.task.train
        rows = slice(None) if rows is None else rows
        agent = (r - 1) % self.task.n_agents
        field = "test_messages" if split is self.task.test else "train_messages"
        messages = [getattr(o, field)[rows] for o in outputs[: r - 1]]
        return build_prefix(self.task, split.views[agent][rows], messages)

    def fit_rows(self, r: int, outputs: list[RoundOutput]) -> tuple[np.ndarray, np.ndarray]:
        """Round r's training prefixes int ``[n, T]`` and label token ids int ``[n]`` (its
        chunk; the last ``val_examples`` rows validate)."""
        chunk = self.chunks[r - 1]
        return (self.prefixes(r, chunk, outputs),
                self.task.class_tokens[self.task.train.labels[chunk]])

    def held_out_rows(self, r: int) -> slice:
        """Round r's validation rows: the last ``val_examples`` rows of its chunk (held out
        from training in every round: later rounds' chunks end at the same row or exclude it)."""
        chunk = self.chunks[r - 1]
        return slice(chunk.stop - self.train.val_examples, chunk.stop)

    def shared_first_round(self) -> tuple[dict, dict]:
        """Round 1 of ``first_round_from``: its training info and predictions."""
        src = self.first_round_from / "round_1"
        if not (src / "round.npz").exists():
            raise FileNotFoundError(
                f"first_round_from: {src} has not finished; run that trainer's round 1 first"
            )
        with np.load(src / "round.npz") as z:
            probs = {k: z[k] for k in ("train_probs", "val_probs", "test_probs")}
        info = json.loads((src / "metrics.json").read_text())
        keep = ("best_val_loss", "best_step", "final_train_loss")
        info = {**{k: info[k] for k in keep}, "train_seconds": 0.0, "shared_from": str(src)}
        return info, probs

    def _outgoing(self, probs: np.ndarray, previous: np.ndarray | None, labels: np.ndarray,
                  fold: np.ndarray) -> Outgoing:
        return Outgoing(np.asarray(self.codec.encode(probs), np.uint8), previous, labels, fold)

    def _play(self, r: int, outputs: list[RoundOutput]) -> RoundOutput:
        rdir = self.round_dir(r)
        shared = r == 1 and self.first_round_from is not None
        played = (self.shared_first_round() if shared else
                  fit_and_predict([self], r, [outputs], rdir / "train_state", seeds=False)[0])
        return self.finish(r, outputs, *played)

    def finish(self, r: int, outputs: list[RoundOutput], info: dict, probs: dict
               ) -> RoundOutput:
        """Encode and send round r's messages, score it, and (process 0) write its files;
        ``probs``: ``train_probs``, ``val_probs``, ``test_probs`` (:func:`fit_and_predict`)."""
        rdir = self.round_dir(r)
        rdir.mkdir(parents=True, exist_ok=True)
        train, test = self.task.train, self.task.test
        n_train = len(train)
        labelled, held = self.labelled_rows(r), self.held_out_rows(r)
        prev = outputs[-1] if outputs else None

        def previous(sent: str, rows: slice) -> np.ndarray | None:
            return None if prev is None else getattr(prev, sent)[rows]

        held_out = self._outgoing(probs["val_probs"], previous("train_messages", held),
                                  train.labels[held], calibration_folds(held, held))

        def send(rows: Outgoing) -> np.ndarray:
            if self.message_transform is None:
                return rows.messages
            return np.asarray(self.message_transform(r, held_out, rows), np.uint8)

        train_messages = np.zeros((n_train, self.codec.width), np.uint8)
        if labelled.start < n_train:
            train_messages[labelled] = send(self._outgoing(
                probs["train_probs"][labelled], previous("train_messages", labelled),
                train.labels[labelled], calibration_folds(labelled, held)))
        posterior = np.asarray(self.codec.encode(probs["test_probs"]), np.uint8)
        test_fold = (np.arange(len(test.labels)) % 2).astype(np.int8)
        test_messages = send(Outgoing(posterior, previous("test_messages", slice(None)),
                                      test.labels, test_fold))
        test_probs = probs["test_probs"]
        metrics = {
            "round": r,
            "agent": (r - 1) % self.task.n_agents,
            **test_metrics(test_probs, test.labels, test.target),
            **info,
            "fit_rows": [self.chunks[r - 1].start, self.chunks[r - 1].stop],
            "cross_fit": self.cross_fit,
            "labelled_train_rows": [labelled.start, labelled.stop],
        }
        if is_main():  # every process computed the same round; one writes it
            with phase("saving"):
                (rdir / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
                _save_npz(rdir / "round.npz", train_probs=probs["train_probs"],
                          train_messages=train_messages, val_probs=probs["val_probs"],
                          test_probs=test_probs, test_messages=test_messages,
                          test_posterior_messages=posterior, test_labels=test.labels,
                          test_target=test.target)
        return RoundOutput(train_messages, test_messages, metrics)


def fit_and_predict(trainers: Sequence[RoundTrainer], r: int,
                    outputs: Sequence[list[RoundOutput]], state_dir: Path, seeds: bool
                    ) -> list[tuple[dict, dict]]:
    """Fit round r and predict with the fitted model: ``(info for metrics, probabilities)`` per
    trainer, the probabilities float32 ``train_probs [N_train, C]`` (labelled rows; zeros
    elsewhere), ``val_probs [n_val, C]`` (:meth:`RoundTrainer.held_out_rows`) and
    ``test_probs [N_test, C]``.

    ``seeds=False``: one trainer, its own fit. ``seeds=True``: trainers that differ only in
    their task's data, key and run directory (one per seed) train together, vmapped over a
    leading seed axis (:func:`~jaxcollab.collab.fit.fit` with ``seeds``); ``train_seconds``
    is then the wall time of that shared fit. ``state_dir``: the fit's preemption checkpoint.
    Each trainer's best-validation params are saved to its ``round_<r>/checkpoint``.
    """
    lead = trainers[0]
    join = np.stack if seeds else (lambda xs: xs[0])
    pick = (lambda x, i: x[i]) if seeds else (lambda x, i: x)
    with phase("data"):
        rows = [t.fit_rows(r, o) for t, o in zip(trainers, outputs, strict=True)]
        tokens, targets = join([x[0] for x in rows]), join([x[1] for x in rows])
    keys = [jax.random.fold_in(t.key, r) for t in trainers]
    keys = jnp.stack(keys) if seeds else keys[0]
    n_val = lead.train.val_examples
    desc = f"{lead.codec.kind} round {r}/{lead.n_rounds}"
    with lead.progress(desc + (f" x {len(trainers)} seeds" if seeds else ""),
                       lead.train.steps) as update:
        result = fit(lead.model_cfg, lead.train, tokens[..., :-n_val, :], targets[..., :-n_val],
                     tokens[..., -n_val:, :], targets[..., -n_val:], keys, update,
                     checkpoint_dir=state_dir, seeds=seeds, class_tokens=lead.task.class_tokens)
    with phase("saving"):
        for i, t in enumerate(trainers):
            save_params(t.round_dir(r) / "checkpoint",
                        jax.tree.map(lambda p, i=i: pick(p, i), result.params))

    def probs(rows: slice | None) -> np.ndarray:
        with phase("data"):
            tokens = join([t.prefixes(r, rows, o) for t, o in zip(trainers, outputs,
                                                                  strict=True)])
        with phase("evaluation"):
            return predict_probs(result.graphdef, result.params, tokens,
                                 lead.task.class_tokens, lead.train.eval_batch, seeds)

    n_train, n_classes = len(lead.task.train), len(lead.task.class_chars)
    train_probs = np.zeros((len(trainers),) * seeds + (n_train, n_classes), np.float32)
    labelled = lead.labelled_rows(r)
    if labelled.start < n_train:
        train_probs[..., labelled, :] = probs(labelled)
    predicted = {"train_probs": train_probs, "val_probs": probs(lead.held_out_rows(r)),
                 "test_probs": probs(None)}
    return [({"best_val_loss": float(pick(result.best_val_loss, i)),
              "best_step": int(pick(result.best_step, i)),
              "final_train_loss": float(pick(result.final_train_loss, i)),
              "train_seconds": result.seconds},
             {k: pick(v, i) for k, v in predicted.items()})
            for i in range(len(trainers))]


class SeedTrainers:
    """The rounds of one protocol for several seeds in lockstep, each round's models trained
    together in one compiled, vmapped fit (:func:`fit_and_predict` with ``seeds``).

    Args:
        trainers: one :class:`RoundTrainer` per seed, alike in all but the task's data, the key
            and the run directory.
        run_dir: where a round stopped by SIGTERM / SIGINT keeps the seeds' stacked training
            state (``train_state_round_<r>/``, removed when the round finishes).

    A round is finished when every seed's ``round.npz`` exists; otherwise every seed plays it
    (deterministically, so a seed that had written it writes the same again).

    Raises:
        ValueError: no trainers, or trainers with different models, optimisation, rounds or
            data plans.
    """

    def __init__(self, trainers: Sequence[RoundTrainer], run_dir: str | Path):
        if not trainers:
            raise ValueError("SeedTrainers needs at least one trainer")
        lead = trainers[0]
        plan = lambda t: (t.model_cfg, t.train, t.n_rounds, t.cross_fit, t.chunks,  # noqa: E731
                          t.codec.kind, len(t.task.test), t.first_round_from is None)
        if any(plan(t) != plan(lead) for t in trainers):
            raise ValueError("seed trainers must differ only in data, key and run directory")
        self.trainers, self.run_dir = list(trainers), Path(run_dir)

    @property
    def n_rounds(self) -> int:
        return self.trainers[0].n_rounds

    def play(self, r: int) -> list[dict]:
        """Play round r for every seed (or load it, if every seed finished it) after rounds
        1..r−1; returns the round's metrics per seed.

        Raises:
            ValueError: r is not the next round.
        """
        lead = self.trainers[0]
        if r != len(lead.outputs) + 1 or r > lead.n_rounds:
            raise ValueError(f"round {r} is not the next round ({len(lead.outputs) + 1} of "
                             f"{lead.n_rounds})")
        if all(t.done(r) for t in self.trainers):
            played = [_load_round(t.round_dir(r)) for t in self.trainers]
        else:
            results = (
                [t.shared_first_round() for t in self.trainers]
                if r == 1 and lead.first_round_from is not None else
                fit_and_predict(self.trainers, r, [t.outputs for t in self.trainers],
                                self.run_dir / f"train_state_round_{r}", seeds=True))
            played = [t.finish(r, t.outputs, *res)
                      for t, res in zip(self.trainers, results, strict=True)]
        for t, p in zip(self.trainers, played, strict=True):
            t.outputs.append(p)
        return [p.metrics for p in played]

    def precompile(self, r: int) -> None:
        """Compile round r's vmapped programs ahead (:meth:`RoundTrainer.precompile`) unless
        every seed finished it."""
        if not all(t.done(r) for t in self.trainers):
            self.trainers[0].compile_round(r, len(self.trainers))

    def run(self) -> list[list[dict]]:
        """Play every remaining round for every seed; returns each round's metrics per seed."""
        for r in range(len(self.trainers[0].outputs) + 1, self.n_rounds + 1):
            self.play(r)
        return [[t.outputs[r].metrics for t in self.trainers] for r in range(self.n_rounds)]
