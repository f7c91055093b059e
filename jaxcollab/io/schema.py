"""Typed, range-checked configuration schemas of the entry points (Hydra structured configs).

Each command-line entry point composes a YAML file under ``configs/`` whose defaults list starts
with one of the schemas registered here (``<name>_schema``; task files start with
``task/<task>_schema``). Hydra then refuses, while composing and before any work, a value of the
wrong type (``episodes=abc``, ``episodes=2.5``), a choice outside its enum (``task.view=foo``) and
an unknown key, naming the key, the value and what was expected.
:func:`jaxcollab.io.run.validate` adds the range checks declared here in each field's metadata
(``episodes=0``, ``n_bins=0``, a NaN learning rate) and then the cross-field checks of each
schema's ``check`` method.

Adding a config key means adding it to its schema: the composed config is closed.
"""

from __future__ import annotations

import datetime
import secrets
from dataclasses import dataclass, field, make_dataclass
from enum import Enum, StrEnum
from typing import Any, ClassVar

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, OmegaConf

from jaxcollab.analysis.replay import CHUNK
from jaxcollab.core.config import (
    bounded,
    check_fields,
    config_fields,
    count,
    episodes_field,
    seed_field,
)
from jaxcollab.core.errors import ConfigValueError
from jaxcollab.core.family import Spec
from jaxcollab.llm.client import LLMConfig

# -- choices ---------------------------------------------------------------------------------

class LoggerMode(StrEnum):
    disabled = "disabled"
    offline = "offline"
    online = "online"


class Decoder(StrEnum):
    ideal = "ideal"


class Fit(StrEnum):
    exact = "exact"
    samples = "samples"


class TheoryMethod(StrEnum):
    closed_form = "closed_form"
    enumeration = "enumeration"


# -- shared by training and evaluation (the training schema: jaxcollab.collab.config) --------

@dataclass
class Logger:
    mode: LoggerMode = LoggerMode.disabled
    project: str = "jaxcollab"


@dataclass
class Bias:
    """The log-linear bias model (:mod:`jaxcollab.collab.bias`): miscalibration β, anchoring γ."""

    beta: float = bounded(1.0, gt=0.0)
    gamma: float = 0.5


@dataclass
class Calibration:
    """The calibration experiment's calibrator fits (:mod:`jaxcollab.collab.conversations`;
    ``eval/calibration.py`` fits the same way)."""

    n_bins: int = count(10)
    newton_steps: int = count(30)


# -- evaluations -----------------------------------------------------------------------------

@dataclass
class CalibrationEval:
    """``configs/calibration.yaml``: ``eval/calibration.py`` (ideal decoders on parity)."""

    task: Any = MISSING
    decoder: Decoder = Decoder.ideal
    fit: Fit = Fit.exact
    n_fit: int = count(200_000)
    n_eval: int = count(200_000)
    seed: int = seed_field()
    n_rounds: int = count("${task.n_rounds}")
    n_bins: int = count(Calibration.n_bins)
    newton_steps: int = count(Calibration.newton_steps)
    bias: Bias = field(default_factory=Bias)
    out_dir: str = MISSING


@dataclass
class Theory:
    """``configs/theory.yaml``: ``eval/theory.py``."""

    task: Any = MISSING
    method: TheoryMethod = TheoryMethod.closed_form
    n_rounds: int = count("${task.n_rounds}")
    out_dir: str = MISSING


@dataclass
class Bench:
    """``configs/bench.yaml``: ``eval/bench.py``."""

    only: list[str] | None = None  # benchmark module names in eval/benchmarks/; None: all
    quick: bool = False            # smaller sizes, for a smoke test
    out: str = "bench.json"


@dataclass
class RolloutKeys:
    """``configs/rollout.yaml``: ``eval/rollout.py`` (a team on an env or group): the keys
    every family reads. The schema, :data:`Rollout`, adds each registered family's own
    (:attr:`jaxcollab.core.family.Family.config`)."""

    env: str = "bomb/base-1"    # an environment name or group
    agent: str = "oracle"       # a team of the env's family, or llm (any OpenAI-compatible model)
    # per environment; episode i has key episode_keys(seed, n)[i]
    episodes: int = episodes_field(1024)
    seed: int = seed_field()
    chunk: int = count(Spec.chunk)  # episodes per compiled batch, each kept in out_dir/episodes/
    # agent=llm: the endpoint (rerunning with another model, url or option is refused)
    llm: LLMConfig = field(default_factory=LLMConfig)
    # agent=learned (every family with an RL view): a train/marl.py out_dir (or its team/)
    checkpoint: str | None = None
    out_dir: str = MISSING


@dataclass
class ExportKeys:
    """``configs/export.yaml``: ``eval/export.py`` (instances of an env or group as JSONL):
    the keys of every exporter. The schema, :data:`Export`, adds each registered family's
    exporter keys (:attr:`jaxcollab.core.family.Family.export_config`)."""

    env: str = "maze/split-6x6"    # an environment name or group
    n: int = episodes_field(10)    # instances per environment (instance i = rollout episode i)
    seed: int = seed_field()
    out: str = "instances.jsonl"


@dataclass
class Protocols:
    """``configs/protocols.yaml``: ``eval/protocols.py`` (bomb team x variant table)."""

    env: str = "bomb/all"
    teams: list[str] = field(default_factory=lambda: ["onebit", "symbol", "counting", "solo",
                                                      "random", "oracle"])
    # per variant; episode e plays turn order TURN_ORDERS[e % 6]
    episodes: int = episodes_field(60)
    seed: int = seed_field()
    out_dir: str = MISSING

    def check(self) -> None:
        if not self.teams:
            raise ConfigValueError("teams", [], "at least one team name")


@dataclass
class Bounds:
    """``configs/bounds.yaml``: ``eval/bounds.py`` (information bounds per bomb variant beside
    the teams' rounds and symbols)."""

    env: str = "bomb/all"
    teams: list[str] = field(default_factory=lambda: ["onebit", "symbol", "counting", "oracle"])
    episodes: int = episodes_field(12)  # per variant and team; episode e uses turn order e % 6
    seed: int = seed_field()
    runs: list[str] = field(default_factory=list)  # rollout results.json files to show beside
    out_dir: str = MISSING


@dataclass
class JudgeBlock(LLMConfig):
    """The ``judge`` block of ``eval/analyze.py``: the judge model that codes lost episodes
    and the protocol of the episodes the rules leave undetermined (any OpenAI-compatible
    endpoint, :class:`~jaxcollab.llm.client.LLMConfig`; ``model: null`` codes nothing;
    ``cache`` null: ``run/judge_cache.jsonl``, so a rerun sends nothing)."""

    key_prefix: ClassVar[str] = "judge."
    model: str | None = None             # the judge model; null: no judge
    temperature: float = bounded(0.0, ge=0.0)
    max_tokens: int = count(1000)
    concurrency: int = count(8)


@dataclass
class Analyze:
    """``configs/analyze.yaml``: ``eval/analyze.py`` (trace analysis of a finished run)."""

    run: str = MISSING
    chunk: int = count(CHUNK)  # episodes per compiled replay
    judge: JudgeBlock = field(default_factory=JudgeBlock)


class MarlAlgo(StrEnum):
    ippo = "ippo"    # independent critics, one per acting agent's view
    mappo = "mappo"  # one centralised critic over every agent's view


@dataclass
class PPOConfig:
    """The multi-agent PPO trainer's settings (:class:`jaxcollab.marl.ppo.Trainer`; the
    ``ppo`` block of ``train/marl.py``), checked on construction (:func:`check_fields`).

    Attributes:
        env: bomb variant or Keep-Talking module name; algo: ``ippo`` or ``mappo``
            (centralised critic); shared: one set of actor parameters for every role (the role
            is in the observation) or one per role.
        episodes: parallel episodes per seed; steps: turns per episode per update (auto-reset
            within); epochs, minibatches: PPO passes over each batch; the rest PPO/GAE/optimiser
            settings. wrong_penalty: the training reward of a wrong action is this times the
            environment's -1 (1: the environment's reward; 0: a guess costs no more than a
            time-out, so exploring cuts is not punished; success is always the env's ending).
            progress_reward: the training reward of a correct action that does not end the
            episode (the first cut of a two-cut variant; ``view.progress`` counts them), so a
            multi-step task rewards each step and not only the last one (the environment's
            reward is +1 at defusal only); 0: the environment's reward.
            hidden/embed: GRU and embedding widths; symbols/alphabet: the view's messages.
            seeds: independent runs vmapped in one program.
        dial: differentiable communication in the update: each heard symbol's embedding
            gets a straight-through gradient to the sender's message probabilities (DIAL;
            Foerster et al. 2016, "Learning to Communicate with Deep Multi-Agent Reinforcement
            Learning", sec. 5), so a listener's loss trains the speaker across agents and
            turns; acting and evaluation stay discrete and decentralised.
        aux_coef: weight of an auxiliary loss: each acting agent predicts, from its GRU
            state, what the task needs now (``view.answer``: for a bomb the position to act
            on and the manual's answer; read from the hidden state, as a centralised critic
            reads it: training only, never an input). With ``dial`` its gradient reaches the
            speakers, so each hop of a relay is trained by what the next agent can tell from
            it, before any reward arrives.
        turn_order: ``"cycle"``: every training episode draws its turn order from the six
            (uniformly, at each reset) and the in-training evaluation plays
            ``TURN_ORDERS[i % 6]`` as the bank protocol does; or one permutation,
            ``"deaf,mute,blind"`` (:func:`~jaxcollab.envs.bomb.bank.parse_turn_order`).
        rulesets: ``"vanilla"``, or ``"episode"`` (Keep Talking: every episode draws a random
            ruleset, so the Defuser cannot learn the rules and the Expert, whose observation
            holds that episode's manual, must tell it; held-out episodes play rulesets of a
            disjoint pool: :mod:`jaxcollab.agents.ktane.rulesets`).
        other_play: train over the symmetries of the message alphabet (Hu et al. 2020,
            "Other-Play for Zero-Shot Coordination"): each training episode draws a random
            permutation of the words, and the Expert plays as its relabeled self (its words
            arrive permuted, the Defuser's inversely; :meth:`~jaxcollab.marl.ppo.Trainer.
            relabeled`), so only conventions every relabeling keeps are learned; evaluation
            plays the plain channel. On a broadcast view (the bomb) each sender's symbols on
            each channel get their own permutation, heard alike by every receiver.
        anneal_updates: 0 for a constant ``lr``; else ``lr`` decays linearly to 0 over this
            many updates (as PPO's Atari runs anneal the step size, Schulman et al. 2017,
            App. A), so the last updates settle the policy instead of moving it.

    Raises:
        ConfigValueError: a value out of range, ``algo`` not ippo/mappo, or ``episodes`` not a
            multiple of ``minibatches`` (named as ``ppo.<key>``).
    """

    env: str = "bomb/base-1"
    algo: MarlAlgo = MarlAlgo.ippo
    shared: bool = True
    episodes: int = count(1024)
    steps: int = count(32)
    epochs: int = count(2)
    minibatches: int = count(2)
    lr: float = bounded(1e-3, gt=0.0)
    gamma: float = bounded(0.99, ge=0.0, le=1.0)
    gae_lambda: float = bounded(0.95, ge=0.0, le=1.0)
    clip: float = bounded(0.2, gt=0.0)
    ent_coef: float = bounded(0.01, ge=0.0)
    vf_coef: float = bounded(0.5, ge=0.0)
    max_grad_norm: float = bounded(0.5, gt=0.0)
    wrong_penalty: float = bounded(1.0, ge=0.0)
    progress_reward: float = bounded(0.0, ge=0.0)
    hidden: int = count(64)
    embed: int = count(4)
    symbols: int = bounded(1, ge=1, le=8)
    alphabet: int = bounded(8, ge=2, le=42)
    seeds: int = count(1)
    dial: bool = False
    aux_coef: float = bounded(0.0, ge=0.0)
    turn_order: str = "cycle"
    rulesets: str = "vanilla"
    other_play: bool = False
    anneal_updates: int = bounded(0, ge=0)

    def __post_init__(self) -> None:
        check_fields(self, "ppo.")

    def check(self) -> None:
        if self.algo not in tuple(MarlAlgo):
            raise ConfigValueError("ppo.algo", _plain(self.algo), "'ippo' or 'mappo'")
        if self.episodes % self.minibatches:
            raise ConfigValueError("ppo.episodes", self.episodes,
                                   f"a multiple of ppo.minibatches={self.minibatches}")


def offline_logger() -> Logger:
    """The RL entry points' logger default: wandb offline (``WANDB_MODE=disabled`` turns it
    off, as the test suite does: :class:`jaxcollab.io.logging.RunLogger`)."""
    return Logger(mode=LoggerMode.offline)


@dataclass
class Marl:
    """``configs/marl/marl.yaml``: ``train/marl.py`` (a team learns a bomb variant by
    IPPO/MAPPO; sizes from the ``preset`` group in ``configs/marl/preset/``)."""

    env: str = "bomb/base-1"
    seed: int = seed_field()       # training episodes
    updates: int = count(300)      # PPO updates in all
    chunk: int = count(20)         # updates per compiled call (a checkpoint and a curve point)
    eval_episodes: int = count(1024)
    eval_seed: int = seed_field(1_000_003)  # held-out episodes: another seed than training's
    ppo: PPOConfig = field(default_factory=lambda: PPOConfig(env="${env}"))
    logger: Logger = field(default_factory=offline_logger)  # curves kept for `wandb sync`
    out_dir: str = MISSING


def _families() -> list:
    """Every registered family's plug-in, loaded through the registry (this module imports
    none)."""
    from jaxcollab.core.registry import family, family_names

    return [family(name) for name in family_names()]


def family_default(key: str) -> Any:
    """The default of the run-config key ``key`` as the registered families that read it
    declare it (:attr:`jaxcollab.core.family.Family.config`; one default, as
    :func:`with_families` checks), so a schema that sets it for them states it nowhere else.

    Raises:
        KeyError: no registered family reads ``key``.
    """
    for f in _families():
        if key in f.keys():
            return f.defaults()[key]
    raise KeyError(f"no registered family reads the config key {key!r}")


#: ``ppo.env`` of a sweep: set to each of ``envs`` in turn by ``eval/learned.py``.
EACH_ENV = "<each of envs>"

#: The breadth sweep's environments: each bomb family's ``-1`` variant and single Keep-Talking
#: modules (issue: what the learned teams reach, family by family).
LEARNED_ENVS = ["bomb/base-1", "bomb/carving-1", "bomb/flashing-1", "bomb/flashback-1",
                "bomb/shuffle-1", "bomb/haystack-1", "bomb/bait-1", "ktane/wires",
                "ktane/button", "ktane/keypad", "ktane/simon", "ktane/memory"]


@dataclass
class LearnedPPO(PPOConfig):
    """:class:`PPOConfig` of a sweep: every environment's trainer settings, ``env`` aside."""

    env: str = EACH_ENV

    def check(self) -> None:
        super().check()
        if self.env != EACH_ENV:
            raise ConfigValueError("ppo.env", self.env, "unset: the sweep trains on each of envs")


@dataclass
class Learned:
    """``configs/marl/learned.yaml``: ``eval/learned.py`` (a team trained from scratch on each
    environment by ``train/marl.py``'s trainer, beside its family's scripted teams). The
    training keys are :class:`Marl`'s, set by the same ``preset`` group."""

    envs: list[str] = field(default_factory=lambda: list(LEARNED_ENVS))  # names or groups
    seed: int = seed_field()
    updates: int = count(Marl.updates)
    chunk: int = count(Marl.chunk)
    eval_episodes: int = count(Marl.eval_episodes)  # held-out episodes per env, every team alike
    eval_seed: int = seed_field(Marl.eval_seed)
    ppo: LearnedPPO = field(default_factory=LearnedPPO)
    teams: list[str] | None = None          # scripted teams; null: each family's, but learned
    # bank protocol (families with one): repeats of each instance
    repeats: int = count(family_default("repeats"))
    runs: list[str] = field(default_factory=list)  # rollout results.json (e.g. LLM) to show
    logger: Logger = field(default_factory=offline_logger)  # each training run's
    out_dir: str = MISSING


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, Enum) else value


@dataclass
class Seeds:
    """``configs/seeds.yaml``: ``eval/seeds.py`` (per-seed curves of a seed sweep, mean ± std)."""

    runs: list[str] = MISSING
    out_dir: str = MISSING


@dataclass
class Crossplay:
    """``configs/crossplay.yaml``: ``eval/crossplay.py`` (every assignment of roles to the
    seeds of a ``train/marl.py`` run, self-play vs cross-play). ``episodes`` null: the run's
    ``eval_episodes``."""

    env: str = MISSING
    checkpoint: str = MISSING
    episodes: int | None = None
    out_dir: str = MISSING


@dataclass
class Report:
    """``configs/report.yaml``: ``eval/report.py`` (an HTML page of one run, or several side by
    side). ``runs`` is a run directory or a list of them (``run`` is its alias: give one of the
    two); ``out`` null writes ``<run>/report.html`` (one run) or ``<first run>/compare.html``
    (several); ``replay``: episodes per environment replayed step by step as pictures
    (:mod:`jaxcollab.report.replay`; 0: none); ``screenshots``: a directory for
    ``replay-<family>.png``, each run's first replayed episode at its middle step
    (:mod:`jaxcollab.report.screenshot`; null: none)."""

    runs: Any = None
    run: Any = None
    out: str | None = None
    replay: int = count(5, minimum=0)
    screenshots: str | None = None

    def dirs(self) -> list[str]:
        """The run directories, from ``runs`` or its alias ``run``."""
        given = self.run if self.runs is None else self.runs
        return list(given) if isinstance(given, list | tuple) else [given]

    def check(self) -> None:
        if self.runs is not None and self.run is not None:
            raise ConfigValueError("runs", self.runs, f"runs= or its alias run=, not both "
                                   f"(run={self.run!r} given too)")
        if self.runs is None and self.run is None:
            raise ConfigValueError("runs", None, "a run directory or a non-empty list of them "
                                   "(or run=, its alias)")
        key = "run" if self.runs is None else "runs"
        runs = self.dirs()
        if not runs or not all(isinstance(r, str) and r for r in runs):
            raise ConfigValueError(key, getattr(self, key),
                                   "a run directory or a non-empty list of them")


@dataclass
class Tables:
    """``configs/tables.yaml``: ``eval/tables.py`` (a paper's tables from finished runs).
    ``paper`` names the paper (a key of some family's :attr:`~jaxcollab.core.family.Family.
    tables`), ``runs`` the run directories, ``out_dir`` where the tables go (null:
    ``<first run>/tables-<paper>``)."""

    paper: str = MISSING
    runs: Any = MISSING
    out_dir: str | None = None

    def check(self) -> None:
        runs = self.runs if isinstance(self.runs, list) else [self.runs]
        if not runs or not all(isinstance(r, str) and r for r in runs):
            raise ConfigValueError("runs", self.runs, "a run directory or a non-empty list of "
                                   "them")


def with_families(base: type, slot: str) -> type:
    """``base`` with the config keys of every registered family
    (:attr:`jaxcollab.core.family.Family.config` or ``export_config``, named by ``slot``),
    each declared once, by its family.

    Raises:
        ValueError: two families declare one key with different defaults.
    """
    configs = [c for f in _families() if (c := getattr(f, slot)) is not None]
    name = base.__name__.removesuffix("Keys")
    return make_dataclass(name, config_fields([base, *configs]),
                          namespace={"__doc__": base.__doc__, "__module__": base.__module__})


#: ``eval/rollout.py``'s schema: :class:`RolloutKeys` and every family's keys.
Rollout = with_families(RolloutKeys, "config")
#: ``eval/export.py``'s schema: :class:`ExportKeys` and every family's exporter keys.
Export = with_families(ExportKeys, "export_config")

SCHEMAS = {"calibration": CalibrationEval, "theory": Theory, "bench": Bench,
           "rollout": Rollout, "export": Export, "protocols": Protocols, "seeds": Seeds,
           "report": Report, "bounds": Bounds, "analyze": Analyze, "marl": Marl,
           "learned": Learned, "tables": Tables, "crossplay": Crossplay}
# the entry points' schemas a family owns (the maze's eval/collabgap.py)
SCHEMAS |= {name: node for f in _families() for name, node in f.schemas.items()}
#: The Hydra ``task`` group's schemas (``task/<name>_schema``): each round-trainer task's config
#: (:attr:`jaxcollab.core.family.RoundTask.config`), by family.
TASK_SCHEMAS = {f.name: f.task.config for f in _families() if f.task is not None}


def run_id() -> str:
    """A default run-directory name: local time to the microsecond plus 6 random hex digits
    (``2026-11-30_23-59-59.123456-3fa9c1``), so two runs started together never share one."""
    stamp = datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S.%f")
    return f"{stamp}-{secrets.token_hex(3)}"


def register() -> None:
    """Store the schemas with Hydra's ConfigStore and the ``${run_id:}`` resolver (cached, so
    every use in one process names the same directory). Idempotent; runs on import."""
    store = ConfigStore.instance()
    for name, node in SCHEMAS.items():
        store.store(name=f"{name}_schema", node=node)
    for name, node in TASK_SCHEMAS.items():
        store.store(group="task", name=f"{name}_schema", node=node)
    OmegaConf.register_new_resolver("run_id", run_id, use_cache=True, replace=True)


register()
