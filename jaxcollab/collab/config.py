"""The training entry point's config schema (``configs/collab.yaml``, ``train/collab.py``).

Defaults live here, once: the YAML files under ``configs/`` name a schema and override only what
a task, preset or experiment changes (``python train/collab.py --cfg job`` prints the composed
result). Hydra refuses a wrong type, a choice outside its enum or an unknown key while
composing; :func:`jaxcollab.io.run.validate` then checks each field's bounds and
:meth:`Collab.check` the cross-key rules.

A run is the protocol conversations of its task, plus at most one experiment block:
``separation`` (:class:`Separation`, parity) or ``calibration`` with its ``bias`` conditions
(:class:`Calibration`, :class:`BiasConditions`); on mazes ``bayes_mazes`` sets the exact-Bayes
comparison of the maze task's baselines.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from jaxcollab.collab.conversations import check_conditions
from jaxcollab.collab.data import round_chunks, round_task
from jaxcollab.collab.fit import TrainConfig
from jaxcollab.core.config import SEED_LIMIT, bounded, count, seed_field
from jaxcollab.core.devices import check_xla_cpu_opt_level, cpu_device_count
from jaxcollab.core.errors import ConfigValueError
from jaxcollab.core.registry import family, family_names
from jaxcollab.io.schema import Bias, Calibration, Logger
from jaxcollab.models.gpt import GPTConfig


class Protocol(StrEnum):
    action = "action"
    probability = "probability"


class Dtype(StrEnum):
    auto = "auto"
    float32 = "float32"
    bfloat16 = "bfloat16"


class Attention(StrEnum):
    auto = "auto"
    xla = "xla"
    cudnn = "cudnn"


class Activation(StrEnum):
    gelu = "gelu"
    relu = "relu"


@dataclass
class Model:
    """nanoGPT-style transformer shape: :class:`jaxcollab.models.gpt.GPTConfig`'s fields and
    defaults (the paper's 4x6x240), minus ``vocab_size`` (the task's); ``block_size`` None
    sizes the context to the last round's prefix."""

    n_layer: int = count(GPTConfig.n_layer)
    n_head: int = count(GPTConfig.n_head)
    n_embd: int = count(GPTConfig.n_embd)
    dropout: float = bounded(GPTConfig.dropout, ge=0.0, lt=1.0)
    bias: bool = GPTConfig.bias
    dtype: Dtype = Dtype(GPTConfig.dtype)
    attention: Attention = Attention(GPTConfig.attention)
    activation: Activation = Activation(GPTConfig.activation)
    block_size: int | None = count(None)

    def check(self) -> None:
        if self.n_embd % self.n_head:
            raise ConfigValueError("model.n_embd", self.n_embd,
                                   f"a multiple of model.n_head={self.n_head}")


#: :class:`jaxcollab.collab.fit.TrainConfig`'s ranges, per key so that a bad value is named.
TRAIN_BOUNDS = {**dict.fromkeys(("steps", "batch_size", "eval_every", "val_examples",
                                 "eval_batch"), {"ge": 1}),
                "lr": {"gt": 0.0}, "min_lr": {"gt": 0.0}, "warmup_steps": {"ge": 0}}


def _train_check(self) -> None:
    """:class:`~jaxcollab.collab.fit.TrainConfig`'s cross-field rules, naming the key."""
    if self.min_lr > self.lr:
        raise ConfigValueError("train.min_lr", self.min_lr, f"a number <= train.lr={self.lr}")
    if self.warmup_steps > self.steps:
        raise ConfigValueError("train.warmup_steps", self.warmup_steps,
                               f"an integer <= train.steps={self.steps}")


#: :class:`jaxcollab.collab.fit.TrainConfig` as a mutable schema (its fields and defaults, the
#: paper's optimisation; a frozen dataclass would make the composed node read-only).
Train = dataclasses.make_dataclass(
    "Train",
    [(f.name, f.type, bounded(f.default, **TRAIN_BOUNDS.get(f.name, {})))
     for f in dataclasses.fields(TrainConfig)],
    namespace={"check": _train_check, "__doc__": "Per-round optimisation."},
)


@dataclass
class MessageProtocol:
    """What each round's speaker sends (:class:`jaxcollab.collab.messages.MessageCodec`)."""

    name: Protocol = Protocol.probability
    digits: int = bounded(2, ge=1, le=6)  # probability messages: decimal digits per class


@dataclass
class Data:
    """The round trainer's data plan: ``cross_fit`` true = one disjoint chunk per round, no
    model labels rows it trained on (ours); false = every round trains on and labels the whole
    training set (the paper, App. E)."""

    cross_fit: bool = True


@dataclass
class Separation:
    """The protocols experiment's separation checks (the paper's Figure 3, set by the parity
    experiment, whose plug-in checks their rounds): probability MSE vs p* below
    ``prob_below`` at ``round``, action MSE above ``action_above`` at every ``action_rounds``,
    and action MSE at least ``min_ratio`` times the probability MSE at every ``ratio_rounds``
    (from round 3 on, where the paper's §3 theory separates the two by orders of magnitude;
    the 10x bar is ours)."""

    round: int = count(3)
    prob_below: float = bounded(0.01, gt=0.0)
    action_rounds: list[int] = field(default_factory=lambda: [3, 5])
    action_above: float = bounded(0.02, ge=0.0)
    ratio_rounds: list[int] = field(default_factory=lambda: [3, 4, 5])
    min_ratio: float = bounded(10.0, gt=0.0)


@dataclass
class BiasCondition:
    """One bias condition of the calibration experiment (``bias.conditions.<name>``)."""

    beta: float = bounded(2.0, gt=0.0)
    gamma: float = 0.0


@dataclass
class BiasConditions(Bias):
    """The bias model (:mod:`jaxcollab.collab.bias`) of the calibration experiment, which runs
    every condition in ``conditions`` (name -> β, γ)."""

    conditions: dict[str, BiasCondition] | None = None


@dataclass
class Collab:
    """``configs/collab.yaml``: every run of ``train/collab.py``."""

    seed: int = seed_field()           # data, initialisation and batches
    seeds: list[int] | None = None     # these seeds at once (vmapped), instead of seed
    task: Any = MISSING                # a TaskConfig: the task group's schema (task/<name>)
    model: Model = field(default_factory=Model)
    protocol: MessageProtocol = field(default_factory=MessageProtocol)
    n_rounds: int = count("${task.n_rounds}")
    protocols: list[Protocol] | None = None  # the protocols to run; None runs `protocol` only
    experiment_name: str | None = None
    separation: Separation | None = None
    bayes_mazes: int = count(0, 0)     # mazes: test mazes of the exact-Bayes first-move check
    bias: BiasConditions | None = None
    calibration: Calibration | None = None
    data: Data = field(default_factory=Data)
    train: Train = field(default_factory=Train)
    logger: Logger = field(default_factory=Logger)
    #: XLA:CPU devices of a command line's process: null (JAX's setting, one by default), a
    #: count, or "cores" (one per core, as many as divide train.batch_size); each batch is split
    #: over them (:func:`jaxcollab.core.devices.use_cpu_devices`; a library call of run() leaves
    #: the process's devices alone)
    cpu_devices: Any = None
    #: XLA's backend optimisation level (0..3) for a command line's process, null for XLA's
    #: default (:func:`jaxcollab.core.devices.use_xla_cpu_opt_level`)
    xla_cpu_opt_level: Any = None
    out_dir: str = MISSING

    def protocol_names(self) -> list[str]:
        return [str(p) for p in self.protocols] if self.protocols else [str(self.protocol.name)]

    def check(self) -> None:
        if self.protocols is not None and not self.protocols:
            raise ConfigValueError("protocols", [], "null or a non-empty list of protocols")
        seeds = self.seeds
        if seeds is not None and (not seeds or min(seeds) < 0 or max(seeds) >= SEED_LIMIT
                                  or len(set(seeds)) < len(seeds)):
            raise ConfigValueError("seeds", seeds, "null or a non-empty list of distinct "
                                   f"integers >= 0 and < {SEED_LIMIT}")
        self._check_task_keys()
        try:
            cpu_device_count(self.cpu_devices, self.train.batch_size)
        except ValueError as e:
            raise ConfigValueError("cpu_devices", self.cpu_devices, str(e)) from None
        try:
            check_xla_cpu_opt_level(self.xla_cpu_opt_level)
        except ValueError as e:
            raise ConfigValueError("xla_cpu_opt_level", self.xla_cpu_opt_level, str(e)) from None
        if (self.calibration is None) != (self.bias is None or not self.bias.conditions):
            raise ConfigValueError("calibration", self.calibration, "a calibration block together"
                                   " with bias.conditions (experiment=parity_calibration or "
                                   "maze_calibration), or neither")
        if self.calibration is not None:
            self._check_calibration()
        self.task.check_run(self)  # the task's own keys (parity's separation, the maze's Bayes)
        self._check_round_chunks()

    def _check_task_keys(self) -> None:
        """A key only another task reads (:attr:`jaxcollab.core.family.RoundTask.run_keys`:
        parity's ``separation``, the maze's ``bayes_mazes``) stays at its default."""
        mine = round_task({"name": self.task.name}).run_keys
        for name in family_names():
            task = family(name).task
            for key, why in ({} if task is None else task.run_keys).items():
                value, default = getattr(self, key), _default(key)
                if key not in mine and value != default:
                    plain = dataclasses.asdict(value) if dataclasses.is_dataclass(value) else value
                    raise ConfigValueError(key, plain, f"{'null' if default is None else default}"
                                           f": {why}")

    def _check_round_chunks(self) -> None:
        """The round trainer's data plan (:class:`jaxcollab.collab.trainer.RoundTrainer`),
        checked before the data are built: every round chunk holds its validation rows twice
        over and at least one minibatch of training rows."""
        n_train, val = self.task.train_examples(), self.train.val_examples
        n_chunks = self.n_rounds if self.data.cross_fit else 1
        where = (f"{n_train} training examples in {n_chunks} round chunks (task.n_examples="
                 f"{self.task.n_examples}, n_rounds={self.n_rounds}, "
                 f"data.cross_fit={self.data.cross_fit})")
        if n_train < 2 * n_chunks:
            raise ConfigValueError("task.n_examples", self.task.n_examples,
                                   f"enough examples for 2 per round chunk: {where}")
        smallest = min(c.stop - c.start for c in round_chunks(n_train, n_chunks))
        if 2 * val > smallest:
            raise ConfigValueError("train.val_examples", val, f"at most {smallest // 2}, half "
                                   f"the smallest round chunk ({smallest} examples: {where})")
        if self.train.batch_size > smallest - val:
            raise ConfigValueError("train.batch_size", self.train.batch_size,
                                   f"at most {smallest - val}, a round's training rows (the "
                                   f"smallest round chunk, {smallest} examples, less "
                                   f"train.val_examples={val}: {where})")

    def _check_calibration(self) -> None:
        if self.protocol_names() != ["probability"]:
            key, value = (("protocols", self.protocol_names()) if self.protocols else
                          ("protocol.name", self.protocol_names()[0]))
            raise ConfigValueError(key, value, "'probability' (biased reports are probability "
                                   "messages)")
        conditions = {k: dataclasses.asdict(v) for k, v in self.bias.conditions.items()}
        try:
            check_conditions(conditions)
        except ValueError as e:
            raise ConfigValueError("bias.conditions", conditions, str(e)) from None


def _default(key: str):
    """The schema's default of the top-level key ``key``."""
    f = Collab.__dataclass_fields__[key]
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default


def register() -> None:
    """Store the schema as ``collab_schema`` with Hydra's ConfigStore (idempotent; on import)."""
    ConfigStore.instance().store(name="collab_schema", node=Collab)


register()
