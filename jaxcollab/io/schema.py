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


class EndpointError(RuntimeError):
    """An outside service the run needs (an LLM endpoint) cannot serve it: unreachable, an
    unknown model, a refused key. A user's error to fix, not a bug: entry points print its
    message (which never holds a secret) on one line."""


def bounded(default: Any = MISSING, *, ge: float | None = None, gt: float | None = None,
            le: float | None = None, lt: float | None = None, why: str = "") -> Any:
    """A dataclass field whose value must lie in the given bounds (checked by ``validate``);
    ``why``, where given, says where a bound comes from (the error quotes it)."""
    bounds = {k: v for k, v in dict(ge=ge, gt=gt, le=le, lt=lt).items() if v is not None}
    return field(default=default, metadata={"bounds": bounds, "why": why})


def count(default: Any = MISSING, minimum: int = 1) -> Any:
    """An integer field that must be at least ``minimum`` (sizes, steps, episodes)."""
    return bounded(default, ge=minimum)


#: Seeds are 32-bit: with 64-bit types off (JAX's default) ``PRNGKey(2**32)`` is ``PRNGKey(0)``.
SEED_LIMIT = 2**32


def seed_field(default: int = 0) -> Any:
    """A random seed: an integer in ``0 .. 2**32 - 1`` (:data:`SEED_LIMIT`)."""
    return bounded(default, ge=0, lt=SEED_LIMIT)


#: Episode counts are 31-bit: with 64-bit types off, episode indices reach JAX as int32 (episode
#: ``2**31`` would wrap to ``-2**31``), one per key of ``episode_keys(seed, episodes)``.
EPISODE_LIMIT = 2**31


def episodes_field(default: int) -> Any:
    """A number of episodes (instances): an integer in ``1 .. 2**31 - 1``
    (:data:`EPISODE_LIMIT`)."""
    return bounded(default, ge=1, lt=EPISODE_LIMIT,
                   why="episode indices are int32 in JAX, with 64-bit types off")


def check_episode_count(key: str, n: int, times_key: str, times: int) -> None:
    """Refuse ``n`` instances played ``times`` times each when their ``n * times`` episodes
    overrun :data:`EPISODE_LIMIT` (every play is an episode index).

    Raises:
        ConfigValueError: naming ``key`` and its largest valid value with ``times_key``.
    """
    if n * times >= EPISODE_LIMIT:
        raise ConfigValueError(key, n, f"at most {(EPISODE_LIMIT - 1) // times} with "
                               f"{times_key}={times} ({n} x {times} episodes; episode indices "
                               "are int32 in JAX, below 2**31)")


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
    verbalized_naive = "verbalized_naive"
    sampled = "sampled"
    solo = "solo"


class MazeAdvance(StrEnum):
    team = "team"      # the team's move is applied; a wrong one ends the maze
    path = "path"      # walked along the unique path: every round of every step is scored


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
        from jaxcollab.core.registry import family  # the task's own rule (paper, App. E)

        family("parity").task.check({"name": "parity", "alphas": list(self.alphas),
                                     "n_bits": self.n_bits, "alpha_sum": self.alpha_sum})


@dataclass
class MazeTask:
    """Split-mask mazes (the paper's §2 task)."""

    name: TaskName = TaskName.maze
    height: int = count(6, 4)             # the generator's limits (envs/maze/generator.py)
    width: int = bounded(6, ge=4, le=15)  # a row is one bitmask word
    wall_prob: float = bounded(0.3, ge=0.0, lt=1.0)
    n_rounds: int = count(4)
    n_examples: int = count(2_000_000)
    test_fraction: float = bounded(0.1, gt=0.0, lt=1.0)
    view: MazeView = MazeView.masked

    def check(self) -> None:
        if self.name != TaskName.maze:
            raise ConfigValueError("task.name", _plain(self.name), "'maze' in task/maze")
        if self.height * self.width % 2:  # jaxcollab.envs.maze.text.sample_masks
            raise ConfigValueError("task.height", self.height, f"an even number with the odd "
                                   f"task.width={self.width}: each agent sees half the cells")


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
    seed: int = seed_field()
    n_rounds: int = count("${task.n_rounds}")
    n_bins: int = count(10)
    newton_steps: int = count(30)
    bias: Bias = field(default_factory=Bias)
    out_dir: str = MISSING

    def check(self) -> None:
        parity = self.task.name == TaskName.parity  # else refused by eval/calibration.py
        if parity and self.n_rounds > self.task.n_bits:  # round k reveals bit k
            raise ConfigValueError("n_rounds", self.n_rounds,
                                   f"an integer in 1..task.n_bits={self.task.n_bits}")


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
class LLMBlock:
    """The ``llm`` block: an OpenAI-compatible endpoint and its sampling (``agent=llm``)."""

    base_url: str = "http://127.0.0.1:8000/v1"
    model: str = "model"
    api_key_env: str = "OPENAI_API_KEY"  # the NAME of the variable holding the key (never written)
    # null: the family default (bomb/ktane 0.6 as GPTNT app. H, maze 1.0 as the paper)
    temperature: float | None = None
    # null: the family default (ktane 1000, GPTNT §4; maze 2048, the collaboration-gap paper §6;
    # bomb 2048, ours); sent as max_completion_tokens where the endpoint asks for it
    max_tokens: int | None = bounded(None, ge=1)
    reasoning_effort: str | None = None  # e.g. minimal|low|medium|high, passed through
    # null: the family default (ktane 0 = off, GPTNT §4; else not sent); e.g. 4096; -1: not sent
    thinking_budget: int | None = None
    timeout_s: float = bounded(120.0, gt=0)  # with no reply to any request of its batch
    context_tokens: int | None = None    # model context; null: the server's reported one (if any)
    concurrency: int = count(16)         # requests (episodes) in flight at once, server-paced
    max_retries: int = count(6, 0)
    backoff_s: float = bounded(1.0, ge=0)
    tools: LLMTools = LLMTools.text      # text (<thoughts>/<action>) | native (bomb tool calls)
    cache: str | None = None             # request cache file; null: out_dir/cache.jsonl
    # a mixed team: role -> its own settings, each falling back to llm.* (e.g.
    # +llm.roles.expert.model=B; jaxcollab.llm.roles checks the keys)
    roles: dict[str, Any] = field(default_factory=dict)


@dataclass
class BombBlock:
    """The bomb's LLM prompt options."""

    hint: BombHint = BombHint.weak       # none | weak | strong | playbook (SANZARU hint levels)
    solo_player: bool = False            # one agent holds every view (plays without hints)
    speech_bytes: int | None = None      # speech cap; null: 1024 for agent=llm, else 256
    gesture_symbols: int | None = None   # gesture cap; null: 256 for agent=llm (SANZARU
    #                                      Fig. 11 sends 138), else 32


@dataclass
class KtaneBlock:
    """Keep Talking's LLM options."""

    mode: str = "sync"                   # sync (3 s per Defuser cycle) | async (latency costs)
    reflection: bool = True              # end-of-game reflection request (ours: no paper's)
    # gptnt (GPTNT's Defuser channel: frames, grid, no outcome field) | full (the env's text)
    view: str = "gptnt"
    solo: str | None = None              # null (Defuser + Expert) | with_manual | no_manual


@dataclass
class MazeBlock:
    """The maze's LLM protocol (collaboration-gap paper §6)."""

    # full | action | verbalized | verbalized_calibrated | verbalized_naive | sampled | solo
    setting: MazeSetting = MazeSetting.action
    rounds: int = count(4)               # K rounds of conversation per maze step
    samples: int = count(5)              # M responses per round (sampled)
    calibration_dir: str | None = None   # verbalized_calibrated: a finished 'verbalized' run
    # team (its move; a wrong one ends the maze) | path (walked along the path: every round
    # scored)
    advance: MazeAdvance = MazeAdvance.team
    rollouts: int = count(1)             # rollouts per maze: episode e is maze e // rollouts
    tell_partner: bool = False           # full: also ask for a message to the partner (R7)


@dataclass
class Rollout:
    """``configs/rollout.yaml``: ``eval/rollout.py`` (a team on an env or group)."""

    env: str = "bomb/base-1"    # an environment name or group
    agent: str = "oracle"       # a team of the env's family, or llm (any OpenAI-compatible model)
    # per environment; episode i has key episode_keys(seed, n)[i]
    episodes: int = episodes_field(1024)
    seed: int = seed_field()
    chunk: int = count(16_384)  # episodes per compiled batch, each kept in out_dir/episodes/
    bank: bool = False          # the SANZARU instance-bank protocol (bomb): 3 instances x repeats
    repeats: int = count(3)     # repeats of each bank instance
    # bomb: "cycle" (episode e plays TURN_ORDERS[e % 6]) or one permutation, e.g. [mute,deaf,blind]
    turn_order: Any = "cycle"
    solo: str | None = None     # a team, or an earlier bank run's results.json: summary.gap
    # ktane: vanilla | random (every rule table redrawn from ruleset_seed)
    ruleset: RulesetName = RulesetName.vanilla
    ruleset_seed: int = bounded(0, ge=0, lt=2**31)  # seed of ruleset=random (an int32 param)
    # agent=llm: the endpoint (rerunning with another model, url or option is refused)
    llm: LLMBlock = field(default_factory=LLMBlock)
    bomb: BombBlock = field(default_factory=BombBlock)
    ktane: KtaneBlock = field(default_factory=KtaneBlock)
    maze: MazeBlock = field(default_factory=MazeBlock)
    checkpoint: str | None = None  # agent=learned: a train/marl.py out_dir (or its team/)
    out_dir: str = MISSING


@dataclass
class Export:
    """``configs/export.yaml``: ``eval/export.py`` (instances of an env or group as JSONL)."""

    env: str = "maze/split-6x6"    # an environment name or group
    n: int = episodes_field(10)    # instances per environment (instance i = rollout episode i)
    seed: int = seed_field()
    out: str = "instances.jsonl"
    ruleset: RulesetName = RulesetName.vanilla  # Keep-Talking rule tables (ktane only)
    ruleset_seed: int = bounded(0, ge=0, lt=2**31)  # seed of ruleset=random (an int32 param)


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
class JudgeBlock:
    """The ``judge`` block of ``eval/analyze.py``: the judge model that codes lost episodes
    (any OpenAI-compatible endpoint; ``model: null`` codes nothing)."""

    model: str | None = None             # the judge model; null: no failure-mode coding
    base_url: str = "http://127.0.0.1:8000/v1"
    api_key_env: str = "OPENAI_API_KEY"  # the NAME of the variable holding the key
    temperature: float = bounded(0.0, ge=0.0)
    max_tokens: int = count(1000)
    reasoning_effort: str | None = None
    timeout_s: float = bounded(120.0, gt=0)
    context_tokens: int | None = None
    concurrency: int = count(8)
    max_retries: int = count(6, 0)
    backoff_s: float = bounded(1.0, ge=0)
    cache: str | None = None  # request cache; null: run/judge_cache.jsonl (a rerun sends nothing)


@dataclass
class Analyze:
    """``configs/analyze.yaml``: ``eval/analyze.py`` (trace analysis of a finished run)."""

    run: str = MISSING
    chunk: int = count(32)  # episodes per compiled replay
    judge: JudgeBlock = field(default_factory=JudgeBlock)


class MarlAlgo(StrEnum):
    ippo = "ippo"    # independent critics, one per acting agent's view
    mappo = "mappo"  # one centralised critic over every agent's view


@dataclass
class MarlPPO:
    """The trainer's settings (:class:`jaxcollab.marl.ppo.PPOConfig`, same names)."""

    env: str = "${env}"
    algo: MarlAlgo = MarlAlgo.ippo  # ippo | mappo (centralised critic)
    shared: bool = True            # one actor for every role (the role in its view), or per role
    episodes: int = count(1024)    # parallel episodes per seed
    steps: int = count(32)         # turns per episode per update (auto-reset)
    epochs: int = count(2)
    minibatches: int = count(2)
    lr: float = bounded(1e-3, gt=0.0)
    gamma: float = bounded(0.99, ge=0.0, le=1.0)
    gae_lambda: float = bounded(0.95, ge=0.0, le=1.0)
    clip: float = bounded(0.2, gt=0.0)
    ent_coef: float = bounded(0.01, ge=0.0)
    vf_coef: float = bounded(0.5, ge=0.0)
    max_grad_norm: float = bounded(0.5, gt=0.0)
    wrong_penalty: float = bounded(1.0, ge=0.0)  # a wrong action is rewarded this x the env -1
    hidden: int = count(64)
    embed: int = count(4)
    symbols: int = bounded(1, ge=1, le=4)     # symbols per message
    alphabet: int = bounded(8, ge=2, le=42)   # distinct symbols
    seeds: int = count(1)
    dial: bool = False             # gradients through the channel in the update (DIAL)
    aux_coef: float = bounded(0.0, ge=0.0)  # auxiliary answer-prediction loss weight
    turn_order: str = "cycle"      # each episode draws one of the six, or one: deaf,mute,blind
    anneal_updates: int = bounded(0, ge=0)  # lr decays linearly to 0 over these updates (0: off)

    def check(self) -> None:
        if self.episodes % self.minibatches:
            raise ConfigValueError("ppo.episodes", self.episodes,
                                   f"a multiple of ppo.minibatches={self.minibatches}")


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
    ppo: MarlPPO = field(default_factory=MarlPPO)
    out_dir: str = MISSING


#: ``ppo.env`` of a sweep: set to each of ``envs`` in turn by ``eval/learned.py``.
EACH_ENV = "<each of envs>"

#: The breadth sweep's environments: each bomb family's ``-1`` variant and single Keep-Talking
#: modules (issue: what the learned teams reach, family by family).
LEARNED_ENVS = ["bomb/base-1", "bomb/carving-1", "bomb/flashing-1", "bomb/flashback-1",
                "bomb/shuffle-1", "bomb/haystack-1", "bomb/bait-1", "ktane/wires",
                "ktane/button", "ktane/keypad", "ktane/simon", "ktane/memory"]


@dataclass
class LearnedPPO(MarlPPO):
    """:class:`MarlPPO` of a sweep: every environment's trainer settings, ``env`` aside."""

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
    updates: int = count(300)
    chunk: int = count(20)
    eval_episodes: int = count(1024)        # held-out episodes per env, every team alike
    eval_seed: int = seed_field(1_000_003)
    ppo: LearnedPPO = field(default_factory=LearnedPPO)
    teams: list[str] | None = None          # scripted teams; null: each family's, but learned
    repeats: int = count(3)                 # bank protocol (families with one): repeats
    runs: list[str] = field(default_factory=list)  # rollout results.json (e.g. LLM) to show
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


class CollabgapPlot(StrEnum):
    maze_success = "maze_success"          # by round, 90 % intervals (Figs. 7a, 8, 9, 11)
    step_accuracy = "step_accuracy"        # by round
    calibration_loss = "calibration_loss"  # by round, 90 % intervals (Fig. 7b)
    confidence = "confidence"              # top-probability histograms (Fig. 10)


@dataclass
class CollabgapStep:
    """One run of a collaboration-gap experiment: ``eval/rollout.py agent=llm`` into
    ``out_dir/<name>/``."""

    name: str = MISSING
    setting: MazeSetting = MazeSetting.action
    held_out: bool = False           # play the calibration mazes (calibration_seed), not plotted
    calibration: str | None = None   # verbalized_calibrated: the held-out step it is fitted on


@dataclass
class Collabgap:
    """``configs/collabgap/collabgap.yaml``: ``eval/collabgap.py`` (the collaboration-gap
    paper's LLM experiments, one ``experiment=`` each)."""

    experiment: str = MISSING
    steps: list[CollabgapStep] = MISSING
    plots: list[CollabgapPlot] = field(default_factory=lambda: [CollabgapPlot.maze_success])
    env: str = "maze/split-6x6"
    mazes: int = count(30)                # test mazes (the paper's 30)
    rollouts: int = count(10)             # rollouts per maze (the paper's 10)
    seed: int = count(0, 0)               # seed of the test mazes
    calibration_mazes: int = count(30)    # held-out mazes the calibrator is fitted on
    calibration_seed: int = count(1, 0)   # their seed (must differ from seed)
    rounds: int = count(4)
    samples: int = count(5)
    advance: MazeAdvance = MazeAdvance.path
    tell_partner: bool = False            # full steps: ask for a message to the partner (R7)
    chunk: int = count(10)                # episodes per kept chunk of each run
    llm: LLMBlock = field(default_factory=LLMBlock)
    out_dir: str = MISSING

    def check(self) -> None:
        check_episode_count("mazes", self.mazes, "rollouts", self.rollouts)
        check_episode_count("calibration_mazes", self.calibration_mazes, "rollouts",
                            self.rollouts)
        if self.seed == self.calibration_seed:
            raise ConfigValueError("calibration_seed", self.calibration_seed,
                                   f"a seed other than seed={self.seed} (the calibrator is "
                                   "fitted on other mazes)")
        names = [s.name for s in self.steps]
        for s in self.steps:
            if not s.name or "/" in s.name or names.count(s.name) > 1:
                raise ConfigValueError("steps.name", s.name, "a unique name without '/'")
            fitted = s.setting == MazeSetting.verbalized_calibrated
            if fitted != (s.calibration is not None):
                raise ConfigValueError(f"steps.{s.name}.calibration", s.calibration,
                                       "the name of a held-out verbalized step, given exactly "
                                       "for verbalized_calibrated")
            if fitted and s.calibration not in names[: names.index(s.name)]:
                raise ConfigValueError(f"steps.{s.name}.calibration", s.calibration,
                                       f"an earlier step of {names}")


SCHEMAS = {"calibration": CalibrationEval, "theory": Theory, "bench": Bench,
           "rollout": Rollout, "export": Export, "protocols": Protocols, "seeds": Seeds,
           "report": Report, "bounds": Bounds, "analyze": Analyze, "marl": Marl,
           "learned": Learned, "collabgap": Collabgap}
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
