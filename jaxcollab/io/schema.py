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
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, OmegaConf


class ConfigValueError(ValueError):
    """A config value outside its range: the message names the key, the value and the range."""

    def __init__(self, key: str, value: Any, expected: str):
        super().__init__(f"{key}={value!r} is invalid; expected {expected}")
        self.key, self.value = key, value


def bounded(default: Any = MISSING, *, ge: float | None = None, gt: float | None = None,
            le: float | None = None, lt: float | None = None) -> Any:
    """A dataclass field whose value must lie in the given bounds (checked by ``validate``)."""
    bounds = {k: v for k, v in dict(ge=ge, gt=gt, le=le, lt=lt).items() if v is not None}
    return field(default=default, metadata={"bounds": bounds})


def count(default: Any = MISSING, minimum: int = 1) -> Any:
    """An integer field that must be at least ``minimum`` (sizes, steps, episodes)."""
    return bounded(default, ge=minimum)


# -- choices ---------------------------------------------------------------------------------

class RulesetName(StrEnum):
    vanilla = "vanilla"  # the vanilla KTANE manual
    random = "random"    # every rule table redrawn from ruleset_seed (ours)


class LLMTools(StrEnum):
    text = "text"      # <thoughts>/<action> replies
    native = "native"  # bomb calls as OpenAI tool definitions


class BombHint(StrEnum):
    none = "none"
    weak = "weak"
    strong = "strong"
    playbook = "playbook"


class MazeSetting(StrEnum):
    full = "full"
    action = "action"
    verbalized = "verbalized"
    verbalized_calibrated = "verbalized_calibrated"
    sampled = "sampled"
    solo = "solo"


class TaskName(StrEnum):
    parity = "parity"
    maze = "maze"


class ParityView(StrEnum):
    masked = "masked"  # n characters, ? where unseen (the paper)
    own = "own"        # only the agent's own bits (the cpu preset)


class MazeView(StrEnum):
    masked = "masked"  # the agent's 36-character grid, ? where unseen


class ParitySplit(StrEnum):
    alternate = "alternate"


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


# -- tasks -----------------------------------------------------------------------------------

@dataclass
class ParityTask:
    """Chained parity (the paper's §1 task): ``alphas`` lead, the tail fills ``alpha_sum``."""

    name: TaskName = TaskName.parity
    alphas: list[float] = field(default_factory=lambda: [0.20, 0.15, 0.10, 0.02])
    n_bits: int = count(30)
    alpha_sum: float = bounded(0.49, gt=0.0, lt=0.5)
    split: ParitySplit = ParitySplit.alternate
    n_rounds: int = count(5)
    n_examples: int = count(2_000_000)
    test_fraction: float = bounded(0.1, gt=0.0, lt=1.0)
    view: ParityView = ParityView.masked

    def check(self) -> None:
        if self.name != TaskName.parity:
            raise ConfigValueError("task.name", _plain(self.name), "'parity' in task/parity")
        if len(self.alphas) > self.n_bits:
            raise ConfigValueError("task.alphas", list(self.alphas),
                                   f"at most task.n_bits={self.n_bits} coefficients")


@dataclass
class MazeTask:
    """Split-mask mazes (the paper's §2 task)."""

    name: TaskName = TaskName.maze
    height: int = count(6, 2)
    width: int = count(6, 2)
    wall_prob: float = bounded(0.3, ge=0.0, lt=1.0)
    n_rounds: int = count(4)
    n_examples: int = count(2_000_000)
    test_fraction: float = bounded(0.1, gt=0.0, lt=1.0)
    view: MazeView = MazeView.masked

    def check(self) -> None:
        if self.name != TaskName.maze:
            raise ConfigValueError("task.name", _plain(self.name), "'maze' in task/maze")


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


# -- evaluations -----------------------------------------------------------------------------

@dataclass
class CalibrationEval:
    """``configs/calibration.yaml``: ``eval/calibration.py`` (ideal decoders on parity)."""

    task: Any = MISSING
    decoder: Decoder = Decoder.ideal
    fit: Fit = Fit.exact
    n_fit: int = count(200_000)
    n_eval: int = count(200_000)
    seed: int = count(0, 0)
    n_rounds: int = count("${task.n_rounds}")
    n_bins: int = count(10)
    newton_steps: int = count(30)
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

    only: list[str] | None = None
    quick: bool = False
    out: str = "bench.json"


@dataclass
class LLMBlock:
    """The ``llm`` block: an OpenAI-compatible endpoint and its sampling (``agent=llm``)."""

    base_url: str = "http://127.0.0.1:8000/v1"
    model: str = "model"
    api_key_env: str = "OPENAI_API_KEY"  # the NAME of the variable holding the key
    temperature: float | None = None     # null: the family default (bomb/ktane 0.6, maze 1.0)
    max_tokens: int = count(1000)
    reasoning_effort: str | None = None
    thinking_budget: int | None = None
    timeout_s: float = bounded(120.0, gt=0)  # with no reply to any request of its batch
    context_tokens: int | None = None    # model context; null: the server's reported one (if any)
    concurrency: int = count(16)         # requests (episodes) in flight at once
    max_retries: int = count(6, 0)
    backoff_s: float = bounded(1.0, ge=0)
    tools: LLMTools = LLMTools.text      # text (<thoughts>/<action>) | native (bomb tool calls)
    cache: str | None = None             # request cache file; null: out_dir/cache.jsonl


@dataclass
class BombBlock:
    """The bomb's LLM prompt options."""

    hint: BombHint = BombHint.weak       # SANZARU hint levels
    solo_player: bool = False            # one agent holds every view (plays without hints)


@dataclass
class KtaneBlock:
    """Keep Talking's LLM options."""

    mode: str = "sync"                   # sync (3 s per Defuser cycle) | async (latency costs)
    reflection: bool = True              # end-of-game reflection request


@dataclass
class MazeBlock:
    """The maze's LLM protocol (collaboration-gap paper §6)."""

    setting: MazeSetting = MazeSetting.action
    rounds: int = count(4)               # K rounds of conversation per maze step
    samples: int = count(5)              # M responses per round (sampled)
    calibration_dir: str | None = None   # verbalized_calibrated: a finished 'verbalized' run


@dataclass
class Rollout:
    """``configs/rollout.yaml``: ``eval/rollout.py`` (a team on an env or group)."""

    env: str = "bomb/base-1"
    agent: str = "oracle"
    episodes: int = count(1024)
    seed: int = count(0, 0)
    chunk: int = count(16_384)  # episodes per compiled batch, each kept in out_dir/episodes/
    bank: bool = False          # the SANZARU instance-bank protocol (bomb)
    repeats: int = count(3)     # repeats of each bank instance
    turn_order: Any = "cycle"   # "cycle" or a permutation of the role names
    solo: str | None = None     # a team, or an earlier bank run's results.json: summary.gap
    ruleset: RulesetName = RulesetName.vanilla  # Keep-Talking rule tables (ktane only)
    ruleset_seed: int = count(0, 0)             # seed of ruleset=random
    llm: LLMBlock = field(default_factory=LLMBlock)
    bomb: BombBlock = field(default_factory=BombBlock)
    ktane: KtaneBlock = field(default_factory=KtaneBlock)
    maze: MazeBlock = field(default_factory=MazeBlock)
    checkpoint: str | None = None  # agent=learned: a train/marl.py out_dir (or its team/)
    out_dir: str = MISSING


@dataclass
class Export:
    """``configs/export.yaml``: ``eval/export.py`` (instances of an env or group as JSONL)."""

    env: str = "maze/split-6x6"
    n: int = count(10)
    seed: int = count(0, 0)
    out: str = "instances.jsonl"
    ruleset: RulesetName = RulesetName.vanilla  # Keep-Talking rule tables (ktane only)
    ruleset_seed: int = count(0, 0)             # seed of ruleset=random


@dataclass
class Protocols:
    """``configs/protocols.yaml``: ``eval/protocols.py`` (bomb team x variant table)."""

    env: str = "bomb/all"
    teams: list[str] = field(default_factory=lambda: ["onebit", "symbol", "counting", "solo",
                                                      "random", "oracle"])
    episodes: int = count(60)
    seed: int = count(0, 0)
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
    episodes: int = count(12)   # per variant and team; episode e uses turn order e % 6
    seed: int = count(0, 0)
    runs: list[str] = field(default_factory=list)  # rollout results.json files to show beside
    out_dir: str = MISSING


@dataclass
class Analyze:
    """``configs/analyze.yaml``: ``eval/analyze.py`` (perspective flags of a finished run)."""

    run: str = MISSING
    chunk: int = count(32)  # episodes per compiled replay


class MarlAlgo(StrEnum):
    ippo = "ippo"    # independent critics, one per acting agent's view
    mappo = "mappo"  # one centralised critic over every agent's view


@dataclass
class MarlPPO:
    """The trainer's settings (:class:`jaxcollab.marl.ppo.PPOConfig`, same names)."""

    env: str = "${env}"
    algo: MarlAlgo = MarlAlgo.ippo
    shared: bool = True
    episodes: int = count(256)
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
    hidden: int = count(64)
    embed: int = count(4)
    symbols: int = bounded(1, ge=1, le=4)
    alphabet: int = bounded(8, ge=2, le=42)
    seeds: int = count(1)
    dial: bool = False             # gradients through the channel in the update (DIAL)
    aux_coef: float = bounded(0.0, ge=0.0)  # auxiliary answer-prediction loss weight
    turn_order: str = "cycle"      # each episode draws one of the six, or one: deaf,mute,blind

    def check(self) -> None:
        if self.episodes % self.minibatches:
            raise ConfigValueError("ppo.episodes", self.episodes,
                                   f"a multiple of ppo.minibatches={self.minibatches}")


@dataclass
class Marl:
    """``configs/marl/marl.yaml``: ``train/marl.py`` (a team learns a bomb variant by
    IPPO/MAPPO; sizes from the ``preset`` group in ``configs/marl/preset/``)."""

    env: str = "bomb/base-1"
    seed: int = count(0, 0)
    updates: int = count(300)      # PPO updates in all
    chunk: int = count(20)         # updates per compiled call (a checkpoint and a curve point)
    eval_episodes: int = count(1024)
    eval_seed: int = count(1_000_003, 0)  # held-out episodes: another seed than training's
    ppo: MarlPPO = field(default_factory=MarlPPO)
    out_dir: str = MISSING


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, Enum) else value


@dataclass
class Seeds:
    """``configs/seeds.yaml``: ``eval/seeds.py`` (per-seed curves of a seed sweep, mean ± std)."""

    runs: list[str] = MISSING
    out_dir: str = MISSING


@dataclass
class Report:
    """``configs/report.yaml``: ``eval/report.py`` (an HTML page of one run, or several side by
    side). ``run`` is a run directory or a list of them; ``out`` null writes ``<run>/report.html``
    (one run) or ``<first run>/compare.html`` (several)."""

    run: Any = MISSING
    out: str | None = None

    def check(self) -> None:
        runs = self.run if isinstance(self.run, list) else [self.run]
        if not runs or not all(isinstance(r, str) and r for r in runs):
            raise ConfigValueError("run", self.run, "a run directory or a non-empty list of them")


SCHEMAS = {"calibration": CalibrationEval, "theory": Theory, "bench": Bench,
           "rollout": Rollout, "export": Export, "protocols": Protocols, "seeds": Seeds,
           "report": Report, "bounds": Bounds, "analyze": Analyze, "marl": Marl}
TASK_SCHEMAS = {"parity": ParityTask, "maze": MazeTask}


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
