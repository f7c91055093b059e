"""Family plug-ins: everything an entry point needs to know about a family, in one object.

A family (``bomb``, ``ktane``, ``maze``, ``parity``, or one a user adds) is a package of
environments plus one :class:`Family`, registered with :func:`jaxcollab.register_family` by
the module its package declares in the ``jaxcollab.families`` entry-point group
(:mod:`jaxcollab.core.registry`). The entry points (``eval/rollout.py``, ``eval/export.py``,
``eval/protocols.py``, the LLM run, the RL and round trainers) ask the plug-in and nothing
else: its teams by name, its evaluation (the family's ``results.json`` keys, documented by its
``evaluate``), its exporter, its LLM game, its config keys, its trace analysis
(``eval/analyze.py``), its information bounds (``eval/bounds.py``), its RL view
(``train/marl.py``), its round-trainer task (``train/collab.py``), its report sections
(``eval/report.py``), its papers' tables (``eval/tables.py``) and an example environment (for
tests that cover every family).

**A team is a team.** Every team, scripted, privileged oracle or LLM, is a :class:`Team`: an
object whose ``play(env, keys, params, ids)`` plays one episode per key to its end and returns
the final environment states. A family's ``evaluate`` plays any team through the same chunking,
preemption and summaries (:func:`jaxcollab.scale.preempt.resumable_episodes`).

**One episode-key convention.** Episode ``i`` of seed ``s`` on any environment has the key
``episode_keys(s, n)[i]`` (:func:`jaxcollab.core.rollout.episode_keys`; the same for every
``n > i``), whoever plays it: an oracle, a scripted team, an LLM team or the exporter. What
else makes the instance (the bomb's turn order ``TURN_ORDERS[i % 6]``, a Keep-Talking ruleset)
is a function of ``i`` and the config only, built by the family for every team alike.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import jax
from omegaconf import MISSING

from jaxcollab.core.config import bounded, count
from jaxcollab.core.env import Environment
from jaxcollab.core.rollout import Policy, episode_keys, rollout

#: An episode's identity in a run: ``(environment name, episode index)``.
EpisodeId = tuple[str, int]


class Team(Protocol):
    """Anything that plays episodes: ``name`` for results, ``play`` for the rollout."""

    name: str

    def play(self, env: Environment, keys: jax.Array, params: Any, ids: Sequence[EpisodeId], *,
             batched_params: bool = False) -> Any:
        """Play one episode per key ``[B]`` (``params`` shared, or ``[B]`` with
        ``batched_params``) to its end; the final environment states ``[B]`` (host arrays).
        ``ids[b]`` names episode ``b`` (teams that keep transcripts use it)."""


@dataclasses.dataclass(frozen=True)
class ScriptedTeam:
    """A team given by its policy: ``policy(env) -> Policy`` (oracle, scripted, learned),
    played by the library rollout with ``until_done`` (one compile per env and batch size)."""

    name: str
    policy: Callable[[Environment], Policy]

    def play(self, env, keys, params, ids=(), *, batched_params=False):
        return jax.device_get(rollout(env, self.policy(env), keys, params,
                                      batched_params=batched_params,
                                      max_steps=env.max_episode_steps, until_done=True).state)


@dataclasses.dataclass(frozen=True)
class Spec:
    """What to play: ``episodes`` per environment from ``seed``, ``chunk`` at a time, finished
    chunks kept under ``save_dir`` (``None``: nothing kept), and ``options``, the run's config
    (a plain mapping; a family reads its own keys, :attr:`Family.config`)."""

    episodes: int
    seed: int
    chunk: int = 16_384
    save_dir: Path | None = None
    options: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def keys(self) -> jax.Array:
        """The episode keys ``[episodes]`` (the one convention; module docstring)."""
        return episode_keys(self.seed, self.episodes)

    def env_dir(self, name: str) -> Path | None:
        """Where ``name``'s finished chunks are kept (``save_dir/<name with / as ->``)."""
        return None if self.save_dir is None else Path(self.save_dir) / name.replace("/", "-")


@dataclasses.dataclass(frozen=True)
class LLMGame:
    """A family's LLM side (:mod:`jaxcollab.llm`): how a language model plays one episode.

    Attributes:
        game: ``game(env_name, env, params, options) -> jaxcollab.llm.bridge.Game`` for one
            episode, ``params`` that episode's params (prompts may depend on them, e.g. the
            bomb's turn order), ``options`` the run config.
        outcome: ``outcome(final_state) -> (success, ending name)`` of one episode.
        temperature: the family's default sampling temperature (``llm.temperature=null``).
        max_tokens: the family's default completion token budget (``llm.max_tokens=null``).
        thinking_budget: the family's default ``llm.thinking_budget`` (None: not sent, the
            server's default; 0: thinking off).
        roles: the team's agent names (``llm.roles.<role>`` may give each its own model;
            a solo player plays the ``llm.*`` model); empty: any name.
        communication: ``communication(record) -> (steps with a message, steps)`` of one
            transcript record (GPTNT Table 7's communication rate), or None.
        data: ``data(final_state) -> dict`` of extra transcript fields (e.g. maze labels).
        summary: ``summary(records, options) -> dict`` of family-specific LLM keys computed
            from the transcript records (e.g. the maze's per-round accuracy).
        plots: ``plots(results, out_dir, names)`` draws the named plots (``plots`` of a
            multi-step LLM experiment's config) of its combined ``results.json`` into
            ``out_dir`` (the maze's collaboration-gap figures, ``eval/collabgap.py``), or None.
    """

    game: Callable[[str, Environment, Any, Mapping[str, Any]], Any]
    outcome: Callable[[Any], tuple[bool, str]]
    temperature: float = 0.6
    max_tokens: int = 1000
    thinking_budget: int | None = None
    roles: tuple[str, ...] = ()
    communication: Callable[[dict], tuple[int, int]] | None = None
    data: Callable[[Any], dict] = lambda state: {}
    summary: Callable[[list[dict], Mapping[str, Any]], dict] = lambda records, options: {}
    plots: Callable[[dict, Path, Sequence[str]], None] | None = None


@dataclasses.dataclass(frozen=True)
class Analysis:
    """A family's trace analysis of a finished run (``eval/analyze.py``).

    Attributes:
        analyze: ``analyze(results, run_dir, chunk) -> dict``: the deterministic analysis of
            the run in ``run_dir`` (``results`` its ``results.json``; ``chunk`` episodes per
            compiled replay), the ``analysis.json`` keys the family documents; lost episodes
            in a ``lost_episodes`` list of objects with ``env`` and ``episode``. Raises
            ``ConfigValueError`` for a run it cannot analyse (names why).
        judge: a :class:`jaxcollab.analysis.judge.Rubric` by which a judge model codes each
            lost episode from its transcript, or ``None`` (nothing to judge).
        questions: name → :class:`~jaxcollab.analysis.judge.Rubric` of the per-episode
            questions the analysis leaves to a judge where its rules cannot decide (bomb:
            ``protocol``, SANZARU Figs. 7-12). When there are any, ``analyze`` also takes
            ``ask=``: ``ask(name, [(nonce, record, entry), ...]) -> [Verdict, ...]`` (each
            episode rendered by that rubric and judged, :func:`jaxcollab.analysis.judge.ask`),
            or ``None`` when no judge is configured.
    """

    analyze: Callable[..., dict]
    judge: Any = None
    questions: Mapping[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Bounds:
    """A family's information bounds (``eval/bounds.py``).

    Attributes:
        variant: ``variant(env_name) -> dict``: the bounds of one environment (keys documented
            by the family; ``min_rounds`` and ``min_symbols`` at least).
        team: ``team(env_names, team_name, episodes, seed) -> {env_name: row}``: a scripted
            team's ``episodes``, ``success_rate``, ``mean_rounds`` and ``mean_symbols`` beside
            the bounds, on the episodes ``eval/rollout.py`` plays for the same arguments.
    """

    variant: Callable[[str], dict]
    team: Callable[[Sequence[str], str, int, int], dict[str, dict]]


@dataclasses.dataclass(frozen=True)
class RL:
    """A family's multi-agent RL side (:mod:`jaxcollab.marl`; ``train/marl.py``).

    Attributes:
        view: ``view(env_name, symbols, alphabet, rulesets) -> jaxcollab.marl.views.View``:
            the RL view of one of the family's environments (``symbols``/``alphabet``: its
            messages; ``rulesets``: ``"vanilla"``, or ``"episode"`` for a family that draws a
            ruleset per episode). Raises ``KeyError`` for an environment it has no view of,
            ``ValueError`` for sizes or a ``rulesets`` it refuses.
        protocol: ``protocol(policy, view, episodes, seed) -> dict``: the tables of what a
            learned team's messages mean (``results.json`` ``protocol``), or ``None``.
        protocol_plot: ``protocol_plot(tables, path)`` writes those tables' PNG (with
            :attr:`protocol`).
    """

    view: Callable[[str, int, int, str], Any]
    protocol: Callable[[Policy, Any, int, int], dict] | None = None
    protocol_plot: Callable[[dict, Path], None] | None = None


@dataclasses.dataclass
class TaskConfig:
    """The keys of every round-trainer task's config, which a task's :attr:`RoundTask.config`
    subclasses (setting ``name`` and ``n_rounds``, adding its own keys): the rounds of the
    conversation and the data plan, the paper's (Narrowing the Collaboration Gap, Probably,
    App. E: 2,000,000 examples, 10 % held out for the test split)."""

    name: str = MISSING
    n_rounds: int = count(MISSING)
    n_examples: int = count(2_000_000)
    test_fraction: float = bounded(0.1, gt=0.0, lt=1.0)

    def train_examples(self) -> int:
        """The training examples of the task's split, or a lower bound: a split by episode
        (the maze's, by maze) holds at least ``1 − test_fraction`` of the examples."""
        return math.ceil((1 - self.test_fraction) * self.n_examples)

    def check_run(self, run: Any) -> None:
        """The cross-key checks of a round-trainer run on this task (``run``: the
        ``train/collab.py`` schema, :class:`jaxcollab.collab.config.Collab`), of the keys
        :attr:`RoundTask.run_keys` gives it; none by default.

        Raises:
            ConfigValueError: naming the key.
        """


@dataclasses.dataclass(frozen=True)
class Theory:
    """A round task's exact theory: the curves of ideal (Bayes) speakers, beside which the
    trained ones are read (``eval/theory.py``, the calibration experiment).

    Attributes:
        curves: ``curves(task_cfg, n_rounds, method) -> dict``: the exact curves by round
            (``eval/theory.py``'s ``results.json`` keys, documented by the family), ``method``
            one of :attr:`methods`.
        methods: the methods :attr:`curves` offers (``configs/theory.yaml`` ``method``).
        plot: ``plot(results, path)`` writes :attr:`curves`' PNG.
        calibration: ``calibration(task_cfg, n_rounds, conditions) -> dict``: the calibration
            experiment's exact curves (``conditions``: name → ``(β, γ)``): its
            ``theory_mse_vs_pstar`` by round and ``conditions.<name>.ideal_decoder``.
        check_rounds: ``check_rounds(task_cfg, n_rounds)``: raises ``ConfigValueError``
            naming ``n_rounds`` when the theory has no round ``n_rounds`` (parity's round k
            reveals bit k); run before any work.
        ideal: ``ideal(cfg) -> (results, metrics)``: the ideal-decoder calibration analysis
            of ``eval/calibration.py`` (its config; its ``results.json`` keys and the
            per-treatment round metrics its plots draw), or None: the task has no ideal
            decoders.
    """

    curves: Callable[[Mapping, int, str], dict]
    methods: tuple[str, ...]
    plot: Callable[[dict, Path], None]
    calibration: Callable[[Mapping, int, Mapping[str, tuple[float, float]]], dict]
    check_rounds: Callable[[Mapping, int], None] = lambda task_cfg, n_rounds: None
    ideal: Callable[[Mapping], tuple[dict, dict]] | None = None


@dataclasses.dataclass(frozen=True)
class Scores:
    """A round task's own score of its test decisions, for a task whose examples are the steps
    of episodes (the maze's path steps): the calibration experiment reports it in place of the
    squared error against the target.

    Attributes:
        name: its ``results.json`` key (``maze_success``); label: its plot's axis label.
        score: ``score(correct, source) -> list``: by round, from ``correct`` bool ``[K, N]``
            (each test example's decision after round k right) and the task's source
            (:attr:`RoundTask.build`'s).
        baselines: treatments of the raw biased messages the task adds, name →
            ``baseline(probs [K, N, C], class_chars) -> probs`` (the maze's naive rare-action).
    """

    name: str
    label: str
    score: Callable[[Any, Any], list[float]]
    baselines: Mapping[str, Callable[[Any, str], Any]] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class RoundTask:
    """A family's task for the round-by-round trainer (``train/collab.py``, ``task=<name>``).

    Attributes:
        config: the task's config dataclass, the Hydra ``task`` group's ``<name>_schema``
            (``configs/task/<name>.yaml``, registered by :mod:`jaxcollab.io.schema`): a
            :class:`TaskConfig`.
        build: ``build(task_cfg, key) -> (jaxcollab.collab.data.CollabTask, source)``: the
            task's data from its config mapping, and what it was made from, for task-specific
            scores (the maze split; ``None``).
        experiment: the task's protocol experiment, a factory ``experiment(cfg, out, results,
            logger)`` of an object with ``conversations()``, ``record(name, metrics)`` and
            ``finish()`` (:func:`jaxcollab.collab.run.run` plays it; parity's
            :class:`jaxcollab.agents.parity.experiment.Protocols`, scored against p*; the
            maze's :class:`jaxcollab.agents.maze.experiment.Mazes`, scored by walking the
            source's mazes, with Bayes-move baselines).
        check: ``check(task_cfg)``: the checks that need its generator, run before any work
            (raise ``ConfigValueError`` naming the key).
        run_keys: the ``train/collab.py`` keys only this task reads (its experiment's), each
            with why; a run on another task refuses a value other than the schema's default.
        theory: its exact theory, or ``None``.
        scores: its own score of test decisions, or ``None`` (squared error against the
            target, ``mse_vs_pstar``).
    """

    config: type
    build: Callable[[Mapping, jax.Array], tuple[Any, Any]]
    experiment: Callable[..., Any]
    check: Callable[[Mapping], None] = lambda cfg: None
    run_keys: Mapping[str, str] = dataclasses.field(default_factory=dict)
    theory: Theory | None = None
    scores: Scores | None = None


@dataclasses.dataclass(frozen=True)
class Reel:
    """One episode's states, replayed for the report's step-by-step pictures.

    Attributes:
        env_name: its environment; episode: its index in the run (the transcript's
            ``episode``); env, params: what :attr:`Draw.pictures` draws it with;
        states: host states from the reset to the end, one per step and the final one
            (``len(states) = steps + 1``).
    """

    env_name: str
    episode: int
    env: Environment
    params: Any
    states: list


@dataclasses.dataclass(frozen=True)
class Draw:
    """A family's pictures of its states (the report's replay, :mod:`jaxcollab.report.replay`).

    Attributes:
        pictures: ``pictures(env, state, params) -> {name: svg}`` of one host state: first
            ``"state"`` (everything, as the environment holds it), then one per role, what that
            role perceives (drawn from its observation; the parts it does not perceive greyed,
            :data:`jaxcollab.core.picture.UNSEEN`). SVG strings from
            :mod:`jaxcollab.core.picture`.
        reel: ``reel(results, run_dir, n) -> [Reel]``: the first ``n`` episodes of each
            environment of a finished run, replayed as ``eval/analyze.py`` does (scripted and
            learned teams from their seeds, LLM teams from their transcripts); ``[]`` for a run
            it cannot replay. ``None``: the family draws no runs (its states only).
        turns: ``turns(record, step) -> {name: svg}``: pictures of what the team decided at
            ``step`` drawn from the episode's transcript record (the maze team's probability
            vectors by round), shown after the state's pictures; the same names at every step.
            ``None``: the transcript is shown as text only.
    """

    pictures: Callable[[Environment, Any, Any], dict[str, str]]
    reel: Callable[[Mapping[str, Any], Path, int], list[Reel]] | None = None
    turns: Callable[[Mapping[str, Any], int], dict[str, str]] | None = None


@dataclasses.dataclass(frozen=True)
class Family:
    """One family's plug-in.

    Attributes:
        name: the prefix of its environment names (``bomb`` in ``bomb/base-1``).
        teams: team name → ``factory(options) -> Team`` (scripted and privileged teams; the
            LLM team is added by the LLM run for every family with an :attr:`llm` game, the
            ``learned`` team by :mod:`jaxcollab.marl` for every family with an :attr:`rl`
            view).
        evaluate: ``evaluate(env_names, team, spec) -> dict``, the family's ``results.json``
            keys (documented in its docstring); plays ``team`` through
            :func:`jaxcollab.scale.preempt.resumable_episodes`. ``None``: no team plays this
            family by rollout (e.g. parity, whose teams are trained).
        export: ``export(env_name, n, seed, options) -> list[dict]`` JSON-ready instances
            ``0..n-1`` (records start as :func:`jaxcollab.core.export.record`); ``None``: none.
        llm: the LLM game, or ``None`` when language models cannot play this family.
        config: the dataclass of the run-config keys this family reads beside the common
            ones, with their defaults (e.g. the bomb's ``bank`` and ``bomb`` block); a run's
            schema holds every family's (:func:`jaxcollab.io.schema.with_families`), a run on
            another family refuses a non-default value of one of them, and the family reads
            them as attributes (:func:`jaxcollab.core.config.typed`). ``None``: none.
        export_config: likewise, the keys its exporter reads (``eval/export.py``).
        schemas: the config schemas of the entry points this family owns, by config name
            (registered as ``<name>_schema``, :mod:`jaxcollab.io.schema`; the maze's
            ``collabgap``).
        check: ``check(env_names, options)`` raising ``ConfigValueError`` on a bad option.
        analysis: the trace analysis of its finished runs, or ``None``.
        bounds: its information bounds, or ``None``.
        rl: its RL view, or ``None`` (``jaxcollab.marl`` adds the ``learned`` team to every
            family with one).
        task: its round-trainer task (``task=<name>``), or ``None``.
        example: one environment of the family, the one tests play when they cover every
            family (small and quick).
        report: ``report() -> sections``: the family's own sections of a run's report
            (:class:`jaxcollab.report.sections.Section`, each placed after the section its
            ``after`` names), or ``None``.
        tables: ``tables() -> {paper: tables}``: the tables of the papers this family
            reproduces (``eval/tables.py paper=<paper>``), each a
            :class:`jaxcollab.report.assemble.PaperTable` built from finished runs; ``None``:
            none.
        draw: its state pictures and the replay of its runs' episodes, or ``None``.
    """

    name: str
    teams: Mapping[str, Callable[[Mapping[str, Any]], Team]] = dataclasses.field(
        default_factory=dict)
    evaluate: Callable[[Sequence[str], Team, Spec], dict] | None = None
    export: Callable[[str, int, int, Mapping[str, Any]], list[dict]] | None = None
    llm: LLMGame | None = None
    config: type | None = None
    export_config: type | None = None
    schemas: Mapping[str, type] = dataclasses.field(default_factory=dict)
    check: Callable[[Sequence[str], Mapping[str, Any]], None] = lambda names, options: None
    analysis: Analysis | None = None
    bounds: Bounds | None = None
    rl: RL | None = None
    task: RoundTask | None = None
    example: str = ""
    report: Callable[[], Sequence[Any]] | None = None
    tables: Callable[[], Mapping[str, Sequence[Any]]] | None = None
    draw: Draw | None = None

    def keys(self) -> list[str]:
        """The names of the run-config keys this family reads beside the common ones."""
        return [] if self.config is None else [f.name for f in dataclasses.fields(self.config)]

    def defaults(self) -> dict[str, Any]:
        """Those keys at their defaults, as a plain mapping (nested blocks as dicts)."""
        return {} if self.config is None else dataclasses.asdict(self.config())

    def team(self, name: str, options: Mapping[str, Any]) -> Team:
        """The scripted team ``name`` under ``options``.

        Raises:
            KeyError: not a team of this family (lists the valid ones).
        """
        if name not in self.teams:
            raise KeyError(f"unknown {self.name} team {name!r}; valid: {', '.join(self.teams)}")
        return self.teams[name](options)


__all__ = ["RL", "Analysis", "Bounds", "Draw", "EpisodeId", "Family", "LLMGame", "Reel",
           "RoundTask", "Scores", "ScriptedTeam", "Spec", "TaskConfig", "Team", "Theory"]
