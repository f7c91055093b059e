"""Host-callback bridge: an LLM team as a policy of the library rollout.

:func:`make_policy` gives a :class:`jaxcollab.Policy` for the library rollout
(:func:`jaxcollab.rollout`) whose ``act(key, obs, policy_state)`` calls ``jax.pure_callback`` once
per step (``vmap_method="broadcast_all"``: under the rollout's ``vmap`` the host receives the whole
batch of episodes at once). The environment is wrapped in :class:`EndedFlag`, which appends one
public "the game is over" token to every observation row, so the host stops querying the agents of
an ended episode (players know when their game has ended); episodes are told apart by their policy-
init key, which the host maps back to the episode index (:meth:`Host.begin`). On the host, a
:class:`Game` (one per family: prompts and action encoding) turns each episode's observation rows
into requests, the :class:`Host` sends the requests of *all* agents of *all* episodes concurrently,
and the game turns the replies into the joint action the environment's ``step`` applies. Every rule
stays in the environment: the host only renders observations (``env.render_observation``), parses
replies and encodes actions. Replies are cached by request hash,
so the callback is deterministic and a rerun replays it exactly.

A game's :meth:`Game.turn` is a generator: it yields lists of :class:`~.client.Request` (one batch
per conversation round) and receives the replies, then returns the joint action. This lets one step
hold several rounds (the maze protocol's K rounds, sampled responses) while still batching every
episode's requests together.

Stopping: Ctrl-C (and SIGTERM, mapped to it by the run) raises inside the callback when it runs
on the main thread, and is seen through :mod:`~jaxcollab.llm.signals` when XLA runs it on a
thread of its own. The host keeps that stop (or any error) instead of letting it become an
opaque runtime error of the compiled rollout, answers no-ops for the rest of the rollout (which
then ends within moments) and :meth:`Host.reraise` raises it after; the run keeps every chunk
finished before. Every reply is charged to its episode (:meth:`Episode.charge`), so tokens and
latency count all requests, and games keep prompts within the model's context
(:meth:`Game.fit`) and feed long replies back clipped (:func:`clip`).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Generator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.core.rollout import Policy, split_episode_key
from jaxcollab.core.wrappers import Wrapper
from jaxcollab.llm import signals
from jaxcollab.llm.client import ChatClient, Reply, Request
from jaxcollab.llm.parse import CONTEXT, REFUSAL, Parsed

#: A game's per-step generator: yields request batches, receives replies, returns the action.
Turn = Generator[list[Request], list[Reply], Any]


@dataclasses.dataclass
class Episode:
    """Host-side record of one episode: per-agent history and error counts.

    Attributes:
        index: the episode's id in the run (also its transcript key).
        history: per role, the list of turns, each a dict with ``step``, ``prompt`` (messages),
            ``reply``, ``action`` (parsed), ``errors`` and ``note`` (what it saw, said, got).
        notes: per role, the feedback line owed on its next turn ("" if none).
        errors: counts of parse error classes; data: game-specific host state.
    """

    index: int
    history: dict[str, list[dict]]
    notes: dict[str, str]
    errors: Counter = dataclasses.field(default_factory=Counter)
    data: dict = dataclasses.field(default_factory=dict)
    usage: dict[str, dict] = dataclasses.field(default_factory=dict)

    def charge(self, req: Request, reply: Reply) -> None:
        """Add one exchange's cost to its agent's totals (every request counts: turns,
        rephrase exchanges, samples, reflections): tokens, service ``latency_s``, ``queue_s``."""
        u = self.usage.setdefault(req.agent, {"requests": 0, "prompt": 0, "completion": 0,
                                              "latency_s": 0.0, "queue_s": 0.0})
        u["requests"] += 1
        u["prompt"] += reply.prompt_tokens
        u["completion"] += reply.completion_tokens
        u["latency_s"] = round(u["latency_s"] + reply.latency_s, 6)
        u["queue_s"] = round(u["queue_s"] + reply.queue_s, 6)

    def record(self, role: str, step: int, req: Request, reply: Reply, parsed: Parsed,
               **extra) -> None:
        """Append one exchange to ``role``'s history and owe its feedback note."""
        errors = list(parsed.errors)
        self.errors.update(errors)
        self.notes[role] = parsed.note()
        self.history[role].append({
            "step": step, "prompt": list(req.messages), "reply": reply.text,
            "tool_calls": list(reply.tool_calls), "action": parsed.action, "ok": parsed.ok,
            "errors": errors, "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens, "latency_s": reply.latency_s, **extra,
        })

    def take_note(self, role: str) -> str:
        """The pending feedback line for ``role`` (cleared once read)."""
        return self.notes.pop(role, "")


class Game:
    """A family's host side. Subclasses set ``roles`` and implement :meth:`action_struct`,
    :meth:`turn` and :meth:`noop`; :meth:`finish` may add end-of-game exchanges."""

    roles: tuple[str, ...] = ()

    def action_struct(self):
        """Pytree of ``jax.ShapeDtypeStruct`` of one episode's joint action."""
        raise NotImplementedError

    def noop(self):
        """The joint action of an ended episode (numpy pytree shaped like the struct)."""
        raise NotImplementedError

    def turn(self, ep: Episode, step: int, obs: np.ndarray) -> Turn:
        """Generator over request batches for one episode at one step (module docstring)."""
        raise NotImplementedError

    def finish(self, ep: Episode, outcome: str) -> Turn:
        """End-of-game exchanges (default: none); returns nothing."""
        return
        yield  # pragma: no cover  (makes this a generator)

    #: The prompt-token budget of one request (set by :class:`Host` from the client:
    #: ``llm.context_tokens`` or the server's reported context, less ``max_tokens``), or None.
    budget: int | None = None

    @staticmethod
    def refusal(reply: Reply) -> Parsed:
        """A refused request (content policy: ``refusal``) or one the server could not take
        (``context_length``): no action."""
        return Parsed(None).with_errors(CONTEXT if reply.failure == CONTEXT else REFUSAL)

    def fit(self, ep: Episode, messages: list[dict]) -> tuple[dict, ...]:
        """``messages`` kept within the context: the oldest exchanges after the system prompt
        are dropped (a user/assistant pair at a time) until the estimate
        (:func:`estimate_tokens`) is within :attr:`budget` or the episode's learned cap (80 %
        of a prompt the server refused as too long); the current turn is always kept."""
        caps = [c for c in (self.budget, ep.data.get("context_cap")) if c]
        if not caps:
            return tuple(messages)
        head, body = messages[:1], list(messages[1:])
        while len(body) > 2 and estimate_tokens(head + body) > min(caps):
            body = body[2:]
        return tuple(head + body)

    @staticmethod
    def overflowed(ep: Episode, req: Request, reply: Reply) -> None:
        """After a context-length failure: later prompts of ``ep`` stay below 80 % of it."""
        if reply.failure == CONTEXT:
            cap = int(0.8 * estimate_tokens(req.messages))
            ep.data["context_cap"] = min(cap, ep.data.get("context_cap") or cap)


#: Longest reply text fed back into a later prompt (history, a partner's message): twice
#: GPTNT's 1000-token reply budget at ~4 characters a token. Transcripts keep the whole reply.
MAX_FEEDBACK_CHARS = 8000


def clip(text: str, limit: int = MAX_FEEDBACK_CHARS) -> str:
    """``text`` cut to ``limit`` characters, marked ``[… N characters cut]`` when cut."""
    text = text or ""
    return text if len(text) <= limit else f"{text[:limit]} [… {len(text) - limit} characters cut]"


def estimate_tokens(messages) -> int:
    """A conservative token count of chat ``messages`` without a tokenizer: 3 characters a
    token (English prose runs ~4, JSON and numbers fewer) plus 4 per message."""
    return sum(len(str(m.get("content") or "")) // 3 + 4 for m in messages)


class Host:
    """Runs a :class:`Game` for a batch of episodes against one :class:`ChatClient`.

    Args:
        game: the family's host side.
        client: the chat client (cache, concurrency, usage).
        on_step: optional ``callable(n_requests)`` after each step (progress bars).
    """

    def __init__(self, game: Game, client: ChatClient, on_step=None):
        self.game, self.client, self.on_step = game, client, on_step
        self.episodes: dict[int, Episode] = {}
        self.ids: dict[bytes, int] = {}
        #: what stopped the current rollout (an error, or KeyboardInterrupt on SIGINT/SIGTERM):
        #: once set, every further callback answers no-ops at once, so the rollout ends within
        #: moments; :meth:`reraise` raises it after the rollout
        self.error: BaseException | None = None

    def episode(self, index: int) -> Episode:
        if index not in self.episodes:
            self.episodes[index] = Episode(index, {r: [] for r in self.game.roles}, {})
        return self.episodes[index]

    def drive(self, jobs: list[tuple[Episode, Turn]]) -> list[Any]:
        """Run each episode's generator in lockstep, one concurrent request batch per round;
        their results. Every reply is charged to its episode (:meth:`Episode.charge`)."""
        results: list[Any] = [None] * len(jobs)
        pending = {}
        for i, (_, g) in enumerate(jobs):
            try:
                pending[i] = (g, next(g))
            except StopIteration as stop:
                results[i] = stop.value
        while pending:
            order = list(pending)
            flat = [r for i in order for r in pending[i][1]]
            replies = self.client.complete_many(flat)
            at, nxt = 0, {}
            for i in order:
                g, reqs = pending[i]
                chunk, at = replies[at: at + len(reqs)], at + len(reqs)
                for req, reply in zip(reqs, chunk):
                    jobs[i][0].charge(req, reply)
                try:
                    nxt[i] = (g, g.send(chunk))
                except StopIteration as stop:
                    results[i] = stop.value
            pending = nxt
            if self.on_step:
                self.on_step(len(flat))
        return results

    def begin(self, keys, ids) -> None:
        """Map the episode keys ``[B]`` of the next rollout to episode indices (``-1``: padding,
        never queried), via the policy-init key each episode's policy state carries."""
        init = jax.vmap(lambda k: split_episode_key(k)[1])(jnp.asarray(keys))
        self.ids = {_key_id(k): int(i) for k, i in zip(np.asarray(jax.random.key_data(init)
                                                                  if _typed(init) else init), ids)}

    def callback(self, obs, key, step):
        """The ``pure_callback`` body: batched (or single) episodes → joint actions."""
        obs, key, step = (np.asarray(x) for x in (obs, key, step))
        single = step.ndim == 0
        if single:
            obs, key, step = obs[None], key[None], step[None]
        episode = [self.ids.get(_key_id(k), -1) for k in key]
        ended = obs[:, 0, -1] != 0
        live = [b for b in range(len(step)) if episode[b] >= 0 and not ended[b]]
        acts = []
        self.game.budget = self.client.prompt_budget()  # the server's limit, once checked
        if self.error is None and signals.interrupted():  # this may not be the main thread
            self.error = KeyboardInterrupt("stopped by a signal")
        if self.error is None:
            try:
                acts = self.drive([(self.episode(episode[b]), self.game.turn(
                    self.episode(episode[b]), int(step[b]), obs[b, :, :-1])) for b in live])
            except BaseException as e:  # noqa: BLE001  (re-raised after the rollout: reraise)
                self.error = e
                acts = []
        out = [self.game.noop() for _ in range(len(step))]
        for b, a in zip(live, acts):
            out[b] = a
        joint = jax.tree.map(lambda *xs: np.stack(xs), *out)
        struct = self.game.action_struct()
        joint = jax.tree.map(lambda x, s: np.asarray(x, s.dtype), joint, struct)
        return jax.tree.map(lambda x: x[0], joint) if single else joint

    def finish(self, outcomes: dict[int, str]) -> None:
        """End-of-game exchanges for the given episodes (``{index: outcome name}``)."""
        self.drive([(self.episode(i), self.game.finish(self.episode(i), o))
                    for i, o in outcomes.items()])

    def reraise(self) -> None:
        """Raise what stopped the last rollout, if anything did (its episodes are unfinished:
        the caller keeps only earlier chunks; the cache replays this one's replies)."""
        error, self.error = self.error, None
        if error is not None:
            raise error


def _typed(key) -> bool:
    return jnp.issubdtype(key.dtype, jax.dtypes.prng_key)


def _key_id(key) -> bytes:
    return np.asarray(key, np.uint32).tobytes()


class EndedFlag(Wrapper):
    """Appends one token to every observation row: 1 once the episode has ended, else 0.

    The LLM host reads it to stop querying ended episodes (the library rollout keeps stepping
    ended episodes until the whole batch has ended). The flag is sticky (kept in the state, so it
    holds even where an environment reports ``terminated`` only on the ending step), and the
    state also counts the steps played. State: ``{"env": wrapped state, "ended": bool [],
    "length": int32 []}``; observations: int32 ``[n_agents, L + 1]``.
    """

    def _flag(self, obs, ended):
        col = jnp.broadcast_to(jnp.asarray(ended, jnp.int32), obs.shape[:-1] + (1,))
        return jnp.concatenate([obs, col], axis=-1)

    def reset(self, key, params=None):
        obs, state = self.env.reset(key, params)
        return self._flag(obs, False), {"env": state, "ended": jnp.bool_(False),
                                        "length": jnp.int32(0)}

    def step(self, key, state, actions, params=None):
        obs, inner, reward, term, trunc, info = self.env.step(key, state["env"], actions, params)
        was = state["ended"]
        ended = was | term | trunc
        new = {"env": inner, "ended": ended, "length": state["length"] + ~was}
        reward = jnp.where(was, 0.0, reward)
        return self._flag(obs, ended), new, reward, term | was, trunc & ~was, info

    def observe(self, state, params=None):
        return self._flag(self.env.observe(state["env"], params), state["ended"])

    def __hash__(self):
        return hash((EndedFlag, self.env))

    def __eq__(self, other):
        return isinstance(other, EndedFlag) and other.env == self.env


#: The host each policy slot calls (see :func:`make_policy`).
_HOSTS: dict[str, Host] = {}


@dataclasses.dataclass(frozen=True)
class _Act:
    """``act`` of an LLM policy: compares by value (slot and action shapes), so every run in a
    process that plays the same environment reuses one compiled rollout."""

    slot: str
    struct: Any

    def __call__(self, key, obs, policy_state):
        del key  # sampling randomness lives on the server; the cache makes replies replayable
        actions = jax.pure_callback(
            lambda *args: _HOSTS[self.slot].callback(*args), self.struct, obs,
            policy_state["key"], policy_state["t"], vmap_method="broadcast_all")
        return actions, {**policy_state, "t": policy_state["t"] + 1}


def _init(key):
    return {"key": jax.random.key_data(key) if _typed(key) else key, "t": jnp.int32(0)}


def make_policy(host: Host, slot: str = "llm") -> Policy:
    """The LLM team as a :class:`jaxcollab.Policy` (play it on ``EndedFlag(env)``).

    Policy state: ``{"key": the episode's policy-init key data, "t": step}``. ``host`` becomes
    the active host of ``slot``: the compiled rollout calls whichever host is active there, so
    one slot serves one run at a time.
    """
    _HOSTS[slot] = host
    return Policy(act=_Act(slot, host.game.action_struct()), init=_init, name=f"llm-{slot}")
