"""The LLM team: any OpenAI-compatible model as a team of any family with an LLM game.

``python eval/rollout.py env=<…> agent=llm llm.base_url=URL llm.model=NAME`` plays an
:class:`LLMTeam` through the family's own evaluation (the same driver, episode keys, chunking,
preemption and ``results.json`` keys as every scripted team; :mod:`jaxcollab.core.family`), and
adds the LLM keys (:func:`llm_results`). The team checks the endpoint before its first request
(an unreachable URL or unknown model fails before any episode is written; a run the cache
answers wholly needs no server), plays episodes server-paced (:mod:`jaxcollab.llm.play`: up to
``llm.concurrency`` episodes in flight), caches every request by content hash
(``out_dir/cache.jsonl``, crash-safe JSON Lines, :mod:`jaxcollab.llm.jsonl`: a rerun replays
replies exactly and sends nothing) and appends each episode as it ends to its transcript
``out_dir/<env with / as ->.jsonl``, put in episode order when its chunk finishes (a chunk
killed half-way, or a torn last record, is replayed from the cache; so are the saved chunks of a
rerun whose transcripts lack a finished episode: results never come from a partial transcript).

Stopping: SIGINT / SIGTERM stop the chunk in play at once, even while XLA runs the host callback
on a thread of its own (:mod:`jaxcollab.llm.signals`; requests in flight are cancelled, arrived
replies cached; a second signal exits at once); every finished episode is kept,
``out_dir/results.json`` is updated from their transcripts with ``"stopped": true`` (a
finished rerun drops it), and the run raises :class:`~jaxcollab.scale.preempt.Preempted`
(exit status 128 + the signal number), so rerunning the same command resumes. No progress for
``llm.stall_s`` raises :class:`~jaxcollab.llm.play.Stalled` naming what the episodes wait on.

Transcript records (one JSON object per episode, keys sorted): ``env``, ``episode``, ``success``,
``ending``, ``steps``, ``returns``, ``parse_errors`` (class → count), ``tokens`` and
``latency_s`` (per agent: every request of the episode, turns, rephrase exchanges, samples and
reflections; ``latency_s`` is server service time), ``queue_s`` (per agent: time requests waited
in the client's window, backoff or the server's queue), ``agents`` (per agent, every turn:
``step``, ``prompt`` messages, ``reply``, ``tool_calls``, ``action`` parsed, ``ok``,
``errors``, token counts, ``latency_s``, …), ``data`` (game extras: maze moves, rounds and
true ``labels``; Keep-Talking ``reflection``). The API key never appears: it is only read into
request headers.
"""

from __future__ import annotations

import dataclasses
import json
import signal
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

import jaxcollab
from jaxcollab.core.config import typed
from jaxcollab.core.family import Family, Spec
from jaxcollab.llm import jsonl, signals
from jaxcollab.llm.client import LLMConfig
from jaxcollab.llm.parse import REFUSAL
from jaxcollab.llm.play import Host, Played, play_pool
from jaxcollab.llm.roles import TeamClient, role_configs
from jaxcollab.scale import preempt

#: ``llm`` keys whose null means the family's default (:class:`~jaxcollab.core.family.LLMGame`).
_FAMILY_DEFAULTS = ("temperature", "max_tokens", "thinking_budget")


def llm_config(family: Family, options: Mapping[str, Any]) -> LLMConfig:
    """The client settings of the run's ``llm`` block; ``temperature``, ``max_tokens`` and
    ``thinking_budget`` null take the family's defaults
    (:class:`jaxcollab.core.family.LLMGame`: e.g. Keep Talking 1,000 tokens and thinking off,
    GPTNT §4; mazes 2,048 tokens, the collaboration-gap paper §6).

    Raises:
        ValueError: the family has no LLM game, or a bad client setting.
    """
    if family.llm is None:
        raise ValueError(f"family {family.name!r} has no LLM game")
    cfg = typed(LLMConfig, options["llm"])
    return dataclasses.replace(cfg, **{key: getattr(family.llm, key) for key in _FAMILY_DEFAULTS
                                       if getattr(cfg, key) is None})


def team_configs(family: Family, options: Mapping[str, Any]) -> dict[str, LLMConfig]:
    """Per-role settings of a mixed team (``llm.roles``, :func:`~jaxcollab.llm.roles.role_configs`;
    empty when every role plays the ``llm.*`` model).

    Raises:
        ValueError: a role the family's games do not have, or a bad key (names it).
    """
    base = llm_config(family, options)
    return role_configs(base, base.roles, family.llm.roles)


def transcript_path(out_dir, env_name: str) -> Path:
    """``out_dir/<env name with / as ->.jsonl``."""
    return Path(out_dir) / f"{env_name.replace('/', '-')}.jsonl"


def read_transcripts(path: Path) -> list[dict]:
    """The records of a transcript file (none if it does not exist; a torn last record, from
    a killed write, is skipped and so replayed)."""
    return jsonl.read(path)


class LLMTeam:
    """A :class:`~jaxcollab.core.family.Team` whose agents are a language model.

    Args:
        family: the plug-in whose :attr:`~jaxcollab.core.family.Family.llm` game it plays.
        options: the run config (``llm`` block, and the family's own keys for its prompts).
        out_dir: where transcripts and the request cache live.
        progress: optional ``progress(n, requests=, tokens=)``, called with ``n=0`` after
            every agent turn and ``n=1`` as each episode finishes, after its end-of-game
            exchanges (a bar and its postfix: requests and tokens so far, cache replays and
            reflections included).

    Raises:
        LLMError (from :meth:`play`): unreachable endpoint or unknown model (before any
            episode is written).
        ConfigValueError: bad ``llm`` settings (:class:`~jaxcollab.llm.client.LLMConfig`).
    """

    name = "llm"

    def __init__(self, family: Family, options: Mapping[str, Any], out_dir, progress=None):
        self.family, self.options, self.out = family, options, Path(out_dir)
        self.cfg = llm_config(family, options)
        self.roles = team_configs(family, options)
        cache = self.cfg.cache or self.out / "cache.jsonl"
        # each client checks its endpoint at its first request; the seed salts the cache keys
        self.client = TeamClient(self.cfg, self.roles, cache, salt=f"seed {options['seed']}")
        for c in self.client.clients:  # every retry, as it happens, kept across resumes
            c.retry_log = self.out / "retries.jsonl"
        self.host = Host(self.client, None if progress is None else self._turn)
        self.progress = progress
        self._lock = threading.Lock()

    def play(self, env, keys, params, ids: Sequence[tuple[str, int]], *, batched_params=False):
        """Play each distinct episode of ``ids`` once (padding rows repeat one), server-paced;
        the final states ``[B]``."""
        keys = np.asarray(keys)
        if not batched_params:
            params = jax.tree.map(lambda x: np.broadcast_to(x, (len(keys), *np.shape(x))), params)
        first: dict[tuple[str, int], int] = {}
        for b, i in enumerate(ids):
            first.setdefault(tuple(i), b)
        jobs = [(b, self.family.llm.game(name, env, jax.tree.map(lambda x, b=b: np.asarray(x)[b],
                                                                 params), self.options), index)
                for (name, index), b in first.items()]
        names = {b: name for (name, _), b in first.items()}
        self.client.check_fresh(self.family.llm.roles)
        # each episode's record is appended as it ends: a stopped run keeps every finished one
        played = play_pool(env, keys, params, jobs, self.host, self.cfg.concurrency,
                           lambda p, game, b: self._write([self._finish(names[b], p, game)]),
                           stall_s=self.cfg.stall())
        self._order({name for name, _ in first})
        rows = [played[first[tuple(i)]].state for i in ids]
        return jax.tree.map(lambda *xs: np.stack(xs), *rows)

    def _turn(self, n: int = 0) -> None:
        """Progress after an agent turn (``n=0``) or a finished episode's end-of-game
        exchanges (``n=1``): requests and tokens so far."""
        usage = list(self.client.usage.values())
        with self._lock:
            self.progress(n, requests=sum(u.calls for u in usage),
                          tokens=sum(u.prompt_tokens + u.completion_tokens for u in usage))

    def _finish(self, env_name: str, played: Played, game) -> dict:
        """End-of-game exchanges; the episode's transcript record."""
        llm = self.family.llm
        success, ending = llm.outcome(played.state)
        self.host.drive(played.episode, game.finish(played.episode, ending))
        if self.progress is not None:
            self._turn(1)  # the reflections' requests count too
        return _record(env_name, played, success, ending, llm.data(played.state))

    def _write(self, records: list[dict]) -> None:
        """Append ``records`` (each episode once; one crash-safe append per environment,
        :func:`jsonl.append`), as each episode ends. The episodes already in a transcript are
        known under a lock, shared by every team of the process, and re-read whenever the file
        changed behind it: a chunk replayed after a kill comes from the request cache, and a
        stopped run's episodes may still finish on their threads while the rerun plays, so
        neither writes an episode twice."""
        by_env: dict[str, list[dict]] = {}
        for rec in records:
            by_env.setdefault(rec["env"], []).append(rec)
        with _TRANSCRIPTS:
            for env_name, rows in by_env.items():
                path = transcript_path(self.out, env_name)
                done, new = _written(path), []
                for r in rows:
                    if r["episode"] not in done:
                        done.add(r["episode"])
                        new.append(r)
                if new:
                    jsonl.append(path, new, sort_keys=True)
                    _WRITTEN[path.resolve()] = (path.stat().st_size, done)

    def _order(self, env_names) -> None:
        """Rewrite each transcript of ``env_names`` in episode order (atomically) once its
        chunk has finished: episodes are appended as they end, in any order."""
        with _TRANSCRIPTS:
            for env_name in sorted(env_names):
                path = transcript_path(self.out, env_name)
                rows = read_transcripts(path)
                keys = [r["episode"] for r in rows]
                if keys != sorted(keys):
                    rows.sort(key=lambda r: r["episode"])
                    jsonl.write_atomic(path, "".join(json.dumps(r, sort_keys=True,
                                                                ensure_ascii=False) + "\n"
                                                     for r in rows))
                    _WRITTEN[path.resolve()] = (path.stat().st_size, set(keys))

    def results(self, env_names: Sequence[str]) -> dict:
        """The LLM keys of ``results.json`` from the transcripts of ``env_names``
        (:func:`llm_results`), with ``roles`` (a mixed team: role → ``model``, ``base_url``)
        and ``adapted`` (model → what its endpoint's errors taught the client:
        :attr:`~jaxcollab.llm.client.ChatClient.adapted`) where they apply."""
        records = [r for name in env_names for r in read_transcripts(transcript_path(self.out,
                                                                                     name))]
        mixed = {"roles": {r: {"model": c.model, "base_url": c.base_url}
                           for r, c in sorted(self.roles.items())}} if self.roles else {}
        adapted = self.client.adapted()
        return {"model": self.cfg.model, "base_url": self.cfg.base_url, **mixed,
                **({"adapted": adapted} if adapted else {}),
                **llm_results(records), "retries": self.retries(),
                **self.family.llm.summary(records, self.options)}

    def retries(self) -> dict[str, int]:
        """Retried requests by class over every session of this ``out_dir`` (its
        ``retries.jsonl``: a resumed run keeps the stopped one's)."""
        log = jsonl.read(self.out / "retries.jsonl")
        counts = Counter(r.get("class") for r in log) if log else self.client.retries
        return dict(sorted(counts.items()))

    def stopped_results(self, env_names: Sequence[str]) -> dict:
        """``results.json`` of a stopped run, from the finished episodes' transcripts:
        ``stopped: true``, ``episodes``, ``success_rate`` (null before any episode finished)
        and the LLM keys."""
        records = [r for name in env_names for r in read_transcripts(transcript_path(self.out,
                                                                                     name))]
        rate = float(np.mean([r["success"] for r in records])) if records else None
        return {"stopped": True, "episodes": len(records), "success_rate": rate,
                **self.results(env_names)}


#: Serialises transcript appends within a process (:meth:`LLMTeam._write`).
_TRANSCRIPTS = threading.Lock()
#: transcript path → (its size after this process's last append, the episodes in it)
_WRITTEN: dict[Path, tuple[int, set]] = {}


def _written(path: Path) -> set:
    """The episodes in transcript ``path`` (read again when its size is not what this process
    left; under :data:`_TRANSCRIPTS`)."""
    size = path.stat().st_size if path.exists() else 0
    known = _WRITTEN.get(path.resolve())
    if known is None or known[0] != size:
        known = (size, {r["episode"] for r in read_transcripts(path)})
        _WRITTEN[path.resolve()] = known
    return known[1]


def _record(env_name: str, played: Played, success: bool, ending: str, data: dict) -> dict:
    ep = played.episode
    usage = sorted(ep.usage.items())  # every request of the episode (Episode.charge)
    tokens = {a: {"prompt": u["prompt"], "completion": u["completion"]} for a, u in usage}
    latency = {a: u["latency_s"] for a, u in usage}
    queue = {a: u["queue_s"] for a, u in usage}
    timed_by = sum((Counter(u.get("timed_by", {})) for _, u in usage), Counter())
    extra = ep.data | data
    return {"env": env_name, "episode": ep.index, "success": bool(success), "ending": ending,
            "steps": played.steps, "returns": played.returns.tolist(),
            "parse_errors": dict(sorted(ep.errors.items())), "tokens": tokens,
            "latency_s": latency, "queue_s": queue,
            "latency_timed_by": dict(sorted(timed_by.items())),
            "agents": {a: t for a, t in ep.history.items() if t}, "data": extra}


def llm_results(records: list[dict]) -> dict:
    """LLM keys over transcript records: ``parse_errors`` (GPTNT error class → count),
    ``refusals`` (content-policy refusals), ``tokens`` (per agent ``prompt`` / ``completion``,
    and ``total``), ``latency_s`` (per agent, summed seconds of server service time) and
    ``queue_s`` (per agent, summed seconds requests waited: client window, backoff, server
    queue) and ``latency_timed_by`` (requests by the clock of their ``latency_s``, which is
    what async Keep Talking charges the game clock: ``server``, the server's own timings of
    the generation, llama.cpp's ``timings``; ``client``, seconds from sending to the answer,
    for a server that reports none: :attr:`~jaxcollab.llm.client.Reply.timed_by`)."""
    errors, tokens, latency, queue, timed_by = Counter(), {}, {}, {}, Counter()
    for r in records:
        errors.update(r["parse_errors"])
        timed_by.update(r.get("latency_timed_by", {}))
        for a, t in r["tokens"].items():
            acc = tokens.setdefault(a, {"prompt": 0, "completion": 0})
            acc["prompt"] += t["prompt"]
            acc["completion"] += t["completion"]
        for a, s in r["latency_s"].items():
            latency[a] = round(latency.get(a, 0.0) + s, 6)
        for a, s in r.get("queue_s", {}).items():
            queue[a] = round(queue.get(a, 0.0) + s, 6)
    refusals = errors.pop(REFUSAL, 0)
    return {"parse_errors": dict(sorted(errors.items())), "refusals": refusals,
            "tokens": tokens | {"total": sum(t["prompt"] + t["completion"]
                                             for t in tokens.values())},
            "latency_s": latency, "queue_s": queue,
            "latency_timed_by": dict(sorted(timed_by.items()))}


def run_team(env: str, team_options: Mapping[str, Any], spec: Spec, out_dir,
             progress=None) -> dict:
    """Play the LLM team on ``env`` (a name or group) through its family's evaluation; the
    family's results plus the LLM keys (``retries``: retried requests by class).
    ``spec.options`` is ``team_options`` (the run config).

    Raises:
        LLMError: unreachable endpoint or unknown model (before any episode is written).
        KeyError / ValueError: unknown environment or bad option (names the value).
        Preempted: SIGINT / SIGTERM (module docstring: finished chunks kept,
            ``out_dir/results.json`` written with ``stopped: true``).
    """
    names = jaxcollab.resolve(env)
    family = jaxcollab.family(names[0])
    team = LLMTeam(family, team_options, out_dir, progress)
    try:
        with signals.watch():  # Ctrl-C / SIGTERM reach the host callback's thread too
            results = family.evaluate(names, team, spec)
            if _untranscribed(team, names, results, spec):  # replayed from the request cache
                results = family.evaluate(names, team, spec)
                if _untranscribed(team, names, results, spec):
                    raise RuntimeError(f"the transcripts in {out_dir} still lack finished "
                                       "episodes after replaying their chunks: results are "
                                       "never computed from a partial transcript")
    except (KeyboardInterrupt, preempt.Preempted) as stop:
        _write_results(Path(out_dir) / "results.json", {"env": env, **team.stopped_results(names)})
        if isinstance(stop, preempt.Preempted):
            raise
        preempt.stop(preempt.requested() or signal.SIGINT, f"the finished chunks in {out_dir}")
    return {**results, **team.results(names)}


def _untranscribed(team: LLMTeam, names: Sequence[str], results: Mapping, spec: Spec) -> bool:
    """Whether some finished episode has no whole transcript record (a transcript torn or cut
    short beside a saved chunk, by a kill or a copy); if so its saved chunks are deleted, so
    the next evaluation plays them again from the request cache (sending nothing) and writes
    the missing records: the LLM keys of ``results.json`` come from the transcripts. A bank
    run (``bank=true``: solo episodes keep no transcript) is not checked."""
    if spec.save_dir is None or spec.options.get("bank"):
        return False
    recorded = {(r["env"], r["episode"]) for name in names
                for r in read_transcripts(transcript_path(team.out, name))}
    if len(recorded) >= int(results["episodes"]):
        return False
    print(f"[llm] the transcripts in {team.out} hold {len(recorded)} of {results['episodes']} "
          "finished episodes (torn or cut short): replaying the saved chunks from the request "
          "cache", flush=True)
    for chunk in Path(spec.save_dir).rglob("episodes_*.npz"):
        chunk.unlink()
    return True


def _write_results(path: Path, results: dict) -> None:
    """Update the JSON object at ``path`` with ``results`` (keeping other keys, e.g. the CLI's
    ``config`` its collision guard compares), atomically (:func:`jsonl.write_atomic`)."""
    old = json.loads(path.read_text()) if path.exists() else {}
    jsonl.write_atomic(path, json.dumps(old | results, indent=2) + "\n")


__all__ = ["LLMTeam", "llm_config", "llm_results", "read_transcripts", "run_team",
           "transcript_path"]
