"""The Keep-Talking family's trace analysis (``eval/analyze.py``): behaviour of a finished
rollout run (GPTNT §8 and Table 7; :mod:`jaxcollab.analysis.behaviour`).

A scripted team's episodes are replayed by the team with a trajectory
(:func:`jaxcollab.core.rollout.rollout`, the run's episode keys and ruleset); an LLM team's
from its transcripts: each turn's recorded action is decoded as
:class:`~jaxcollab.llm.ktane.KtaneGame` decoded it, put on the step it landed on, and replayed
on the run's keys (:func:`jaxcollab.analysis.replay.replay`). In ``ktane.mode=async`` a
Defuser action lands ``floor(latency / Δ)`` slots after the step its cycle began (its recorded
``step`` and ``latency_s``; Δ = 3 s), the Defuser's steps in between are waits, and an Expert
step carries the last message of the cycles recorded on it (:mod:`jaxcollab.llm.ktane`). Either
replay must end every episode as the run did, else the analysis refuses.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import jax
import numpy as np
from rich.progress import track

from jaxcollab.analysis.behaviour import behaviour, episode_steps
from jaxcollab.analysis.replay import replay, rollout_config
from jaxcollab.core.registry import make, resolve
from jaxcollab.core.rollout import episode_keys, rollout
from jaxcollab.envs.ktane import tables as KT
from jaxcollab.envs.ktane.ruleset import make_ruleset
from jaxcollab.io.schema import ConfigValueError


def _config(results: Mapping, run_dir: Path) -> dict:
    from jaxcollab.agents.ktane.policies import TEAMS

    return rollout_config(results, run_dir, TEAMS)


def landed(turn: Mapping, role: int, mode: str) -> int:
    """The step a recorded turn's action landed on: its ``step``, or in ``async`` mode a
    Defuser's ``floor(latency_s / Δ)`` slots (two steps each) later
    (:meth:`jaxcollab.llm.ktane.KtaneGame.turn`)."""
    from jaxcollab.envs.ktane.mission import DEFUSER

    if mode != "async" or role != DEFUSER:
        return int(turn["step"])
    return int(turn["step"]) + 2 * math.floor(float(turn["latency_s"]) / KT.TURN_S)


def _actions(env, record: dict, mode: str) -> np.ndarray:
    """int32 ``[max_episode_steps, 2, ACTION_LEN]``: the joint action of each step of one LLM
    episode, decoded from its transcript record as the game decoded it, on the step each
    landed on (:func:`landed`; steps without one are waits, zeros). An Expert step with several
    cycles (async) sends the last message among them."""
    from jaxcollab.envs.ktane.mission import ROLE_NAMES
    from jaxcollab.envs.ktane.modules.base import ACTION_LEN, MESSAGE
    from jaxcollab.llm.bridge import clip
    from jaxcollab.llm.ktane import decode_action, message_phrase
    from jaxcollab.llm.parse import Parsed

    out = np.zeros((env.max_episode_steps, 2, ACTION_LEN), np.int32)
    for name, turns in record["agents"].items():
        role = ROLE_NAMES.index(name)
        for t in turns:
            step = landed(t, role, mode)
            if step >= len(out):
                continue
            parsed = Parsed(t.get("action"), errors=tuple(t.get("errors") or ()))
            (verb, target, text), _ = decode_action(parsed, role, str(t.get("seen", ""))
                                                    if role == 0 else "")
            if verb != MESSAGE and out[step, role, 0] == MESSAGE:
                continue  # an async Expert's later cycle that sent nothing
            out[step] = 0
            out[step, role, :2] = (verb, target)
            if verb == MESSAGE:
                out[step, role, 2:] = message_phrase(clip(text))
    return out


def _scripted(env, agent: str, rules, keys, params, chunk: int):
    """``(final, states, actions)`` of the scripted team's episodes, with a trajectory."""
    from jaxcollab.agents.ktane.policies import team

    policy = team(agent, env, rules)
    parts = []
    size = min(chunk, len(keys))
    for lo in range(0, len(keys), size):
        rows = np.minimum(np.arange(lo, lo + size), len(keys) - 1)
        res = jax.device_get(rollout(env, policy, keys[rows], params,
                                     max_steps=env.max_episode_steps, trajectory=True))
        keep = np.arange(min(size, len(keys) - lo))
        parts.append((jax.tree.map(lambda x, k=keep: x[k], res.state),
                      jax.tree.map(lambda x, k=keep: x[:, k], res.trajectory["state"]),
                      res.trajectory["actions"][:, keep]))
    return tuple(jax.tree.map(lambda *x, a=axis: np.concatenate(x, a), *[p[i] for p in parts])
                 for i, axis in ((0, 0), (1, 1), (2, 1)))


def _llm(env, name: str, run_dir: Path, keys, params, chunk: int, mode: str):
    from jaxcollab.llm.run import read_transcripts, transcript_path

    records = {int(r["episode"]): r for r in read_transcripts(transcript_path(run_dir, name))}
    missing = [e for e in range(len(keys)) if e not in records]
    if missing:
        raise ConfigValueError("run", str(run_dir), f"a finished LLM run with a transcript of "
                               f"every episode; {name} lacks episodes {missing[:3]}")
    actions = np.stack([_actions(env, records[e], mode) for e in range(len(keys))])
    final, states, applied = replay(env, keys, params, actions, batched_params=False,
                                    chunk=chunk)
    wrong = [e for e in range(len(keys))
             if KT.OUTCOMES[int(final.outcome[e])] != records[e]["ending"]]
    if wrong:
        raise RuntimeError(f"replayed {name} episodes {wrong[:3]} end otherwise than their "
                           "transcripts: the run's episodes could not be reproduced")
    return final, states, applied


def analyze(results: Mapping, run_dir: Path, chunk: int) -> dict:
    """Behaviour of a finished Keep-Talking rollout run (a scripted team or ``agent=llm``,
    sync or async).

    Returns:
        ``env``, ``agent``, ``episodes``, ``lost`` (episodes not solved), ``behaviour``
        (:func:`jaxcollab.analysis.behaviour.behaviour`: Defuser and Expert shares by outcome
        and game phase, message rates, what followed each strike) and ``lost_episodes``
        (``env``, ``episode``, ``outcome``, ``strikes``, ``steps``).

    Raises:
        ConfigValueError: not a replayable rollout (unknown team, missing transcripts).
        RuntimeError: the replay's outcomes differ from the run's.
    """
    cfg = _config(results, run_dir)
    rules = make_ruleset(str(cfg.get("ruleset", "vanilla")), cfg.get("ruleset_seed", 0))
    keys = np.asarray(episode_keys(cfg["seed"], cfg["episodes"]))
    names = resolve(str(cfg["env"]))
    episodes, lost = [], []
    for name in track(names, f"{cfg['agent']} behaviour", disable=len(names) < 2):
        env = make(name)
        params = env.ruleset_params(rules)
        if cfg["agent"] == "llm":
            final, states, actions = _llm(env, name, run_dir, keys, params, chunk,
                                          (cfg.get("ktane") or {}).get("mode", "sync"))
        else:
            final, states, actions = _scripted(env, cfg["agent"], rules, keys, params, chunk)
        _check_rate(results, names, name, final)
        steps = episode_steps(np.asarray(states.turn), np.asarray(states.outcome),
                              np.asarray(actions)[..., 0], np.asarray(states.strikes),
                              np.asarray(states.solved).sum(-1), np.asarray(final.strikes),
                              np.asarray(final.solved).sum(-1), np.asarray(final.outcome))
        episodes += steps
        lost += [{"env": name, "episode": e, "outcome": s["outcome"],
                  "strikes": int(final.strikes[e]), "steps": len(s["role"])}
                 for e, s in enumerate(steps) if s["outcome"] != "solved"]
    return {"env": cfg["env"], "agent": cfg["agent"], "episodes": len(episodes),
            "lost": len(lost), "behaviour": behaviour(episodes), "lost_episodes": lost}


def _check_rate(results: Mapping, names, name: str, final) -> None:
    """The replay's success rate of ``name`` must be the run's (else it replayed others)."""
    want = (results.get("per_module", {}).get(name, {}).get("success_rate") if len(names) > 1
            else results.get("success_rate"))
    rate = float(np.mean(np.asarray(final.outcome) == KT.SOLVED))
    if want is not None and not np.isclose(rate, want):
        raise RuntimeError(f"replay of {name} solved {rate:.4f} of episodes, the run "
                           f"{want:.4f}: the run's episodes could not be reproduced")


__all__ = ["analyze", "landed"]
