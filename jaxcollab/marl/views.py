"""The RL view: what the trainer (:mod:`jaxcollab.marl.ppo`) needs of an environment.

A family with an RL view offers it through its plug-in (:attr:`jaxcollab.core.family.Family.rl`);
:func:`view_of` is the one lookup, so the trainer, the learned team and the entry points never
branch on a family's name. A view turns each role's observation into a fixed-size token vector,
names who acts each turn, lays out the action heads and their masks, and maps a head choice
back to the environment's action.
"""

from __future__ import annotations

from typing import Any, Protocol

import jax
import numpy as np

from jaxcollab.core.env import Environment
from jaxcollab.core.registry import family

#: The recipient-head value that sends nothing (views with a symbol :attr:`View.inbox`).
NOBODY = 0


class View(Protocol):
    """An environment as the RL trainer sees it (leading agent axis throughout).

    ``inbox`` is ``None`` for a view without symbol channels; else ``(slots int32 [2, n_agents,
    symbols], tokens int32 [2, alphabet])``: where each channel's heard symbols sit in the
    encoded vector and the token each symbol arrives as, for gradients through the channel
    (``dial``), with :meth:`recipient_head` the head before each channel's symbol heads.
    """

    env: Environment
    n_agents: int
    symbols: int
    alphabet: int
    inbox: tuple[np.ndarray, np.ndarray] | None

    @property
    def obs_size(self) -> int: ...  # tokens per encoded role row

    @property
    def vocab_size(self) -> int: ...  # distinct token ids in an encoded row

    @property
    def max_turns(self) -> int: ...  # turns of the longest episode

    @property
    def head_sizes(self) -> tuple[int, ...]: ...  # choices per action head

    @property
    def n_logits(self) -> int: ...  # sum of head_sizes

    @property
    def answer_sizes(self) -> tuple[int, ...]: ...  # classes per auxiliary answer head

    @property
    def logit_mask(self) -> np.ndarray: ...  # bool [n_agents, n_logits]: static legality

    def encode(self, obs: jax.Array) -> jax.Array:
        """int32 ``[..., n_agents, obs_size]`` of the environment's observation."""

    def actor(self, enc: jax.Array, turn: jax.Array) -> jax.Array:
        """int32 index of the role acting this turn."""

    def episode_table(self, turn_order: str, heldout: bool = False) -> Any:
        """The per-episode params table of a ``ppo.turn_order`` to train on (``heldout``: to
        evaluate on; raises ValueError)."""

    def success(self, state) -> jax.Array:
        """bool: the episode was won."""

    def progress(self, state) -> jax.Array:
        """int32: correct steps done so far (cuts, code digits, modules solved)."""

    def answer(self, state, params) -> jax.Array:
        """int32 ``[len(answer_sizes)]``: the auxiliary targets of this state."""

    def action_mask(self, enc: jax.Array, actor: jax.Array) -> jax.Array:
        """bool ``[n_logits]``: the legal choices of ``actor`` now."""

    def relevant(self, action: jax.Array) -> jax.Array:
        """bool ``[..., n_heads]``: the heads that matter for this action."""

    def to_env(self, action: jax.Array) -> Any:
        """The environment's joint action of head choices ``[n_agents, n_heads]``."""

    def recipient_head(self, channel: int) -> int:
        """The head choosing channel ``channel``'s recipient (views with an inbox)."""

    def on(self, env: Environment) -> View:
        """This view on ``env``, an environment of the same variant (e.g. other message caps,
        or a pinned-instance bank env). Raises ValueError for another variant."""


def view_of(env: str, symbols: int = 1, alphabet: int = 8, rulesets: str = "vanilla") -> View:
    """The RL view of environment ``env`` from its family's plug-in
    (:attr:`jaxcollab.core.family.RL.view`); ``rulesets``: ``"vanilla"`` or, for a family
    whose rules are runtime params (Keep Talking), ``"episode"`` (one random ruleset per
    episode).

    Raises:
        KeyError: no family of that name, or a family without an RL view (named).
        ValueError: sizes or a ``rulesets`` the view refuses.
    """
    plugin = family(env)
    if plugin.rl is None:
        raise KeyError(f"env={env!r}: the {plugin.name} family has no RL view "
                       "(Family.rl; e.g. bomb/base-1 or ktane/wires)")
    return plugin.rl.view(env, symbols, alphabet, rulesets)


__all__ = ["NOBODY", "View", "view_of"]
