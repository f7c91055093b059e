"""Perspective flags of a finished bomb rollout run (SANZARU Table 6, the deterministic flags).

``python eval/analyze.py run=DIR`` reads ``DIR/results.json`` of a finished ``eval/rollout.py``
run of a scripted bomb team, replays its episodes with traces from the recorded config (``env``,
``agent``, ``episodes``, ``seed``: the same episodes; the replay's success rates are checked
against the run's) and writes ``DIR/analysis.json``: ``flags`` (``dead_channel``,
``wrong_round``, ``omission``: share of lost episodes carrying each flag) overall and per
variant, and ``lost_episodes`` (variant, episode, turn order, ending, flags, messages and
symbols of each lost episode). See :mod:`jaxcollab.envs.bomb.flags` for the definitions.
"""

from __future__ import annotations

import json
from pathlib import Path

import hydra
import numpy as np
from omegaconf import DictConfig

from jaxcollab.agents.bomb.traces import episode_traces
from jaxcollab.envs.bomb import tables as T
from jaxcollab.envs.bomb.bounds import order_name
from jaxcollab.envs.bomb.flags import FLAGS, shares
from jaxcollab.envs.bomb.params import TURN_ORDERS
from jaxcollab.io.run import env_selection, start_run
from jaxcollab.io.schema import ConfigValueError


def recorded(run_dir: str) -> dict:
    """The finished run's results, checked to be a replayable bomb rollout.

    Raises:
        ConfigValueError: no results.json, not a bomb rollout, a bank run, or a team that
            cannot be replayed (not a scripted team).
    """
    from jaxcollab.agents.bomb import TEAMS

    path = Path(run_dir) / "results.json"
    if not path.is_file():
        raise ConfigValueError("run", run_dir, "a finished run directory with results.json")
    data = json.loads(path.read_text())
    cfg = data.get("config", {})
    if not all(k in cfg for k in ("env", "agent", "episodes", "seed")):
        raise ConfigValueError("run", run_dir, "an eval/rollout.py run (config with env, agent, "
                               "episodes, seed)")
    if not str(cfg["env"]).startswith("bomb/"):
        raise ConfigValueError("run", run_dir, f"a bomb run, not env={cfg['env']}")
    if cfg.get("bank"):
        raise ConfigValueError("run", run_dir, "a rollout run without bank=true (bank runs pin "
                               "instances; analyse them from their own episodes)")
    if cfg["agent"] not in TEAMS:
        raise ConfigValueError("run", run_dir, f"a run of a scripted team {list(TEAMS)}, not "
                               f"agent={cfg['agent']}")
    return data


def _episode(traces: dict, i: int, names: list[str]) -> dict:
    return {"variant": names[int(traces["variant"][i])], "episode": int(traces["episode"][i]),
            "turn_order": order_name(TURN_ORDERS[int(traces["turn_order"][i])]),
            "ending": T.ENDING_NAMES[int(traces["ending"][i])],
            "rounds": int(traces["rounds"][i]), "messages": int(traces["messages"][i]),
            "symbols": int(traces["symbols"][i]),
            **{f: bool(traces[f][i]) for f in FLAGS}}


def analyse(data: dict, chunk: int) -> dict:
    """Replay the run in ``data`` and return its analysis.

    Raises:
        RuntimeError: the replay's per-variant success rates differ from the run's (the
            episodes could not be reproduced).
    """
    cfg = data["config"]
    names = env_selection("env", cfg["env"])
    traces = episode_traces(names, cfg["agent"], cfg["episodes"], cfg["seed"], chunk,
                            progress=True, turn_order=cfg.get("turn_order", "cycle"))
    variants = {}
    for i, name in enumerate(names):
        mine = traces["variant"] == i
        rate = float(traces["success"][mine].mean())
        want = data.get("variants", {}).get(name, {}).get("success_rate")
        if want is not None and not np.isclose(rate, want):
            raise RuntimeError(f"replay of {name} defused {rate:.4f} of episodes, the run "
                               f"{want:.4f}: the run's episodes could not be reproduced")
        variants[name] = shares({k: v[mine] for k, v in traces.items()})
    lost = np.flatnonzero(traces["lost"])
    return {"env": cfg["env"], "agent": cfg["agent"], "episodes": int(len(traces["lost"])),
            **shares(traces), "variants": variants,
            "lost_episodes": [_episode(traces, int(i), names) for i in lost]}


def run(cfg: DictConfig) -> dict:
    """Check the run, replay it and write ``analysis.json`` into it; returns the analysis."""
    job = start_run(cfg, frozen=["run"], check=lambda c: recorded(c.run), out_key="run",
                    results_name="analysis.json")  # the chunk size changes nothing
    analysis = analyse(recorded(job.cfg.run), job.cfg.chunk)
    job.results.update(analysis)
    print({"lost": analysis["lost"], **analysis["shares"]}, f"-> {job.results.path}")
    return job.results.data


main = hydra.main(version_base=None, config_path="../configs", config_name="analyze")(run)


if __name__ == "__main__":
    main()
