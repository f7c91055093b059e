"""Protocol experiment: every scripted bomb team on every variant.

``python eval/protocols.py [teams=[onebit,symbol,counting]] [episodes=60] [out_dir=DIR]`` writes
``results.json`` (``teams.<team>`` holds that team's full rollout results, including endings per
variant), ``protocols.md`` (team x variant success-rate table, and a timed-out table) and
``protocols.png`` (heatmap of success rates). Results are written after each team, so an
interrupted run keeps the teams it finished.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from omegaconf import DictConfig

import jaxcollab
from jaxcollab.core.errors import ConfigValueError
from jaxcollab.core.family import Spec
from jaxcollab.io.plots import heatmap_panels
from jaxcollab.io.run import env_selection, hydra_main, start_run


def table(results: dict[str, dict], key) -> tuple[list[str], np.ndarray]:
    """(variant names, array ``[team, variant]`` of ``key(per-variant results)``)."""
    variants = list(next(iter(results.values()))["variants"])
    rows = [[key(r["variants"][v]) for v in variants] for r in results.values()]
    return variants, np.array(rows, float)


def markdown(results: dict[str, dict]) -> str:
    """Success-rate and timed-out-fraction tables (teams as rows, variants as columns)."""
    out = []
    for title, key in (("Success rate", lambda v: v["success_rate"]),
                       ("Timed out (fraction)",
                        lambda v: v["endings"]["timed_out"] / v["episodes"])):
        variants, values = table(results, key)
        short = [v.removeprefix("bomb/") for v in variants]
        out += [f"### {title}", "", "| team | " + " | ".join(short) + " |",
                "|---|" + "---|" * len(short)]
        out += [f"| {name} | " + " | ".join(f"{x:.2f}" for x in row) + " |"
                for name, row in zip(results, values, strict=True)]
        out.append("")
    return "\n".join(out)


def heatmap(results: dict[str, dict], path: Path) -> None:
    """PNG heatmap of success rates, teams x variants."""
    variants, values = table(results, lambda v: v["success_rate"])
    heatmap_panels(path, [{"values": values, "rows": list(results), "xlabel": "variant",
                           "cols": [v.removeprefix("bomb/") for v in variants], "ylabel": "team",
                           "title": "bomb: scripted team x variant success rate"}])


def check_config(cfg: DictConfig) -> None:
    """Cross-key checks beyond the schema (:class:`jaxcollab.io.schema.Protocols`).

    Raises:
        ConfigValueError: an env outside the bomb families, or an unknown team.
    """
    bomb = jaxcollab.family("bomb")  # the experiment is the bomb's (SANZARU's variants)
    if not all(jaxcollab.family(n) is bomb for n in env_selection("env", cfg.env)):
        raise ConfigValueError("env", cfg.env, "bomb variants or groups (bomb/all)")
    unknown = [t for t in cfg.teams if t not in bomb.teams]
    if unknown:
        raise ConfigValueError("teams", unknown, f"bomb teams from {list(bomb.teams)}")


def run(cfg: DictConfig) -> dict:
    """Run every team in ``teams`` on every variant in ``env``; write the outputs after each
    team; returns the results."""
    job = start_run(cfg, check=check_config)
    cfg, out = job.cfg, job.out
    names = env_selection("env", cfg.env)
    bomb = jaxcollab.family("bomb")
    spec = Spec(cfg.episodes, cfg.seed, options=bomb.defaults())  # turn order: cycle
    job.results.update({"env": cfg.env, "episodes_per_variant": cfg.episodes, "seed": cfg.seed})
    results: dict[str, dict] = {}
    for name in cfg.teams:
        results[name] = bomb.evaluate(names, bomb.team(name, spec.options), spec)
        print(f"{name}: success {results[name]['success_rate']:.3f}")
        job.results.set(("teams",), results)
        (out / "protocols.md").write_text(markdown(results))
        heatmap(results, out / "protocols.png")
    print(f"wrote {out}/protocols.md, protocols.png, results.json")
    return job.results.data


main = hydra_main(run, "../configs", "protocols")


if __name__ == "__main__":
    main()
