"""Host-callback bridge: an LLM team as a policy of the library rollout.

``policy(key, obs, policy_state) -> (actions, policy_state)`` calls ``jax.pure_callback`` once
per step (``vmap_method="broadcast_all"``: under the rollout's ``vmap`` the host receives the
whole batch of episodes at once). On the host, a :class:`Game` (one per family: prompts and
action encoding) turns each episode's observation rows into requests, the :class:`Host` sends the
requests of *all* agents of *all* episodes concurrently, and the game turns the replies into the
joint action the environment's ``step`` applies. Every rule stays in the environment: the host
only renders observations (``env.render_observation`` / the family's token renderer), parses
replies and encodes actions. Replies are cached by request hash, so the callback is
deterministic and a rerun replays it exactly (DESIGN.md "LLM path").

A game's :meth:`Game.turn` is a generator: it yields lists of :class:`~.client.Request` (one
batch per conversation round) and receives the replies, then returns the joint action. This lets
one step hold several rounds (the maze protocol's K rounds, sampled responses) while still
batching every episode's requests together.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Generator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.llm.client import ChatClient, Reply, Request
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

    def episode(self, index: int) -> Episode:
        if index not in self.episodes:
            self.episodes[index] = Episode(index, {r: [] for r in self.game.roles}, {})
        return self.episodes[index]

    def drive(self, turns: list[Turn]) -> list[Any]:
        """Run generators in lockstep, one concurrent request batch per round; their results."""
        results: list[Any] = [None] * len(turns)
        pending = {}
        for i, g in enumerate(turns):
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
                try:
                    nxt[i] = (g, g.send(chunk))
                except StopIteration as stop:
                    results[i] = stop.value
            pending = nxt
            if self.on_step:
                self.on_step(len(flat))
        return results

    def callback(self, obs, episode, step, done):
        """The ``pure_callback`` body: batched (or single) episodes → joint actions."""
        obs, episode, step, done = (np.asarray(x) for x in (obs, episode, step, done))
        single = episode.ndim == 0
        if single:
            obs, episode, step, done = obs[None], episode[None], step[None], done[None]
        live = [b for b in range(len(episode)) if not done[b]]
        acts = self.drive([self.game.turn(self.episode(int(episode[b])), int(step[b]), obs[b])
                           for b in live])
        out = [self.game.noop() for _ in range(len(episode))]
        for b, a in zip(live, acts):
            out[b] = a
        joint = jax.tree.map(lambda *xs: np.stack(xs), *out)
        struct = self.game.action_struct()
        joint = jax.tree.map(lambda x, s: np.asarray(x, s.dtype), joint, struct)
        return jax.tree.map(lambda x: x[0], joint) if single else joint

    def finish(self, outcomes: dict[int, str]) -> None:
        """End-of-game exchanges for the given episodes (``{index: outcome name}``)."""
        self.drive([self.game.finish(self.episode(i), o) for i, o in outcomes.items()])


def init_policy_state(episodes) -> dict:
    """Policy state of a batch: int32 ``episode`` ids ``[B]``, step ``t`` and ``done`` flags."""
    episodes = jnp.asarray(episodes, jnp.int32)
    return {"episode": episodes, "t": jnp.zeros_like(episodes),
            "done": jnp.zeros(episodes.shape, bool)}


def make_policy(host: Host):
    """The LLM team as ``policy(key, obs, policy_state) -> (actions, policy_state)``.

    ``policy_state`` is one episode's slice of :func:`init_policy_state`; the rollout sets
    ``done`` once the episode ended so its agents are not queried again. ``key`` is unused:
    sampling randomness lives on the server, and the cache makes replies replayable.
    """

    def policy(key, obs, policy_state):
        del key
        actions = jax.pure_callback(
            host.callback, host.game.action_struct(), obs, policy_state["episode"],
            policy_state["t"], policy_state["done"], vmap_method="broadcast_all")
        return actions, {**policy_state, "t": policy_state["t"] + 1}

    return policy
