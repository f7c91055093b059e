"""Self-play and other-play: every assignment of a list of models to a family's roles.

``python eval/otherplay.py env=ktane/missions/single ktane.mode=sync models=[A,B] episodes=1
llm.base_url=URL out_dir=DIR``

plays every ordered (Defuser, Expert) pair of ``models`` (GPTNT §7: all pairwise combinations,
single-module missions, sync mode); ``env=bomb/<variant> models=[A,B,C]`` plays every
(Deaf, Mute, Blind) trio (SANZARU's roles from different models: mixed trios are ours, the
paper's trios are one model each), n³ assignments. A model entry
``NAME@BASE_URL`` names its own endpoint (a local model beside a hosted one), sent no API key,
or ``NAME@BASE_URL@VAR`` with the key in environment variable ``VAR`` (``llm.api_key_env``'s
key only ever goes to ``llm.base_url``); every other argument is an ``eval/rollout.py``
override shared by all assignments (``agent=llm`` is implied; ``llm.*`` is the shared endpoint
and sampling).

Each assignment is one ``eval/rollout.py`` run with ``llm.roles.<role>.model`` set, in its own
directory ``DIR/runs/<i>-<role>-<model>_…`` (results.json, request cache, transcripts), so a
killed command rerun resumes: finished assignments are read back, not replayed, and an
unfinished one resumes its own chunks. ``DIR/results.json`` (``eval.otherplay`` keys):
``models``, ``roles``, ``runs`` (per assignment: ``roles`` role → model, ``dir``,
``episodes``, ``success_rate``, ``communication_rate``), ``success_by_role`` (role → model →
mean success over the assignments where it holds the role), ``communication`` (model →
``self`` and, per role, ``other_as_<role>``: GPTNT Table 7's rates, % game steps with a message,
pooled over episodes; families with a communication count only) and, for two roles,
``success_matrix`` (first role's model → second's → success rate: GPTNT Table 6). The plot
``DIR/otherplay.png`` shows the matrix (two roles) and the success by role.
"""

from __future__ import annotations

import itertools
import json
import re
import sys
from pathlib import Path

import numpy as np

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def parse_args(argv: list[str]) -> tuple[list[str], str, list[str]]:
    """``(models, out_dir, rollout overrides)`` of the command line.

    Raises:
        ConfigValueError: fewer than two ``models``, a model named twice (entries with the
            same name, whatever their endpoint: the tables are by name), or no ``out_dir``.
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from jaxcollab.core.errors import ConfigValueError

    models, out_dir, rest = None, None, []
    for arg in argv:
        key = arg.split("=", 1)[0]
        if key == "models":
            value = OverridesParser.create().parse_override(arg).value()
            models = [str(m) for m in (value if isinstance(value, list) else [value])]
        elif key == "out_dir":
            out_dir = arg.split("=", 1)[1]
        else:
            rest.append(arg)
    names = [_label(m) for m in models or []]
    if len(set(names)) < 2 or len(set(names)) != len(names):
        raise ConfigValueError("models", models, "two or more distinct model names, e.g. "
                               "models=[A,B] (an entry may be NAME@BASE_URL[@KEY_VAR]): "
                               "other-play pairs different models (one model's self-play is "
                               "eval/rollout.py agent=llm)")
    if not out_dir:
        raise ConfigValueError("out_dir", out_dir, "a directory for the runs and results.json")
    return models, out_dir, rest


def _label(entry: str) -> str:
    """A model entry's name (``NAME@BASE_URL[@VAR]`` → ``NAME``)."""
    return entry.split("@", 1)[0]


def _role_overrides(role: str, entry: str) -> list[str]:
    """``llm.roles.<role>`` overrides of a model entry: its model and, for ``NAME@URL[@VAR]``,
    its endpoint and the variable holding its key (none: no key is sent there)."""
    name, *endpoint = entry.split("@")
    out = [f"+llm.roles.{role}.model={json.dumps(name)}"]
    if endpoint:
        key = endpoint[1] if len(endpoint) > 1 else ""
        out += [f"+llm.roles.{role}.base_url={json.dumps(endpoint[0])}",
                f"+llm.roles.{role}.api_key_env={json.dumps(key)}"]
    return out


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)


def assignments(models: list[str], roles: tuple[str, ...]) -> list[dict[str, str]]:
    """Every assignment of ``models`` to ``roles`` (role → model entry), self-play ones
    included, in ``itertools.product`` order."""
    return [dict(zip(roles, combo)) for combo in itertools.product(models, repeat=len(roles))]


def _finished(sub: Path, config: dict) -> dict | None:
    """The results of a finished sub-run with this config, or None."""
    path = sub / "results.json"
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    done = "success_rate" in data and not data.get("stopped") and data.get("config") == config
    return data if done else None


def _communication(family, sub: Path, env_names: list[str]) -> tuple[int, int]:
    """``(steps with a message, steps)`` summed over a sub-run's transcripts."""
    from jaxcollab.llm.run import read_transcripts, transcript_path

    counts = [family.llm.communication(r) for name in env_names
              for r in read_transcripts(transcript_path(sub, name))]
    return sum(c[0] for c in counts), sum(c[1] for c in counts)


def summarize(models: list[str], roles: tuple[str, ...], runs: list[dict]) -> dict:
    """The cross-play tables of finished ``runs`` (module docstring keys)."""
    labels = [_label(m) for m in models]
    by_role = {role: {m: float(np.mean([r["success_rate"] for r in runs
                                        if r["roles"][role] == m]))
                      for m in labels} for role in roles}
    out: dict = {"success_by_role": by_role}
    if len(roles) == 2:
        first, second = roles
        out["success_matrix"] = {a: {b: next(r["success_rate"] for r in runs
                                             if r["roles"] == {first: a, second: b})
                                     for b in labels} for a in labels}
    if all("messages" in r for r in runs):
        comm = {}
        for m in labels:
            selfplay = [r for r in runs if set(r["roles"].values()) == {m}]
            row = {"self": _rate(selfplay)}
            for role in roles:
                row[f"other_as_{role}"] = _rate([r for r in runs if r["roles"][role] == m
                                                 and set(r["roles"].values()) != {m}])
            comm[m] = row
        out["communication"] = comm
    return out


def _rate(runs: list[dict]) -> float | None:
    steps = sum(r["steps"] for r in runs)
    return sum(r["messages"] for r in runs) / steps if steps else None


def plot(results: dict, path: Path) -> None:
    """``path``: the success matrix (two roles) and success by role (GPTNT Table 6 layout)."""
    from jaxcollab.io.plots import heatmap_panels

    roles, labels = results["roles"], [_label(m) for m in results["models"]]
    panels = []
    if "success_matrix" in results:
        matrix = results["success_matrix"]
        panels.append({"values": [[matrix[a][b] for b in labels] for a in labels],
                       "rows": labels, "cols": labels, "ylabel": roles[0], "xlabel": roles[1],
                       "title": f"success rate: {roles[0]} x {roles[1]}"})
    by_role = results["success_by_role"]
    panels.append({"values": [[by_role[r][m] for r in roles] for m in labels],
                   "rows": labels, "cols": list(roles), "ylabel": "model", "xlabel": "role",
                   "title": "mean success rate by role"})
    heatmap_panels(path, panels, title=f"{results['env']}: self- and other-play")


def run(argv: list[str]) -> dict:
    """Play every assignment (resuming), write ``results.json`` and the plot; returns it.

    Raises:
        ConfigValueError: a bad argument (names it), or a family without an LLM game.
        RunCollision: ``out_dir`` holds another cross-play run (other models or overrides),
            or a sub-run directory holds a run with another config.
    """
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from jaxcollab.agents.driver import plug_in
    from jaxcollab.agents.driver import run as rollout
    from jaxcollab.core.errors import ConfigValueError
    from jaxcollab.io.results import ResultsFile
    from jaxcollab.io.run import guard_results, validate
    from jaxcollab.scale.distributed import run_info

    models, out_dir, rest = parse_args(argv)
    out = Path(out_dir)
    top = ResultsFile(out / "results.json")
    guard_results(top, {"models": models, "overrides": rest}, None)
    with initialize_config_dir(config_dir=str(CONFIGS), version_base=None):
        base = compose("rollout", overrides=[*rest, "out_dir=."])
        env = base.env
        names, family = plug_in(env)
        if family.llm is None or not family.llm.roles:
            raise ConfigValueError("env", env, "an environment whose family has an LLM team "
                                   "with named roles (bomb, ktane, maze)")
        roles = family.llm.roles
        top.update({"config": {"models": models, "overrides": rest}, "run": run_info(),
                    "env": env, "models": models, "roles": list(roles)})
        runs = []
        for i, team in enumerate(assignments(models, roles)):
            sub = out / "runs" / "-".join([f"{i:02d}", *(f"{r}-{_safe(_label(m))}"
                                                          for r, m in team.items())])
            overrides = [*rest, "agent=llm", f"out_dir={json.dumps(str(sub))}",
                         *(o for r, m in team.items() for o in _role_overrides(r, m))]
            cfg = compose("rollout", overrides=overrides)
            data = _finished(sub, OmegaConf.to_container(validate(cfg)))
            if data is None:
                print(f"[{i + 1}/{len(models) ** len(roles)}] " + ", ".join(
                    f"{r}={_label(m)}" for r, m in team.items()), flush=True)
                data = rollout(cfg)
            row = {"roles": {r: _label(m) for r, m in team.items()}, "dir": str(sub),
                   "episodes": data["episodes"], "success_rate": data["success_rate"]}
            if family.llm.communication is not None:
                row["messages"], row["steps"] = _communication(family, sub, names)
                row["communication_rate"] = row["messages"] / max(row["steps"], 1)
            runs.append(row)
            top.update({"runs": runs})
    top.update(summarize(models, roles, runs))
    plot(top.data, out / "otherplay.png")
    print({"success_by_role": top.data["success_by_role"]}, f"-> {top.path}")
    return top.data


if __name__ == "__main__":
    from jaxcollab.io.run import USER_ERRORS

    if {"-h", "--help"} & set(sys.argv[1:]):
        print(__doc__)
    else:
        try:
            run(sys.argv[1:])
        except USER_ERRORS as e:  # a bad argument: its message, no trace (as every entry point)
            sys.exit(f"Error: {e}")
