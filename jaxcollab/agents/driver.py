"""The rollout driver behind ``eval/rollout.py``: a team (scripted, oracle, learned or LLM) on an
environment or group, writing ``results.json``.

``python eval/rollout.py env=bomb/all agent=oracle episodes=1024 seed=0 out_dir=DIR``
``python eval/rollout.py env=bomb/all agent=llm llm.base_url=URL llm.model=NAME episodes=9``

The environment's family plug-in (:func:`jaxcollab.family`, :mod:`jaxcollab.core.family`)
provides its teams, its config keys and its evaluation, whose docstring documents the family's
``results.json`` keys (``jaxcollab.agents.<family>.evaluate``); ``agent=llm`` is the LLM team
of every family with an LLM game (:mod:`jaxcollab.llm.run`), played through the same
evaluation and adding ``model``, ``base_url``, ``parse_errors``, ``refusals``, ``tokens``,
``latency_s`` (and the family's LLM keys; ``roles`` for a mixed team, whose
``+llm.roles.<role>.model=…`` gives one role its own model: :mod:`jaxcollab.llm.roles`, and
``eval/otherplay.py`` plays every assignment of a model list). This script checks the config
(:mod:`jaxcollab.io.run`: schema, the family's checks, and that the options of other families
keep their defaults), refuses an ``out_dir`` holding a run with another config (naming the
differing key; the ``llm`` pacing keys ``concurrency``, ``timeout_s``, ``max_retries``,
``backoff_s`` may change on a rerun), runs it and writes ``results.json`` (the results plus
``env``, ``config`` and ``run``; an LLM run stopped by a signal also writes the results of its
finished chunks there, marked ``"stopped": true``).

Episodes are played ``chunk`` at a time and each finished chunk is kept in
``out_dir/episodes/``. SIGTERM or SIGINT (a scheduler's preemption, Ctrl-C) stops the run within
moments, also while XLA compiles a chunk (the chunk in play is dropped, the finished ones kept;
a group's remaining environments are not started), and exits with status 128 + the signal
number (143 for SIGTERM, 130 for SIGINT) and no traceback; rerunning the same command with the
same ``out_dir`` loads the finished chunks, plays the rest and writes the results of an
uninterrupted run
(:func:`jaxcollab.scale.preempt.resumable_episodes`; ``episodes_per_second`` then counts the
chunks played by the last command only). An LLM run also keeps its request cache and
transcripts in ``out_dir`` (a chunk killed half-way replays from the cache for free).

The paper's protocol on the instance bank (bomb; SANZARU Tables 4, 10-12)::

    python eval/rollout.py env=bomb/all agent=symbol bank=true repeats=3 \\
        [turn_order=[mute,deaf,blind]] [solo=solo | solo=DIR/results.json]

plays 3 bank instances x ``repeats`` per variant (``episodes`` is ignored);
``results.json`` adds ``summary.core`` / ``plus`` / ``all`` / ``families.<family>`` and, with
``solo`` (a team played on the same episodes, or an earlier bank run's ``results.json``),
``summary.solo`` and ``summary.gap`` (solo minus trio success rate).

Keep-Talking rules (ours; GPTNT §7 leaves randomised rules to future work)::

    python eval/rollout.py env=ktane/wires agent=oracle ruleset=random ruleset_seed=3

plays under a ruleset whose every rule table is redrawn from ``ruleset_seed``
(:mod:`jaxcollab.envs.ktane.ruleset`); ``ruleset=vanilla`` (the default) is the vanilla manual.
"""

from __future__ import annotations

from omegaconf import DictConfig, OmegaConf
from rich.progress import Progress

import jaxcollab
from jaxcollab.core.errors import ConfigValueError
from jaxcollab.core.family import Family, Spec
from jaxcollab.io.run import env_selection, start_run
from jaxcollab.io.schema import Rollout
from jaxcollab.scale import preempt

#: Keys every family reads; the rest belong to one family's config block.
COMMON = ("env", "agent", "episodes", "seed", "chunk", "out_dir", "llm")
#: Keys a team reads, beside the common ones: read by every family that offers the team
#: (:func:`teams`; ``learned`` is offered by every family with an RL view).
TEAM_KEYS = {"learned": ("checkpoint",)}
#: ``llm`` keys that pace a run without changing it: a rerun may change them and resume.
PACING = ("llm.concurrency", "llm.timeout_s", "llm.max_retries", "llm.backoff_s",
          "llm.stall_s")


def plug_in(env: str) -> tuple[list[str], Family]:
    """``(env names, family plug-in)`` of an ``env=`` value.

    Raises:
        ConfigValueError: unknown environment or group, or a family without teams.
    """
    names = env_selection("env", env)
    try:
        family = jaxcollab.family(names[0])
    except KeyError as e:
        raise ConfigValueError("env", env, f"an environment of a registered family: {e.args[0]}")\
            from None
    foreign = any(n.split("/")[0] != family.name for n in names)
    if family.evaluate is None or not teams(family) or foreign:
        raise ConfigValueError("env", env, "an environment whose family has scripted agents or "
                               "an LLM game (bomb, ktane, maze), one family per run")
    return names, family


def teams(family: Family) -> list[str]:
    """The team names of ``agent=``: the family's teams, ``learned`` where it has an RL view
    (:func:`jaxcollab.marl.team.learned`) and ``llm`` where it has an LLM game."""
    return (list(family.teams) + (["learned"] if family.rl is not None else [])
            + (["llm"] if family.llm is not None else []))


def family_keys(family: Family) -> list[str]:
    """The run-config keys ``family`` reads beside :data:`COMMON`: its config's
    (:meth:`~jaxcollab.core.family.Family.keys`) and those of the teams it offers
    (:data:`TEAM_KEYS`)."""
    return family.keys() + [key for team in teams(family) for key in TEAM_KEYS.get(team, ())]


def check_config(cfg: DictConfig) -> None:
    """Cross-key checks beyond the schema (:class:`jaxcollab.io.schema.Rollout`).

    Raises:
        ConfigValueError: unknown env or group, an agent that is not a team of its family, a
            non-default value of a key the family does not read (e.g. ``bank=true`` outside the
            bomb, ``ruleset=random`` outside Keep Talking), or a bad family option.
    """
    names, family = plug_in(cfg.env)
    if cfg.agent not in teams(family):
        raise ConfigValueError("agent", cfg.agent, f"a team of {cfg.env}: {teams(family)}")
    defaults = OmegaConf.to_container(OmegaConf.structured(Rollout))
    keys = family_keys(family)
    for key in sorted(set(cfg) - set(COMMON) - set(keys)):
        value = OmegaConf.to_container(cfg[key]) if OmegaConf.is_config(cfg[key]) else cfg[key]
        if value != defaults[key]:
            raise ConfigValueError(key, value, f"{defaults[key]!r}: {cfg.env} does not read "
                                   f"{key!r} (its family's keys: {sorted(keys)})")
    if cfg.agent == "learned":
        from jaxcollab.marl.team import check_learned

        check_learned(names, OmegaConf.to_container(cfg))
    family.check(names, OmegaConf.to_container(cfg))
    if cfg.agent == "llm":
        from jaxcollab.llm.run import team_configs

        try:
            team_configs(family, OmegaConf.to_container(cfg))
        except ConfigValueError:  # a bad value, named by its own key
            raise
        except ValueError as e:  # a role the family lacks, or a bad role key
            raise ConfigValueError("llm.roles", OmegaConf.to_container(cfg.llm.roles),
                                   str(e)) from None


def run(cfg: DictConfig) -> dict:
    """Check, play every episode with the team (resuming finished chunks) and write
    ``results.json``; returns it."""
    job = start_run(cfg, check=check_config, free=PACING)
    cfg = job.cfg
    names, family = plug_in(cfg.env)
    options = OmegaConf.to_container(cfg)
    spec = Spec(cfg.episodes, cfg.seed, cfg.chunk, job.out / "episodes", options)
    with preempt.guard():  # a signal between two environments stops before the next one
        if cfg.agent == "llm":
            results = _llm(cfg, options, spec, job.out)
            job.results.data.pop("stopped", None)  # the stop of an earlier command is resumed
        else:
            results = family.evaluate(names, _team(family, cfg.agent, options), spec)
    job.results.update({"env": cfg.env, **results})
    keys = ("success_rate", "episodes", "episodes_per_second", "refusals", "parse_errors")
    print({k: job.results.data[k] for k in keys if k in job.results.data}, f"-> {job.results.path}")
    return job.results.data


def _team(family: Family, agent: str, options: dict):
    """The team ``agent`` (not ``llm``): ``learned`` from :mod:`jaxcollab.marl`, else the
    family's own."""
    if agent == "learned":
        from jaxcollab.marl.team import learned

        return learned(options)
    return family.team(agent, options)


def _llm(cfg: DictConfig, options: dict, spec: Spec, out) -> dict:
    """The LLM team's run (:func:`jaxcollab.llm.run.run_team`) under a progress bar."""
    from jaxcollab.llm.run import run_team

    with Progress() as bar:
        task = bar.add_task("episodes", total=None)

        def progress(n: int, **postfix: int) -> None:  # postfix: requests, tokens so far
            text = ", ".join(f"{v} {k}" for k, v in postfix.items())
            bar.update(task, advance=n, **({"description": f"episodes ({text})"}
                                           if text else {}))

        return run_team(cfg.env, options, spec, out, progress)
