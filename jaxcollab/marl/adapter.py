"""A jaxcollab environment's RL view as a JaxMARL ``MultiAgentEnv`` (Rutherford et al. 2024,
"JaxMARL: Multi-Agent RL Environments and Algorithms in JAX"), so JaxMARL's wrappers and the
loops of its baseline scripts (``baselines/IPPO``) run on it.

Agents are named by role (``deaf``, ``mute``, ``blind`` for a bomb variant; ``defuser``,
``expert`` for Keep-Talking). Observations are each role's RL-view vector
(:class:`~jaxcollab.agents.bomb.rl_view.BombView`,
:class:`~jaxcollab.agents.ktane.rl_view.KtaneView`) as float32 token ids, plus ``world_state``
(every role's, for centralised critics); every agent gets the team reward;
``dones["__all__"]`` is the episode's end, after which JaxMARL's ``step`` resets. One turn is
one role's: only the acting role's action is played, and, as in JaxMARL's Hanabi, every other
agent's only available action is the idle one (index 0 of every head). Each ``reset`` draws the
episode's turn order uniformly from the view's ``turn_order`` table, as the project's training
does. Every ``infos`` leaf carries the agent axis (``[num_agents]``: the environment's per-turn
info and ``actor``, the acting role, repeated per agent), so the scripts' reshape to
``num_agents x num_envs`` holds. All rules stay in the environment's ``reset`` / ``step``.

Action spaces (``actions``):

- ``"discrete"``: one flat ``Discrete`` of ``prod(view.head_sizes)`` joint choices (``.n``),
  read by the scripts as they are; ``get_avail_actions`` gives the joint mask, and a choice
  whose irrelevant heads (``view.relevant``) are not 0 is masked, so each distinct action is
  offered once. Fits the Keep-Talking modules (480 choices); a bomb variant has 33,600.
- ``"factorised"``: ``MultiDiscrete(view.head_sizes)``; ``get_avail_actions`` gives each head's
  mask concatenated (bool ``[sum(head_sizes)]``), and :class:`FactorisedCategorical` is the
  policy head a script uses in place of ``distrax.Categorical``.

What a script written for a flat ``Discrete`` must change under ``"factorised"``: build its
action distribution with :class:`FactorisedCategorical` (``n_logits`` outputs) and store
actions of shape ``[n_heads]``.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
from jaxmarl.environments.multi_agent_env import MultiAgentEnv
from jaxmarl.environments.spaces import Box, Discrete, MultiDiscrete

from jaxcollab.marl import networks as nn

ACTIONS = ("discrete", "factorised")


@chex.dataclass(frozen=True)
class AdapterState:
    """The environment's state, this episode's params (its turn order) and the turns played
    (the view's ``actor`` needs them)."""

    env_state: object
    env_params: object
    turn: jax.Array


@jax.tree_util.register_pytree_node_class
class FactorisedCategorical:
    """A categorical distribution over a product of heads, independent given the logits: the
    policy head for a ``"factorised"`` :class:`JaxMARLView`, with ``distrax.Categorical``'s
    methods (``sample(seed=)``, ``log_prob``, ``entropy``, ``mode``).

    Args:
        logits: float ``[..., sum(head_sizes)]``, the heads' logits concatenated.
        head_sizes: choices per head (``view.head_sizes``; ``MultiDiscrete.num_categories``).
        mask: bool like ``logits`` (``get_avail_actions``), or ``None``: masked choices get
            probability 0; a head masked to one choice (a non-actor's idle) contributes 0 to
            log-probability and entropy.

    Raises:
        ValueError: ``logits``' last axis is not ``sum(head_sizes)``.
    """

    def __init__(self, logits: jax.Array, head_sizes, mask: jax.Array | None = None):
        self.head_sizes = tuple(int(s) for s in head_sizes)
        if logits.shape[-1] != sum(self.head_sizes):
            raise ValueError(f"logits' last axis is {logits.shape[-1]}; expected "
                             f"sum(head_sizes) = {sum(self.head_sizes)}")
        self.logits = logits
        self.mask = jnp.ones(logits.shape, bool) if mask is None else mask

    def tree_flatten(self):
        return (self.logits, self.mask), self.head_sizes

    @classmethod
    def tree_unflatten(cls, head_sizes, leaves):
        out = object.__new__(cls)  # no checks: JAX may unflatten with placeholder leaves
        out.head_sizes, (out.logits, out.mask) = head_sizes, leaves
        return out

    @property
    def _logp(self) -> list:
        return nn.head_log_probs(self.logits, self.mask, self.head_sizes)

    def sample(self, seed: jax.Array) -> jax.Array:
        """int32 ``[..., n_heads]``: one choice per head."""
        return nn.sample(seed, self._logp)

    def mode(self) -> jax.Array:
        """int32 ``[..., n_heads]``: the most likely choice per head."""
        return nn.greedy(self._logp)

    def log_prob(self, value: jax.Array) -> jax.Array:
        """float ``[...]``: the summed log-probability of every head's choice in ``value``."""
        return nn.log_prob(self._logp, value, jnp.ones(value.shape, bool))

    def entropy(self) -> jax.Array:
        """float ``[...]``: the summed entropy of the heads."""
        logp = self._logp
        return nn.entropy(logp, jnp.ones(logp[0].shape[:-1] + (len(logp),), bool))


class JaxMARLView(MultiAgentEnv):
    """``view``'s environment under JaxMARL's interface (auto-reset in ``step``, as JaxMARL
    does).

    Args:
        view: an RL view (:func:`jaxcollab.marl.views.view_of`).
        actions: ``"factorised"`` (``MultiDiscrete``) or ``"discrete"`` (flat ``Discrete``).
        turn_order: the view's turn-order table to draw each episode's order from
            (``ppo.turn_order``'s values: ``"cycle"``, every order of the variant).

    Raises:
        ValueError: an unknown ``actions``, or a turn order the view has no episodes for.
    """

    def __init__(self, view, actions: str = "factorised", turn_order: str = "cycle"):
        if actions not in ACTIONS:
            raise ValueError(f"actions={actions!r}; expected one of {ACTIONS}")
        super().__init__(num_agents=view.n_agents)
        self.view, self.env, self.actions = view, view.env, actions
        self.orders = view.episode_table(turn_order)
        self.agents = list(self.env.role_names)
        obs = Box(0.0, float(view.vocab_size - 1), (view.obs_size,), jnp.float32)
        self.observation_spaces = {a: obs for a in self.agents}
        sizes = view.head_sizes
        if actions == "discrete":
            space = Discrete(int(np.prod(sizes)))
            # every joint choice as head choices [n, n_heads], and the heads each one reads
            self.combos = np.stack(np.unravel_index(np.arange(space.n), sizes), -1)
            self.combos = self.combos.astype(np.int32)
            self.combo_relevant = np.asarray(view.relevant(jnp.asarray(self.combos)))
        else:
            space = MultiDiscrete(sizes)
        self.action_spaces = {a: space for a in self.agents}

    def _obs(self, tokens: jax.Array) -> dict:
        enc = self.view.encode(tokens).astype(jnp.float32)
        out = {a: enc[i] for i, a in enumerate(self.agents)}
        return {**out, "world_state": enc.reshape(-1)}

    def _heads(self, action) -> jax.Array:
        """int32 ``[n_heads]`` of an agent's action in this adapter's space."""
        action = jnp.asarray(action, jnp.int32)
        if self.actions == "discrete":
            return jnp.stack(jnp.unravel_index(action, self.view.head_sizes)).astype(jnp.int32)
        return action

    def reset(self, key):
        k_order, k_env = jax.random.split(key)
        n = jax.tree.leaves(self.orders)[0].shape[0]
        pick = jax.random.randint(k_order, (), 0, n)
        params = jax.tree.map(lambda x: jnp.asarray(x)[pick], self.orders)
        tokens, state = self.env.reset(k_env, params)
        return self._obs(tokens), AdapterState(env_state=state, env_params=params,
                                               turn=jnp.int32(0))

    def _actor(self, state: AdapterState) -> tuple[jax.Array, jax.Array]:
        """The encoded observation int32 ``[n_agents, obs_size]`` and the acting role."""
        enc = self.view.encode(self.env.observe(state.env_state, state.env_params))
        return enc, self.view.actor(enc, state.turn)

    def step_env(self, key, state: AdapterState, actions: dict):
        _, actor = self._actor(state)
        joint = self.view.to_env(jnp.stack([self._heads(actions[a]) for a in self.agents]))
        tokens, env_state, reward, term, trunc, info = self.env.step(
            key, state.env_state, joint, state.env_params)
        done = term | trunc
        rewards = {a: reward[i] for i, a in enumerate(self.agents)}
        dones = {**{a: done for a in self.agents}, "__all__": done}
        per_agent = jax.tree.map(lambda x: jnp.broadcast_to(x, (self.num_agents,) + x.shape),
                                 {"actor": actor, **info})
        state = state.replace(env_state=env_state, turn=state.turn + 1)
        return self._obs(tokens), state, rewards, dones, per_agent

    def get_obs(self, state: AdapterState) -> dict:
        return self._obs(self.env.observe(state.env_state, state.env_params))

    def get_avail_actions(self, state: AdapterState) -> dict:
        """Per agent the choices it may make now: the acting role's ``view.action_mask``
        (what its role lacks, and what its view does not offer, masked), every other role's
        idle action only. bool ``[sum(head_sizes)]`` (``"factorised"``: each head's mask) or
        ``[n]`` (``"discrete"``: the joint mask)."""
        enc, actor = self._actor(state)
        starts = np.cumsum((0,) + self.view.head_sizes)[:-1]
        idle = np.isin(np.arange(self.view.n_logits), starts)
        if self.actions == "discrete":
            idle = np.arange(len(self.combos)) == 0
        out = {}
        for i, a in enumerate(self.agents):
            mask = self.view.action_mask(enc, i)
            if self.actions == "discrete":  # each relevant head's choice allowed, others 0
                ok = mask[self.combos + starts]
                mask = jnp.where(self.combo_relevant, ok, self.combos == 0).all(-1)
            out[a] = jnp.where(actor == i, mask, idle)
        return out

    @property
    def name(self) -> str:
        return self.env.name
