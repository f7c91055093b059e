"""Round-by-round collaborative training, the one driver behind ``train/collab.py`` (Narrowing the
Collaboration Gap, Probably, §3, §5 and App. E, "Conversation loop"); the commands are in
``train/collab.py``'s docstring.

Read :func:`run` top to bottom: it builds the task's data, the experiment's conversations and
then plays the rounds — in round r every conversation trains its round-r speaker, a fresh model
on its own view plus all earlier messages (:class:`jaxcollab.collab.trainer.RoundTrainer`) —
and scores them. An experiment is a configuration of that loop: which conversations it holds
and what it writes as rounds finish. The config (``configs/collab.yaml``, schema
:class:`jaxcollab.collab.config.Collab`) picks one: the calibration experiment, or the task's
own protocol experiment (its plug-in's :attr:`~jaxcollab.core.family.RoundTask.experiment`):

* **protocols** (``task=parity``, the default; the parity family's experiment,
  :class:`jaxcollab.agents.parity.experiment.Protocols`): one conversation per protocol in
  ``protocols`` (or ``protocol.name``), all from the same key so that round 1 (no messages yet)
  is trained once and the curves differ by the messages alone; ``seeds=[…]`` trains every
  seed's models together (vmapped, :class:`~jaxcollab.collab.trainer.SeedTrainers`);
  ``separation`` adds the Figure 3 checks.
* **maze protocols** (``task=maze``; the maze family's experiment,
  :class:`jaxcollab.agents.maze.experiment.Mazes`): the same conversations scored by maze
  success, plus one-round baselines — a solo agent on the full maze and agent 1 alone on its
  half (agent 0 alone *is* round 1) — trained like one round on as many mazes as a round's
  chunk, and the exact Bayes first move of each half view (``bayes_mazes``).
* **calibration** (``calibration`` and ``bias.conditions`` set): the ``unbiased`` conversation
  and, per bias condition, ``biased_raw`` / ``biased_self`` / ``biased_conversation``
  (:mod:`jaxcollab.collab.conversations`), then post-hoc treatments; the task's plug-in adds
  its exact curves (:attr:`~jaxcollab.core.family.RoundTask.theory`, parity's) and its own
  score and baselines (:attr:`~jaxcollab.core.family.RoundTask.scores`, the maze's).

Writes into ``out_dir`` ``results.json`` (updated as each round ends), the plot, and each
conversation's ``round_<r>/`` directories (checkpoint, messages, test predictions). Rerunning
with the same ``out_dir`` resumes at the first unfinished round (a round stopped by SIGTERM /
SIGINT resumes from its saved training state); a changed :data:`FROZEN` key is refused, naming
the keys. A signal stops the run at the next safe point, within moments while data are built or
a training chunk compiles (:func:`jaxcollab.scale.preempt.interruptible`), else after the
training chunk or round in progress, and the process exits with status 128 + the signal.

``results.json`` (besides ``config``, ``run``, ``wall_seconds``) holds ``timing_seconds``,
where the time went, also printed at the end (:meth:`jaxcollab.io.phases.Phases.summary`:
``wall``, ``cpu``, and per phase — ``data``, ``compile``, ``training steps``, ``evaluation``
(validation and predictions), ``saving``, ``plots``, ``other`` — its wall seconds under
``phases`` and its CPU seconds, compiles included, under ``phases_cpu``; ``compile_ahead``: the
seconds of the compiles made ahead, overlapping the phases — the loop compiles each round's
programs on a worker thread in play order, :class:`CompileAhead`, and ``compile`` is what it
still waits for), and:

* protocols: ``theory`` (exact curves by round k = 0..K,
  :func:`jaxcollab.agents.parity.theory.parity_curves`); ``protocols.<name>``: lists by round —
  ``rounds`` (1-based), ``test_mse_vs_pstar`` (E[(p − p*)²], probability²), ``test_accuracy``
  (fraction), ``test_ce`` (nats), ``best_val_loss`` (nats), ``train_seconds``,
  ``theory_mse_vs_pstar`` — and ``per_round`` (every metric of each round); ``separation``
  (the checks, with ``passed``). With ``seeds``: ``protocols.<name>.seeds`` and each listed
  metric as ``{per_seed [seeds][rounds], mean, std, min, max}``
  (:func:`jaxcollab.io.seeds.spread`; ``train_seconds`` is the shared fit's), ``per_round`` by
  round a list by seed, separation on the mean curves; plot ``seeds.png``, else
  ``separation.png``; each seed's rounds in ``<protocol>/seed_<s>/``.
* mazes: ``dataset`` (mazes and examples per split, generator acceptance rate);
  ``protocols.<name>``: ``rounds``, ``maze_success`` (fraction of test mazes whose every step
  is decided right after that round; :func:`jaxcollab.agents.maze.task.maze_scores`),
  ``step_accuracy``, ``train_seconds``; ``baselines.solo`` and
  ``baselines.half_view.agent0|agent1``: ``maze_success``, ``step_accuracy``;
  ``bayes_first_move`` (per agent, over the first ``bayes_mazes`` test mazes, the first-move
  accuracy of the exact Bayes posterior and of the trained half-view model); plot
  ``maze_success.png``.
* calibration: ``rounds``, ``cross_fit``; ``conditions.<name>``: ``beta``, ``gamma``,
  ``expected_conversation_weights`` ``[1/β, −γ/β]``, ``treatments.<treatment>.{accuracy, ece,
  cce}`` plus ``maze_success`` (mazes) or ``mse_vs_pstar`` (parity) by round,
  ``calibrators.<treatment>.round_<r>`` (per fold: ``weights``, class-1.. ``bias``,
  ``converged``), on parity ``ideal_decoder.<treatment>`` (the exact ideal-decoder curve,
  :func:`jaxcollab.agents.parity.ideal.conversation_mse`); ``calibrators_converged``;
  ``theory_mse_vs_pstar`` (parity); ``runs.<name>`` (each conversation's trainer metrics by
  round); plot ``mse.png`` (parity) or ``success.png`` (mazes), one panel per condition.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path

import jax
import numpy as np
from omegaconf import DictConfig, OmegaConf

import jaxcollab.collab.config  # noqa: F401  (registers the schema)
from jaxcollab.collab import conversations as conv
from jaxcollab.collab import messages
from jaxcollab.collab.data import check_task, round_task
from jaxcollab.collab.data import task_data as build_task
from jaxcollab.collab.fit import TrainConfig
from jaxcollab.collab.trainer import RoundTrainer, required_context
from jaxcollab.core.devices import use_cpu_devices, use_xla_cpu_opt_level
from jaxcollab.core.errors import ConfigValueError
from jaxcollab.io import plots
from jaxcollab.io.phases import Phases, ahead, phase
from jaxcollab.io.results import ResultsFile
from jaxcollab.io.run import start_run
from jaxcollab.scale import preempt
from jaxcollab.scale.distributed import is_main

#: Config keys a resumed run must share with the run that wrote ``results.json``.
FROZEN = ("seed", "seeds", "n_rounds", "task", "model", "train", "protocol", "protocols", "data",
          "bias", "calibration")


def protocol_names(cfg: DictConfig) -> list[str]:
    """The protocols to run: ``protocols`` if set, else ``protocol.name``."""
    return list(cfg.protocols) if cfg.protocols else [cfg.protocol.name]


def task_data(cfg: DictConfig, key: jax.Array):
    """``(task, source)``: the task's data and what it was made from (on mazes ``(train,
    test, stats)`` of the maze split; None on parity): its plug-in's builder
    (:func:`jaxcollab.collab.data.task_data`)."""
    return build_task(OmegaConf.to_container(cfg.task), key)


def check_config(cfg: DictConfig) -> None:
    """Checks that need the task's data, before the run directory gets a file: the task's own
    (:func:`jaxcollab.collab.data.check_task`: the maze sampler must reach its mazes), and a
    set ``model.block_size`` must hold the last round's prefix and answer
    (:func:`jaxcollab.collab.trainer.required_context`, measured on a few examples of the task).

    Raises:
        ConfigValueError: naming the key and the smallest valid value.
    """
    check_task(OmegaConf.to_container(cfg.task))
    if cfg.model.block_size is None:
        return
    few = OmegaConf.merge(cfg, {"task": {"n_examples": 64}})
    with phase("data"):
        task, _ = task_data(few, jax.random.PRNGKey(0))
    kinds = ["probability"] if cfg.calibration is not None else protocol_names(cfg)
    need = max(required_context(task, messages.MessageCodec(k, task.vocab, task.class_chars,
                                                            cfg.protocol.digits), cfg.n_rounds)
               for k in kinds)
    if cfg.model.block_size < need:
        raise ConfigValueError("model.block_size", cfg.model.block_size,
                               f"null (sized to the task) or an integer >= {need}, the tokens "
                               f"round {cfg.n_rounds} needs (its prefix and the answer)")


def trainer(cfg: DictConfig, task, kind: str, run_dir: Path, key: jax.Array, progress,
            n_rounds: int | None = None, **hooks) -> RoundTrainer:
    """One conversation of ``kind`` messages over ``task`` (``n_rounds`` default: the run's)."""
    codec = messages.MessageCodec(kind, task.vocab, task.class_chars, cfg.protocol.digits)
    return RoundTrainer(task, codec, OmegaConf.to_container(cfg.model), TrainConfig(**cfg.train),
                        n_rounds or cfg.n_rounds, run_dir, key, progress=progress,
                        cross_fit=cfg.data.cross_fit, **hooks)


class Calibration:
    """The calibration experiment (paper §5 R2, Figure 5): one conversation per treatment and
    bias condition, scored by round after the last round."""

    def __init__(self, cfg: DictConfig, out: Path, results: ResultsFile, logger):
        self.cfg, self.out, self.results, self.logger = cfg, out, results, logger
        self.task, self.source = task_data(cfg, jax.random.split(jax.random.PRNGKey(cfg.seed))[0])
        plugin = round_task({"name": cfg.task.name})
        self.scores = plugin.scores  # the task's own score (mazes), else mse_vs_pstar
        self.conditions = conv.check_conditions(OmegaConf.to_container(cfg.bias.conditions))
        self.done: dict[str, list[dict]] = {}
        n_rounds = cfg.n_rounds
        results.set(("rounds",), list(range(1, n_rounds + 1)))
        results.set(("cross_fit",), bool(cfg.data.cross_fit))
        results.data.setdefault("calibrators_converged", True)
        for cond, (beta, gamma) in self.conditions.items():
            results.set(("conditions", cond, "beta"), beta)
            results.set(("conditions", cond, "gamma"), gamma)
            results.set(("conditions", cond, "expected_conversation_weights"),
                        [1 / beta, -gamma / beta])
        if plugin.theory is not None:  # the exact curves (parity's ideal decoders)
            exact = plugin.theory.calibration(OmegaConf.to_container(cfg.task), n_rounds,
                                              self.conditions)
            results.set(("theory_mse_vs_pstar",), exact["theory_mse_vs_pstar"])
            for cond, entry in exact["conditions"].items():
                for key, value in entry.items():
                    results.set(("conditions", cond, key), value)

    def conversations(self) -> dict:
        codec = messages.MessageCodec("probability", self.task.vocab, self.task.class_chars,
                                      self.cfg.protocol.digits)
        common = {"task": self.task, "codec": codec,
                  "model": OmegaConf.to_container(self.cfg.model),
                  "train": TrainConfig(**self.cfg.train), "n_rounds": self.cfg.n_rounds,
                  # this experiment's training key (its measured figures were made with it)
                  "key": jax.random.fold_in(jax.random.PRNGKey(self.cfg.seed), 1),
                  "cross_fit": bool(self.cfg.data.cross_fit), "progress": self.logger.progress}
        self.runs = conv.make_trainers(common, self.out, self.conditions,
                                       self.cfg.calibration.newton_steps, self._fit_log)
        return self.runs

    def _fit_log(self, name: str):
        """Records each round's fitted calibrators of conversation ``name``."""
        cond, treatment = name.split("/")

        def log(r: int, cals) -> None:
            entry = {"weights": np.asarray(cals.weights).tolist(),
                     "bias": np.asarray(cals.bias[:, 1:]).tolist(),
                     "converged": np.asarray(cals.converged).tolist()}
            self.results.set(("conditions", cond, "calibrators", treatment, f"round_{r}"), entry)
            if not all(entry["converged"]):
                self.results.set(("calibrators_converged",), False)
                print(f"WARNING: {name} round {r}: a calibrator fit did not converge")

        return log

    def record(self, name: str, metrics: dict) -> None:
        self.done.setdefault(name, []).append(metrics)
        self.results.set(("runs", name), self.done[name])
        print(f"{name} round {metrics['round']}: speaker posterior "
              f"test_mse_vs_pstar={metrics['test_mse_vs_pstar']:.5g}", flush=True)

    def finish(self) -> None:
        test, cal = self.task.test, self.cfg.calibration
        for cond in self.conditions:
            scores = conv.condition_treatments(self.runs, cond, test.labels, test.target,
                                               cal.n_bins, self.scores, self.source,
                                               cal.newton_steps)
            self.results.set(("conditions", cond, "treatments"), scores)
        metric = "mse_vs_pstar" if self.scores is None else self.scores.name
        data = self.results.data
        panels = {c: {t: m[metric] for t, m in d["treatments"].items()}
                  for c, d in data["conditions"].items()}
        if is_main():
            if self.scores is None:
                plots.plot_by_condition(self.out / "mse.png", data["rounds"], panels,
                                        "E[(m_k − p*)²]", True)
            else:
                plots.plot_by_condition(self.out / "success.png", data["rounds"], panels,
                                        self.scores.label, False)
        for cond, d in data["conditions"].items():
            print(f"{cond} (β={d['beta']:g}, γ={d['gamma']:g}): {metric} by round")
            for t, m in d["treatments"].items():
                print(f"  {t:>22}: " + " ".join(f"{v:.5f}" for v in m[metric]))


class CompileAhead:
    """Compiles the round loop's programs ahead, in the order it plays them, on one worker
    thread, so that each round's compiles overlap the rounds before it instead of holding up the
    loop: the run's ``timing_seconds`` counts them as ``compile_ahead``
    (:func:`jaxcollab.io.phases.ahead`), and the loop's waits for them as ``compile``. The
    compiled programs are those the call would compile, so the results are the same.

    Args:
        tasks: one callable per play of the loop (e.g. a trainer's ``precompile(r)``).

    On leaving the ``with`` block the worker stops after the task in progress; left by an
    error (a signal's :class:`~jaxcollab.scale.preempt.Preempted` included) the process exits
    without waiting for that task (:func:`jaxcollab.scale.preempt.exit_past`).
    """

    def __init__(self, tasks: list[Callable[[], None]]):
        self.tasks = tasks
        self.finished = [threading.Event() for _ in tasks]
        self.failed: tuple[int, Exception] | None = None  # a task's error: none runs after it
        self.stopping = False
        self.worker = threading.Thread(target=self._work, name="jaxcollab-compile-ahead",
                                       daemon=True)

    def _work(self) -> None:
        with ahead():
            for i, task in enumerate(self.tasks):
                if self.stopping:
                    return
                try:
                    task()
                except Exception as e:  # noqa: BLE001  (re-raised by wait, on the loop's thread)
                    self.failed = (i, e)
                    for done in self.finished[i:]:
                        done.set()
                    return
                self.finished[i].set()

    def __enter__(self) -> CompileAhead:
        self.worker.start()
        return self

    def __exit__(self, kind, error, traceback) -> None:
        self.stopping = True
        if error is not None:
            code = getattr(error, "code", None)
            preempt.exit_past(self.worker, code if isinstance(code, int) else 1)

    def wait(self, i: int, saved: str) -> None:
        """Wait until task ``i`` has run (a SIGTERM / SIGINT stops the wait,
        :func:`jaxcollab.scale.preempt.interruptible`, saying ``saved`` was kept).

        Raises:
            the error of task ``i`` or of one before it (the tasks after a failed one do not
            run); :class:`jaxcollab.scale.preempt.Preempted` on a signal.
        """
        with phase("compile"):
            preempt.interruptible(self.finished[i].wait, saved=saved)
        if self.failed is not None and self.failed[0] <= i:
            raise self.failed[1]


def experiment(cfg: DictConfig):
    """The experiment the config describes (module docstring): the calibration experiment, else
    the task's own (:attr:`jaxcollab.core.family.RoundTask.experiment`)."""
    if cfg.calibration is not None:
        return Calibration
    return round_task({"name": cfg.task.name}).experiment


def run(cfg: DictConfig) -> dict:
    """The whole job on a composed config; returns the results (also in ``results.json``)."""
    with Phases() as spent:  # where the time goes
        results, out = _run(cfg)
    results.set(("wall_seconds",), spent.wall_seconds)
    results.set(("timing_seconds",), spent.summary())
    print(spent.line())
    print(f"wrote {out / 'results.json'}")
    return results.data


def run_process(cfg: DictConfig) -> dict:
    """:func:`run` as a command line's own process (``train/collab.py``, ``train/maze.py``,
    ``train/calibration.py``): first the XLA:CPU devices ``cpu_devices`` asks for and the
    optimisation level ``xla_cpu_opt_level``, before JAX starts
    (:func:`jaxcollab.core.devices.use_cpu_devices`, :func:`~jaxcollab.core.devices.
    use_xla_cpu_opt_level`: process-wide settings).

    Raises:
        ConfigValueError: a bad ``cpu_devices`` or ``xla_cpu_opt_level``, before anything else.
    """
    for key, use, *args in (("cpu_devices", use_cpu_devices, cfg.train.batch_size),
                            ("xla_cpu_opt_level", use_xla_cpu_opt_level)):
        try:
            use(cfg[key], *args)
        except ValueError as e:
            raise ConfigValueError(key, cfg[key], str(e)) from None
    return run(cfg)


def _run(cfg: DictConfig) -> tuple[ResultsFile, Path]:
    job = start_run(cfg, frozen=FROZEN, check=check_config)  # schema, ranges, cross-key
    # checks (task shapes included), resume guard: all before the first file
    cfg, out, results = job.cfg, job.out, job.results
    with preempt.guard():  # SIGTERM / SIGINT: stop at the next safe point, keeping every round
        # data, and what it records up front (on a worker thread: a signal need not wait)
        with phase("data"):
            exp = preempt.interruptible(experiment(cfg), cfg, out, results, job.logger,
                                        saved="nothing yet (no round had finished)")
        conversations = exp.conversations()  # name -> trainer, validated before any training

        # The round loop: in round r every conversation trains (or, resumed, loads) its round-r
        # speaker on its view plus the messages of rounds < r, then sends its messages.
        plays = [(r, name, conversation) for r in range(1, cfg.n_rounds + 1)
                 for name, conversation in conversations.items()
                 if r <= conversation.n_rounds]  # the maze baselines play one round
        saved = f"every finished round in {out}"
        with CompileAhead([partial(c.precompile, r) for r, _, c in plays]) as ahead:
            for i, (r, name, conversation) in enumerate(plays):
                ahead.wait(i, saved)
                exp.record(name, conversation.play(r))
                if signum := preempt.requested():
                    preempt.stop(signum, saved)

        exp.finish()
    job.finish()
    return results, out
