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
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Generator
from typing import Any

import numpy as np

from jaxcollab.llm.client import Reply, Request
from jaxcollab.llm.parse import REFUSAL, Parsed

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

    @staticmethod
    def refusal(reply: Reply) -> Parsed:
        """A refused request: no action, class ``refusal``."""
        return Parsed(None).with_errors(REFUSAL)
