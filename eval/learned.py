"""Learned teams beside scripted teams, environment by environment: a team trained from scratch
on each environment, then it and every scripted team of its family on the same episodes.

``python eval/learned.py envs=[bomb/base-1,bomb/carving-1,ktane/wires] preset=cpu updates=100
out_dir=DIR``

For each environment of ``envs`` (names or groups; default: each bomb family's ``-1`` variant
and five single Keep-Talking modules, :data:`jaxcollab.io.schema.LEARNED_ENVS`):

1. **train** — ``train/marl.py``'s run (its trainer, checkpoints, curve, ``team/``) into
   ``out_dir/runs/<env>/`` with the sweep's training keys and ``preset`` (the same group as
   ``train/marl.py``'s). ``ppo.dial`` applies where the environment's RL view has a symbol
   inbox (the bomb views) and is off elsewhere, which the trainer refuses. Runs are called in
   this process, one after another: each compiles its own programs either way, a process per
   environment would add its start-up (JAX, the families) to each, and the compiled programs
   of a finished environment are dropped (``jax.clear_caches``) before the next;
2. **play** — the learned team (:func:`jaxcollab.marl.team.as_team`) and each scripted team of
   the family (``teams``; null: all the plug-in offers) through the family's own evaluation
   (the ``eval/rollout.py`` driver's): ``eval_episodes`` held-out episodes of ``eval_seed``
   (every team the same episodes, the same turn orders), and, where the family has the bank
   protocol (SANZARU Tables 4, 10-12; the bomb), 3 bank instances x ``repeats``;
3. **read** — ``runs``: finished ``eval/rollout.py`` runs (an LLM team, say) on one of the
   environments, shown as one more team (held-out column, or the bank column for a
   ``bank=true`` run).

Logging: ``logger`` (``train/collab.py``'s options; wandb offline by default) is each training
run's: one wandb run per environment with its curve and losses, and its progress bar per
chunk (environment steps/s, ETA).

Resumable: an environment whose training run finished is not retrained (its config must match,
else the run is refused naming the key), a killed training run resumes after its last chunk,
played episodes are kept per chunk under ``out_dir/episodes/``, and an environment already in
``results.json`` is skipped; ``envs``, ``teams`` and ``runs`` may change on a rerun (rows are
added), every other key may not.

Writes into ``out_dir``: ``results.json`` (``config``, ``run``, ``envs.<name>``: ``family``,
``run_dir``, ``learned`` (``success_rate`` and ``episodes`` held out, ``bank_success_rate`` and
``bank_episodes`` where the family has the bank protocol, ``env_steps`` trained per seed,
``curve``: ``updates``, ``env_steps``, ``heldout_success`` and ``train_success`` averaged over
seeds, ``wall_seconds`` of its training run, ``over_seeds``: every seed's held-out success (the
trainer's greedy evaluation on the same episodes), their mean and its 90 % Student-t interval
(:func:`jaxcollab.io.seeds.over_seeds`), and ``results.heldout`` / ``results.bank``: the
family evaluation's whole results, as ``eval/rollout.py`` writes them), ``teams.<team>`` (the
same success and ``results`` keys) and ``runs.<label>`` (the ``runs`` read)),
``learned.md`` (the table) and ``learned.png`` (every learning curve, scripted teams' held-out
success as reference lines: :func:`jaxcollab.io.plots.learned_plot`).
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
from omegaconf import DictConfig, OmegaConf

import jaxcollab
from jaxcollab.core.errors import ConfigValueError
from jaxcollab.core.family import Family, Spec, Team
from jaxcollab.io.plots import learned_plot
from jaxcollab.io.results import ResultsFile
from jaxcollab.io.run import env_selection, guard_results, hydra_main, start_run, validate
from jaxcollab.io.schema import Marl
from jaxcollab.io.seeds import over_seeds
from jaxcollab.marl import run as trainer
from jaxcollab.marl.team import as_team
from jaxcollab.marl.views import view_of

#: The sweep's keys each training run takes as they are (``ppo`` too, with its ``env``).
TRAIN_KEYS = ("seed", "updates", "chunk", "eval_episodes", "eval_seed", "logger")
#: Keys a rerun may change: they add rows (or logs) without changing any.
FREE = ("envs", "teams", "runs", "logger")


def env_names(cfg: DictConfig) -> list[str]:
    """Every environment ``envs`` names (groups expanded), in order, once each.

    Raises:
        ConfigValueError: an entry that is neither an environment nor a group.
    """
    return list(dict.fromkeys(n for s in cfg.envs for n in env_selection("envs", s)))


def run_dir(out: Path, env: str) -> Path:
    """Where ``env``'s training run lives: ``out/runs/<env with / as ->``."""
    return Path(out) / "runs" / env.replace("/", "-")


def train_config(cfg: DictConfig, env: str) -> DictConfig:
    """``train/marl.py``'s config of ``env`` in this sweep, validated (:class:`Marl`)."""
    ppo = OmegaConf.to_container(cfg.ppo)
    view = view_of(env, ppo["symbols"], ppo["alphabet"])
    ppo.update(env=env, dial=ppo["dial"] and view.inbox is not None)
    node = OmegaConf.merge(OmegaConf.structured(Marl), {k: cfg[k] for k in TRAIN_KEYS},
                           {"env": env, "ppo": ppo, "out_dir": str(run_dir(cfg.out_dir, env))})
    return validate(node)


def scripted_teams(cfg: DictConfig, family: Family) -> list[str]:
    """The scripted teams ``teams`` asks of ``family`` (null: all of them)."""
    offered = list(family.teams)
    return offered if cfg.teams is None else [t for t in cfg.teams if t in offered]


def check_config(cfg: DictConfig) -> None:
    """Cross-key checks, before any work: every environment's training config
    (``train/marl.py``'s checks: an RL view exists, ``ppo.turn_order``, ...), the teams and the
    runs.

    Raises:
        ConfigValueError: naming the key and value.
    """
    names = env_names(cfg)
    for name in names:
        try:
            tcfg = train_config(cfg, name)
        except ConfigValueError:
            raise
        except (KeyError, ValueError) as e:  # no RL view, or none with these ppo sizes
            raise ConfigValueError("envs", name, f"an environment with an RL view ({e})") \
                from None
        trainer.check_config(tcfg)
        if jaxcollab.family(name).evaluate is None:
            raise ConfigValueError("envs", name, "an environment whose family plays teams")
    offered = {t for n in names for t in jaxcollab.family(n).teams}
    unknown = sorted(set(cfg.teams or ()) - offered)
    if unknown:
        raise ConfigValueError("teams", unknown, f"scripted teams of these families: "
                               f"{sorted(offered)}")
    for path in cfg.runs:
        try:
            env = json.loads(Path(path).read_text())["env"]
        except (OSError, ValueError, KeyError) as e:
            raise ConfigValueError("runs", path, f"a finished eval/rollout.py results.json ({e})")\
                from None
        if env not in names:
            raise ConfigValueError("runs", path, f"a rollout run on one of envs (it is on {env})")


def train(cfg: DictConfig, env: str) -> dict:
    """``env``'s finished training run: loaded when done (same config, or refused), else run
    (resuming its last chunk)."""
    tcfg = train_config(cfg, env)
    done = ResultsFile(run_dir(cfg.out_dir, env) / "results.json")
    if "success_rate" in done.data:
        guard_results(done, OmegaConf.to_container(tcfg), trainer.FROZEN)
        print(f"{env}: trained (kept {done.path})")
        return done.data
    return trainer.run(tcfg)


def play(cfg: DictConfig, family: Family, env: str, team: Team, save: Path) -> dict:
    """``team`` on ``env``'s held-out episodes and, where ``family`` has it, the bank
    protocol: ``success_rate``, ``episodes`` (and ``bank_success_rate``, ``bank_episodes``), and
    under ``results.heldout`` (``.bank``) the family evaluation's own keys (its endings or
    outcomes, rounds, strikes, ...; timing aside: it is not a property of the episodes)."""
    options = {**family.defaults(), "turn_order": cfg.ppo.turn_order}
    specs = {"heldout": options}
    if "bank" in family.keys():
        specs["bank"] = {**options, "bank": True, "repeats": cfg.repeats}
    results = {}
    for name, opts in specs.items():
        out = family.evaluate([env], team, Spec(cfg.eval_episodes, cfg.eval_seed,
                                                save_dir=save / name, options=opts))
        results[name] = {k: v for k, v in out.items() if k != "episodes_per_second"}
    row = {"success_rate": results["heldout"]["success_rate"],
           "episodes": results["heldout"]["episodes"]}
    if "bank" in results:
        row |= {"bank_success_rate": results["bank"]["success_rate"],
                "bank_episodes": results["bank"]["episodes"]}
    return {**row, "results": results}


def mean_over_seeds(rows: list[list[float]]) -> list[float]:
    return [sum(r) / len(r) for r in rows]


def env_results(cfg: DictConfig, env: str, kept: dict) -> dict:
    """Train (or load) ``env``'s team, then play it and each scripted team not in ``kept``
    (the rows of an earlier command)."""
    family = jaxcollab.family(env)
    trained = train(cfg, env)
    out = Path(cfg.out_dir) / "episodes" / env.replace("/", "-")
    curve = trained["curve"]
    learned = kept.get("learned") or {
        **play(cfg, family, env, as_team(run_dir(cfg.out_dir, env) / "team"), out / "learned"),
        "env_steps": curve["env_steps"][-1], "updates": curve["updates"][-1],
        "curve": {"updates": curve["updates"], "env_steps": curve["env_steps"],
                  "heldout_success": mean_over_seeds(curve["heldout_success"]),
                  "train_success": mean_over_seeds(curve["train_success"])},
        "wall_seconds": trained["wall_seconds"],
        "over_seeds": over_seeds(trained["success_rate_per_seed"])}
    teams = {}
    for name in scripted_teams(cfg, family):
        teams[name] = kept.get("teams", {}).get(name) or play(
            cfg, family, env, family.team(name, family.defaults()), out / name)
        print(f"{env} {name}: success {teams[name]['success_rate']:.3f}")
    return {"family": family.name, "run_dir": str(run_dir(cfg.out_dir, env)),
            "learned": learned, "teams": teams}


def read_runs(paths: list[str], envs: dict[str, dict]) -> None:
    """Set each environment's ``runs``: the finished rollout runs on it, labelled by agent,
    model and path (a ``bank=true`` run's rate under ``bank_success_rate``)."""
    for e in envs.values():
        e["runs"] = {}
    for path in paths:
        data = json.loads(Path(path).read_text())
        label = " ".join(str(x) for x in (data.get("agent"), data.get("model")) if x)
        key = "bank_success_rate" if data["config"].get("bank") else "success_rate"
        envs[data["env"]]["runs"].setdefault(f"{label} ({path})", {})[key] = data["success_rate"]


def markdown(envs: dict[str, dict]) -> str:
    """One row per environment: the learned team's success (seed 0's), the mean over seeds with
    its 90 % interval (``–``: a row from before it was recorded), training steps, then each
    team's and each run's (``held-out / bank`` where the family has the bank protocol; ``–``:
    not played)."""
    columns = list(dict.fromkeys(t for e in envs.values() for t in {**e["teams"], **e["runs"]}))
    fmt = lambda r: "–" if r is None else f"{r:.3f}"  # noqa: E731

    def cell(row: dict | None, bank: bool) -> str:
        if row is None:
            return "–"
        return fmt(row.get("success_rate")) + (f" / {fmt(row.get('bank_success_rate'))}"
                                               if bank else "")

    def seeds(over: dict | None) -> str:  # mean [90 % interval] (n); one seed: its value
        if over is None:
            return "–"
        if over["low"] is None:
            return f"{over['mean']:.3f} (1)"
        return f"{over['mean']:.3f} [{over['low']:.3f}, {over['high']:.3f}] ({over['seeds']})"

    head = ["env", "learned", "learned, seeds", "env steps / seed", *columns]
    rows = []
    for name, e in envs.items():
        bank, others = "bank_success_rate" in e["learned"], {**e["teams"], **e["runs"]}
        rows.append(f"| {name} | {cell(e['learned'], bank)} | "
                    f"{seeds(e['learned'].get('over_seeds'))} | {e['learned']['env_steps']:,} |"
                    + "".join(f" {cell(others.get(t), bank)} |" for t in columns))
    return "\n".join(["Success rate on the held-out episodes / on the bank protocol (where the "
                      "family has one); learned: seed 0's team; learned, seeds: every seed's "
                      "held-out success, mean [90 % t interval] (seeds).", "",
                      "| " + " | ".join(head) + " |",
                      "|---" * len(head) + "|", *rows, ""])


def run(cfg: DictConfig) -> dict:
    """Check, then per environment train, play and write; returns the results."""
    job = start_run(cfg, check=check_config, free=FREE, log=False)  # each training run logs
    cfg, out = job.cfg, job.out
    names = env_names(cfg)
    kept = job.results.data.get("envs", {})
    envs = {}
    for i, name in enumerate(names):
        row, teams = kept.get(name, {}), scripted_teams(cfg, jaxcollab.family(name))
        if "learned" in row and set(teams) <= set(row.get("teams", ())):  # teams=[] too
            print(f"[{i + 1}/{len(names)}] {name}: done (kept in {job.results.path})")
            envs[name] = {**row, "teams": {t: row["teams"][t] for t in teams}}
            continue
        print(f"[{i + 1}/{len(names)}] {name}")
        envs[name] = env_results(cfg, name, row)
        job.results.set(("envs",), {n: envs.get(n, kept.get(n)) for n in names
                                    if n in envs or n in kept})
        jax.clear_caches()  # this env's compiled programs: none serves the next
    envs = {n: envs[n] for n in names}
    read_runs(list(cfg.runs), envs)
    job.results.set(("envs",), envs)
    (out / "learned.md").write_text(markdown(envs))
    learned_plot(envs, out / "learned.png")
    print(markdown(envs))
    print(f"wrote {job.results.path}, learned.md, learned.png")
    job.finish()
    return job.results.data


main = hydra_main(run, "../configs/marl", "learned")


if __name__ == "__main__":
    main()
