"""An LLM evaluation run: episodes of one environment (or group) against one endpoint.

:func:`evaluate` checks the endpoint before its first request (an unreachable URL or unknown
model fails before any episode is written; a run the cache answers wholly needs no server), plays
the episodes in chunks through the library-style rollout with the LLM policy, appends each
finished chunk's episodes to ``<env>.jsonl`` in ``out_dir`` (a rerun skips them; a run killed
halfway loses no finished chunk, and the request cache replays any half-finished one
for free), and writes ``results.json`` from every transcript record.

Transcript records (one JSON object per episode, keys sorted): ``env``, ``episode``, ``success``,
``ending``, ``steps``, ``returns``, ``parse_errors`` (class → count), ``tokens`` and
``latency_s`` (per agent), ``agents`` (per agent, every turn: ``step``, ``prompt`` messages,
``reply``, ``tool_calls``, ``action`` parsed, ``ok``, ``errors``, token counts, ``latency_s``,
…), ``data`` (game extras: maze moves, rounds and true ``labels``; Keep-Talking
``reflection``). The API key never appears: it is only read into request headers.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import sys
from collections import Counter
from pathlib import Path

import jax
import numpy as np

import jaxcollab
from jaxcollab.llm import jsonl, signals
from jaxcollab.llm.bridge import EndedFlag, Host, make_policy
from jaxcollab.llm.client import ChatClient, LLMConfig
from jaxcollab.llm.parse import REFUSAL

FAMILY_TEMPERATURE = {"bomb": 0.6, "ktane": 0.6, "maze": 1.0}  # GPTNT app. H; collab-gap §6


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """What to play (see ``configs/llm.yaml`` for every option and its default)."""

    env: str
    episodes: int | None = None
    seed: int = 0
    batch: int = 8
    tools: str = "text"
    hint: str = "weak"
    turn_order: tuple[str, ...] = ("deaf", "mute", "blind")
    solo: bool = False
    mode: str = "sync"
    reflection: bool = True
    ruleset: str = "vanilla"
    ruleset_seed: int = 0
    setting: str = "action"
    rounds: int = 4
    samples: int = 5
    mazes: int = 30
    rollouts: int = 10
    maze_seed: int = 20251
    calibration_dir: str | None = None


def _game(env, family: str, rc: RunConfig):
    if rc.tools not in ("text", "native"):
        raise ValueError(f"llm.tools must be 'text' or 'native', got {rc.tools!r}")
    if family == "bomb":
        from jaxcollab.envs.bomb import tables as T
        from jaxcollab.llm.bomb import BombGame

        bad = [r for r in rc.turn_order if r not in T.ROLE_NAMES]
        if bad or sorted(rc.turn_order) != sorted(T.ROLE_NAMES):
            raise ValueError(f"bomb.turn_order must order deaf, mute, blind; got {rc.turn_order}")
        order = tuple(T.ROLE_NAMES.index(r) for r in rc.turn_order)
        params = env.default_params.replace(turn_order=np.asarray(order, np.int32))
        return BombGame(env, rc.hint, order, rc.solo, rc.tools == "native"), params
    if family == "ktane":
        from jaxcollab.envs.ktane.ruleset import make_ruleset
        from jaxcollab.llm.ktane import KtaneGame

        rules = make_ruleset(rc.ruleset, rc.ruleset_seed)
        return KtaneGame(env, rc.mode, rc.reflection, rules), env.ruleset_params(rules)
    if family == "maze":
        from jaxcollab.llm.maze import MazeGame

        cal = None
        if rc.setting == "verbalized_calibrated":
            from jaxcollab.llm.maze import fit_conversation_calibrator

            if not rc.calibration_dir:
                raise ValueError("maze.setting='verbalized_calibrated' needs "
                                 "maze.calibration_dir=DIR, a finished 'verbalized' run on "
                                 "held-out mazes (another maze.maze_seed)")
            cal = fit_conversation_calibrator(
                _read(transcript_path(rc.calibration_dir, env.name)), rc.rounds)
        return MazeGame(env, rc.setting, rc.rounds, rc.samples, cal), env.default_params
    raise ValueError(f"environment family {family!r} has no LLM path; valid: bomb, ktane, maze")


def _max_steps(env, family: str) -> int:
    if family == "bomb":
        from jaxcollab.envs.bomb import tables as T

        return T.N_AGENTS * int(env.variant.rounds)
    if family == "ktane":
        return int(env.max_turns)
    return int(env.n_cells)


def _outcome(family: str, state, ret) -> tuple[bool, str]:
    if family == "bomb":
        from jaxcollab.envs.bomb import tables as T

        ending = T.ENDING_NAMES[int(state.ending)]
        return ending == "defused", ending
    if family == "ktane":
        from jaxcollab.envs.ktane import tables as KT

        outcome = KT.OUTCOMES[int(state.outcome)]
        return outcome == "solved", outcome
    won = bool(ret[0] > 0)
    return won, "success" if won else ("wrong_move" if int(state.step) <= int(state.n_moves)
                                        else "truncated")


def _record(env_name, family, host, index, state, ret, steps) -> dict:
    ep = host.episode(index)
    success, ending = _outcome(family, state, ret)
    # every request of the episode (turns, rephrase exchanges, samples, reflections)
    tokens = {a: {"prompt": u["prompt"], "completion": u["completion"]}
              for a, u in sorted(ep.usage.items())}
    latency = {a: u["latency_s"] for a, u in sorted(ep.usage.items())}
    queue = {a: u["queue_s"] for a, u in sorted(ep.usage.items())}
    data = {k: v for k, v in ep.data.items() if k != "ktane"}
    if family == "maze":
        data["labels"] = np.asarray(state.moves)[: int(state.n_moves)].tolist()
    return {"env": env_name, "episode": index, "success": success, "ending": ending,
            "steps": int(steps), "returns": np.asarray(ret).tolist(),
            "parse_errors": dict(sorted(ep.errors.items())), "tokens": tokens,
            "latency_s": latency, "queue_s": queue,
            "agents": {a: t for a, t in ep.history.items() if t},
            "data": data}


@functools.lru_cache(maxsize=64)
def _make(name: str):
    """One environment object per name and process, so repeated runs reuse compiled rollouts."""
    return jaxcollab.make(name)


def _row(tree, b: int):
    return jax.tree.map(lambda x: x[b], tree)


def total_tokens(client: ChatClient) -> int:
    """Prompt plus completion tokens so far, every agent (cache replays included)."""
    return sum(u.prompt_tokens + u.completion_tokens for u in client.usage.values())


def transcript_path(out_dir, env_name: str) -> Path:
    """``out_dir/<env name with / as ->.jsonl``."""
    return Path(out_dir) / f"{env_name.replace('/', '-')}.jsonl"


def _read(path: Path) -> list[dict]:
    return jsonl.read(path)  # a torn last record (a killed write) is skipped and replayed


def play_env(env_name: str, rc: RunConfig, client: ChatClient, out_dir, progress=None) -> None:
    """Play the unfinished episodes of ``env_name``, appending chunk by chunk to its transcript."""
    family = env_name.split("/")[0]
    env = _make(env_name)
    game, params = _game(env, family, rc)
    n = rc.episodes if rc.episodes is not None else (
        rc.mazes * rc.rollouts if family == "maze" else 9)
    if family == "maze" and n > rc.mazes * rc.rollouts:
        raise ValueError(f"episodes={n} exceeds maze.mazes x maze.rollouts = "
                         f"{rc.mazes * rc.rollouts}")
    path = transcript_path(out_dir, env_name)
    done = {r["episode"] for r in _read(path)}
    todo = [i for i in range(int(n)) if i not in done]
    if progress is not None:
        progress.update(len(done))
    on_step = None if progress is None else (  # moves on every agent turn, not per chunk
        lambda _: progress.set_postfix(
            requests=sum(u.calls for u in client.usage.values()),
            tokens=total_tokens(client)))
    host = Host(game, client, on_step=on_step)
    policy = make_policy(host)
    played = env
    if family == "maze":
        from jaxcollab.llm.maze import HeldOutMazes

        played = HeldOutMazes(env, rc.mazes, rc.maze_seed)
    played = EndedFlag(played)
    if not todo:
        return
    base = jax.random.PRNGKey(rc.seed)
    size = min(int(rc.batch), len(todo))
    for start in range(0, len(todo), size):
        ids = todo[start: start + size]
        padded = ids + [-1 - j for j in range(size - len(ids))]  # one compiled shape per run
        keys = jax.vmap(lambda i: jax.random.fold_in(base, i))(np.asarray(padded) % 2**31)
        host.begin(keys, padded)
        batched = family == "maze"
        if batched:
            params = {"env": jax.tree.map(lambda x: np.broadcast_to(x, (size, *np.shape(x))),
                                          env.default_params),
                      "maze": np.asarray([max(i, 0) // rc.rollouts for i in padded], np.int32)}
        out = jax.device_get(jaxcollab.rollout(
            played, policy, keys, params, max_steps=_max_steps(env, family),
            batched_params=batched, until_done=True))
        host.reraise()  # stopped (signal) or failed mid-chunk: keep only finished chunks
        ret, steps = out.episode_return, out.state["length"]
        pick = functools.partial(_row, out.state["env"])
        host.finish({i: _outcome(family, pick(b), ret[b])[1] for b, i in enumerate(ids)})
        jsonl.append(path, [_record(env_name, family, host, i, pick(b), ret[b], steps[b])
                            for b, i in enumerate(ids)], sort_keys=True)
        for i in ids:
            host.episodes.pop(i)
        if progress is not None:
            progress.update(len(ids))


def summarize(records: list[dict], rc: RunConfig) -> dict:
    """``results.json`` content from transcript records (keys in the module docstring of
    ``eval/llm.py``)."""
    out: dict = {"episodes": len(records),
                 "success_rate": float(np.mean([r["success"] for r in records])) if records
                 else 0.0}
    family = records[0]["env"].split("/")[0] if records else ""
    key = "outcomes" if family == "ktane" else "endings"
    out[key] = dict(sorted(Counter(r["ending"] for r in records).items()))
    errors, tokens, latency, queue = Counter(), {}, {}, {}
    for r in records:
        errors.update(r["parse_errors"])
        for a, t in r["tokens"].items():
            acc = tokens.setdefault(a, {"prompt": 0, "completion": 0})
            acc["prompt"] += t["prompt"]
            acc["completion"] += t["completion"]
        for a, s in r["latency_s"].items():
            latency[a] = round(latency.get(a, 0.0) + s, 6)
        for a, s in r.get("queue_s", {}).items():
            queue[a] = round(queue.get(a, 0.0) + s, 6)
    out["refusals"] = errors.pop(REFUSAL, 0)
    out["parse_errors"] = dict(sorted(errors.items()))
    out["tokens"] = tokens | {"total": sum(t["prompt"] + t["completion"]
                                           for t in tokens.values())}
    out["latency_s"] = latency  # server service time
    out["queue_s"] = queue  # time requests waited (client window, backoff, server queue)
    if family == "bomb":
        by = {}
        for r in records:
            by.setdefault(r["env"].split("/", 1)[1], []).append(r)
        out["variants"] = {v: {"episodes": len(rs),
                               "success_rate": float(np.mean([x["success"] for x in rs])),
                               "endings": dict(sorted(Counter(x["ending"] for x in rs).items()))}
                           for v, rs in sorted(by.items())}
    if family == "maze" and records:
        out["maze"] = _maze_summary(records, rc)
    return out


def _maze_summary(records: list[dict], rc: RunConfig) -> dict:
    from jaxcollab.llm.maze import bootstrap_success, calibration_by_round

    n_mazes = max(r["episode"] for r in records) // rc.rollouts + 1
    grid = np.full((n_mazes, rc.rollouts), np.nan)
    for r in records:
        grid[r["episode"] // rc.rollouts, r["episode"] % rc.rollouts] = r["success"]
    full = grid[~np.isnan(grid).any(1)]
    summary = {"setting": rc.setting, "rounds": rc.rounds, "mazes": int(len(full)),
               "rollouts": rc.rollouts}
    if len(full):
        summary["success"] = bootstrap_success(full)
    n_rounds = 1 if rc.setting == "solo" else rc.rounds
    per_rollout = []
    for k in range(rc.rollouts):  # pool moves of every maze within one rollout index
        recs = [r for r in records if r["episode"] % rc.rollouts == k]
        rounds, labels = [], {}
        for j, r in enumerate(recs):
            rounds += [x | {"step": (j, x["step"])} for x in r["data"].get("rounds", [])]
            labels |= {(j, s): m for s, m in enumerate(r["data"]["labels"])}
        if rounds:
            per_rollout.append(calibration_by_round(rounds, labels, n_rounds))
    cal = np.array([[np.nan if v is None else v for v in row] for row in per_rollout], float)
    summary["calibration_loss_by_round"] = [
        None if np.all(np.isnan(col)) else float(np.nanmean(col)) for col in cal.T
    ] if len(cal) else []
    return summary


def evaluate(cfg: LLMConfig, rc: RunConfig, out_dir, cache_path=None, progress=None) -> dict:
    """Check the endpoint, play every unfinished episode, write and return ``results.json``.

    Raises:
        LLMError: unreachable endpoint or unknown model (before any episode).
        KeyError / ValueError: unknown environment or bad option (names the value).
    """
    names = jaxcollab.resolve(rc.env)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    client = ChatClient(cfg, cache_path if cache_path is not None else out / "cache.jsonl")
    stopped = False
    try:
        with signals.watch():  # Ctrl-C / SIGTERM reach the host callback's thread too
            for name in names:
                play_env(name, rc, client, out, progress)
    except KeyboardInterrupt:  # SIGINT / SIGTERM: results of what finished, then stop
        stopped = True
        raise
    finally:
        if stopped or sys.exc_info()[0] is None:
            records = [r for name in names for r in _read(transcript_path(out, name))]
            results = {"env": rc.env, "model": cfg.model, "base_url": cfg.base_url,
                       **summarize(records, rc), "retries": dict(sorted(client.retries.items()))}
            results |= {"stopped": True} if stopped else {}
            jsonl.write_atomic(out / "results.json", json.dumps(results, indent=2) + "\n")
    return results

