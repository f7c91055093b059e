"""The Keep-Talking family's trace analysis (``eval/analyze.py``): behaviour of a finished
rollout run (GPTNT §8 and Table 7; :mod:`jaxcollab.agents.ktane.behaviour`).

A scripted team's episodes are replayed by the team with a trajectory
(:func:`jaxcollab.core.rollout.rollout`, the run's episode keys and ruleset); an LLM team's
from its transcripts: each turn's recorded action is decoded as
:class:`~jaxcollab.agents.ktane.llm.KtaneGame` decoded it, put on the step it landed on, and
replayed on the run's keys (:func:`jaxcollab.analysis.replay.replay`). In ``ktane.mode=async`` a
Defuser cycle whose reply took time is a wait of its latency (the cycle's recorded ``step``)
and its action two steps later, followed by the poll sleep; an Expert step carries the last
message of the cycles recorded on it (:mod:`jaxcollab.agents.ktane.llm`); the behaviour then
reads one Defuser step and one Expert step per Defuser cycle (:func:`per_cycle`). Either replay
must end
every episode as the run did, else the analysis refuses.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import jax
import numpy as np
from rich.progress import track

from jaxcollab.agents.ktane.behaviour import behaviour, episode_steps
from jaxcollab.agents.ktane.config import KtaneConfig
from jaxcollab.analysis.replay import replay, rollout_config
from jaxcollab.core.config import typed
from jaxcollab.core.errors import ConfigValueError
from jaxcollab.core.registry import make, resolve
from jaxcollab.core.rollout import episode_keys, rollout
from jaxcollab.envs.ktane import tables as KT
from jaxcollab.envs.ktane.modules.base import MESSAGE
from jaxcollab.envs.ktane.ruleset import make_ruleset


def _config(results: Mapping, run_dir: Path) -> dict:
    from jaxcollab.agents.ktane.policies import TEAMS

    return rollout_config(results, run_dir, TEAMS)


def landed(turn: Mapping, role: int, mode: str) -> int:
    """The step a recorded turn's action landed on: its ``step``, or in ``async`` mode a
    Defuser's two steps later when its reply took time (its ``latency_s`` in centiseconds: the
    step in between was the wait while it thought;
    :meth:`jaxcollab.agents.ktane.llm.KtaneGame.turn`)."""
    from jaxcollab.envs.ktane.mission import DEFUSER

    if mode != "async" or role != DEFUSER:
        return int(turn["step"])
    return int(turn["step"]) + 2 * (round(float(turn["latency_s"]), 2) > 0)


def _actions(env, record: dict, mode: str):
    """The joint action of each step of one LLM episode, decoded from its transcript record as
    the game decoded it, on the step each landed on (:func:`landed`; steps without one are
    waits, zeros): int32 ``[max_episode_steps, 2, ACTION_LEN]``, or in ``async`` mode a
    :class:`~jaxcollab.envs.ktane.rules.TimedAction` over
    :func:`~jaxcollab.agents.ktane.llm.async_max_steps` steps whose Defuser steps last what the
    game's did (a reply's latency while it thought, then the poll sleep). An Expert step with
    several
    cycles (async) sends the last message among them."""
    from jaxcollab.agents.ktane.llm import POLL_S, async_max_steps, decode_action, message_phrase
    from jaxcollab.envs.ktane.mission import DEFUSER, ROLE_NAMES
    from jaxcollab.envs.ktane.modules.base import ACTION_LEN, MESSAGE
    from jaxcollab.envs.ktane.rules import TimedAction
    from jaxcollab.llm.bridge import clip
    from jaxcollab.llm.parse import Parsed

    timed = mode == "async"
    out = np.zeros((async_max_steps(env) if timed else env.max_episode_steps, 2, ACTION_LEN),
                   np.int32)
    elapsed_cs = np.zeros(len(out), np.int32)
    for name, turns in record["agents"].items():
        role = ROLE_NAMES.index(name)
        for t in turns:
            step = landed(t, role, mode)
            if step >= len(out):
                continue
            if timed and role == DEFUSER:
                elapsed_cs[int(t["step"])] = round(round(float(t["latency_s"]), 2) * 100)
                elapsed_cs[step] = round(POLL_S * 100)
            parsed = Parsed(t.get("action"), errors=tuple(t.get("errors") or ()))
            (verb, target, text), _ = decode_action(parsed, role, str(t.get("seen", ""))
                                                    if role == 0 else "")
            if verb != MESSAGE and out[step, role, 0] == MESSAGE:
                continue  # an async Expert's later cycle that sent nothing
            out[step] = 0
            out[step, role, :2] = (verb, target)
            if verb == MESSAGE:
                out[step, role, 2:] = message_phrase(clip(text))
    return TimedAction(out, elapsed_cs) if timed else out


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
    actions = jax.tree.map(lambda *x: np.stack(x),
                           *[_actions(env, records[e], mode) for e in range(len(keys))])
    final, states, applied = replay(env, keys, params, actions, batched_params=False,
                                    chunk=chunk)
    wrong = [e for e in range(len(keys))
             if KT.OUTCOMES[int(final.outcome[e])] != records[e]["ending"]]
    if wrong:
        raise RuntimeError(f"replayed {name} episodes {wrong[:3]} end otherwise than their "
                           "transcripts: the run's episodes could not be reproduced")
    thinking = np.zeros((len(keys), len(np.asarray(states.turn))), bool)
    for e in range(len(keys)):
        for t in records[e]["agents"].get("defuser", []):
            if landed(t, 0, mode) != int(t["step"]) and int(t["step"]) < thinking.shape[1]:
                thinking[e, int(t["step"])] = True
    return final, states, np.asarray(getattr(applied, "actions", applied))[..., 0], thinking


def per_cycle(states, verbs: np.ndarray, thinking: np.ndarray | None):
    """The trace by decision cycle: ``(turn, outcome, verbs, strikes, solved)`` ``[T, B]``
    (verbs ``[T, B, 2]``) with each async Defuser cycle whose reply took time (``thinking``
    bool ``[B, T]``: its wait while it thought) folded into one Defuser step, its action, and
    one Expert step, the one after the action, which messages if the Expert step after the
    wait did: a pair of rows is a Defuser cycle and the Expert's turns during it, as in sync
    mode. Folded episodes are padded with rows of no running episode."""
    turn, outcome = np.asarray(states.turn), np.asarray(states.outcome)
    strikes, solved = np.asarray(states.strikes), np.asarray(states.solved).sum(-1)
    verbs = np.array(verbs)
    if thinking is None or not thinking.any():
        return turn, outcome, verbs, strikes, solved
    n = len(turn)
    index = np.tile(np.arange(n)[:, None], (1, turn.shape[1]))
    pad = np.zeros_like(index, bool)
    for b, row in enumerate(thinking):
        think = np.flatnonzero(row)
        later = think[think + 3 < n]
        verbs[later + 3, b, 1] = np.where(verbs[later + 1, b, 1] == MESSAGE, MESSAGE,
                                          verbs[later + 3, b, 1])
        keep = np.setdiff1d(np.arange(n), np.concatenate([think, think + 1]))
        index[:len(keep), b], index[len(keep):, b] = keep, n - 1
        pad[len(keep):, b] = True
    take = lambda x: np.take_along_axis(x, index.reshape(index.shape + (1,) * (x.ndim - 2)), 0)  # noqa: E731
    outcome = np.where(pad, -1, take(outcome))
    return take(turn), outcome, take(verbs), take(strikes), take(solved)


def analyze(results: Mapping, run_dir: Path, chunk: int) -> dict:
    """Behaviour of a finished Keep-Talking rollout run (a scripted team or ``agent=llm``,
    sync or async).

    Returns:
        ``env``, ``agent``, ``episodes``, ``lost`` (episodes not solved), ``behaviour``
        (:func:`jaxcollab.agents.ktane.behaviour.behaviour`: Defuser and Expert shares by outcome
        and game phase, message rates, what followed each strike) and ``lost_episodes``
        (``env``, ``episode``, ``outcome``, ``strikes``, ``steps``).

    Raises:
        ConfigValueError: not a replayable rollout (unknown team, missing transcripts).
        RuntimeError: the replay's outcomes differ from the run's.
    """
    cfg = _config(results, run_dir)
    o = typed(KtaneConfig, cfg)
    rules = make_ruleset(str(o.ruleset), o.ruleset_seed)
    keys = np.asarray(episode_keys(cfg["seed"], cfg["episodes"]))
    names = resolve(str(cfg["env"]))
    episodes, lost = [], []
    for name in track(names, f"{cfg['agent']} behaviour", disable=len(names) < 2):
        env = make(name)
        params = env.ruleset_params(rules)
        if cfg["agent"] == "llm":
            final, states, verbs, thinking = _llm(env, name, run_dir, keys, params, chunk,
                                                  o.ktane.mode)
        else:
            final, states, actions = _scripted(env, cfg["agent"], rules, keys, params, chunk)
            verbs, thinking = np.asarray(actions)[..., 0], None
        _check_rate(results, names, name, final)
        steps = episode_steps(*per_cycle(states, verbs, thinking), np.asarray(final.strikes),
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


__all__ = ["analyze", "landed", "per_cycle"]
