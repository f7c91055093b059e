"""Information bounds per variant, beside the teams' rounds and symbols, through the family's
plug-in (:attr:`jaxcollab.core.family.Family.bounds`; the bomb family's today).

``python eval/bounds.py env=bomb/all [teams=[onebit,symbol,counting,oracle]] [episodes=12]
[runs=[DIR/results.json]] out_dir=DIR`` writes ``results.json`` (``variants.<name>``:
``min_rounds``, ``min_symbols``, ``rounds_to_guarantee``, ``by_turn_order``, ``route``,
``holders``, ``derivation``, and ``teams.<team>``: ``success_rate``, ``mean_rounds``,
``mean_symbols`` over successful episodes, ``below_bound``), ``bounds.md`` (the table) and
``bounds.png`` (bounds and teams per variant). The bounds and the teams' rows come from the
family (bomb: :mod:`jaxcollab.envs.bomb.bounds`, each team replayed with traces on the episodes
``eval/rollout.py`` plays for the same ``episodes`` and ``seed``); ``runs`` adds the
``mean_rounds`` of finished rollout runs (any team, e.g. an LLM run) under their ``agent``
name.
"""

from __future__ import annotations

import json
from pathlib import Path

from omegaconf import DictConfig

import jaxcollab
from jaxcollab.core.errors import ConfigValueError
from jaxcollab.io.plots import bounds_plot
from jaxcollab.io.run import env_selection, hydra_main, start_run


def _family(env: str):
    """The one family of ``env``'s environments, which has bounds.

    Raises:
        ConfigValueError: environments of several families, or of one without bounds.
    """
    families = {f.name: f for f in map(jaxcollab.family, env_selection("env", env))}
    (family, *rest) = families.values()
    if rest or family.bounds is None:
        raise ConfigValueError("env", env, "variants or groups of one family with information "
                               "bounds (bomb/all)")
    return family


def check_config(cfg: DictConfig) -> None:
    """Raises ConfigValueError: an env outside one family with bounds, an unknown team, or a
    run that is not an existing results file."""
    family = _family(cfg.env)
    unknown = [t for t in cfg.teams if t not in family.teams]
    if unknown:
        raise ConfigValueError("teams", unknown, f"{family.name} teams from "
                               f"{list(family.teams)}")
    missing = [r for r in cfg.runs if not Path(r).is_file()]
    if missing:
        raise ConfigValueError("runs", missing, "existing rollout results.json files")


def _run_rows(path: str, names: list[str]) -> tuple[str, dict]:
    data = json.loads(Path(path).read_text())
    rows = {n: {k: data.get("variants", {}).get(n, {}).get(k)
                for k in ("episodes", "success_rate", "mean_rounds", "mean_symbols")}
            for n in names}
    return f"{data.get('agent', Path(path).parent.name)} ({path})", rows


def markdown(variants: dict[str, dict]) -> str:
    """Variant rows: the bounds, then ``rounds / symbols`` of each team (successful episodes)."""
    teams = list(next(iter(variants.values()))["teams"])
    head = "| variant | min rounds | min symbols | " + " | ".join(teams) + " |"

    def cell(t):
        fmt = lambda x: "–" if x is None else f"{x:.1f}"  # noqa: E731
        return f"{fmt(t['mean_rounds'])} / {fmt(t.get('mean_symbols'))}"

    rows = [f"| {n.split('/', 1)[-1]} | {v['min_rounds']} | {v['min_symbols']} | "
            + " | ".join(cell(v["teams"][t]) for t in teams) + " |" for n, v in variants.items()]
    return "\n".join(["Rounds / symbols per successful episode (teams) and the information "
                      "bounds.", "", head, "|---" * (3 + len(teams)) + "|", *rows, ""])


def run(cfg: DictConfig) -> dict:
    """Compute the bounds, replay every team, write ``results.json``, ``bounds.md`` and
    ``bounds.png``; returns the results."""
    job = start_run(cfg, check=check_config)
    cfg, out = job.cfg, job.out
    names = env_selection("env", cfg.env)
    bounds = _family(cfg.env).bounds
    kept = job.results.data.get("variants", {})  # a rerun keeps the teams already replayed
    variants = {n: {**bounds.variant(n), "teams": kept.get(n, {}).get("teams", {})}
                for n in names}
    job.results.update({"env": cfg.env, "variants": variants})
    for team in cfg.teams:
        if all(team in v["teams"] for v in variants.values()):
            continue
        for n, row in bounds.team(names, team, cfg.episodes, cfg.seed).items():
            variants[n]["teams"][team] = row
        job.results.set(("variants",), variants)
    for path in cfg.runs:
        label, rows = _run_rows(path, names)
        for n, row in rows.items():
            variants[n]["teams"][label] = row
    job.results.set(("variants",), variants)
    if variants and next(iter(variants.values()))["teams"]:
        (out / "bounds.md").write_text(markdown(variants))
        bounds_plot(variants, out / "bounds.png")
    print(f"wrote {job.results.path}")
    return job.results.data


main = hydra_main(run, "../configs", "bounds")


if __name__ == "__main__":
    main()
