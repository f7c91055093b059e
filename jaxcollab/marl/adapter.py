"""A jaxcollab environment's RL view as a JaxMARL ``MultiAgentEnv`` (Rutherford et al. 2024,
"JaxMARL: Multi-Agent RL Environments and Algorithms in JAX"), so JaxMARL's wrappers and
baselines run on it unchanged.

Agents are named by role (``deaf``, ``mute``, ``blind`` for a bomb variant; ``defuser``,
``expert`` for Keep-Talking). Observations are each role's RL-view vector
(:class:`~jaxcollab.agents.bomb.rl_view.BombView`,
:class:`~jaxcollab.agents.ktane.rl_view.KtaneView`) as float32 token ids, plus ``world_state``
(every role's, for centralised critics); actions are each
role's discrete action ``[n_heads]`` (``MultiDiscrete``); every agent gets the team reward;
``dones["__all__"]`` is the episode's end, after which JaxMARL's ``step`` resets. Only the
acting role's action is played each turn (one turn is one role's); ``infos`` carry the acting
role. All rules stay in the environment's ``reset`` / ``step``.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
from jaxmarl.environments.multi_agent_env import MultiAgentEnv
from jaxmarl.environments.spaces import Box, MultiDiscrete


@chex.dataclass(frozen=True)
class AdapterState:
    """The environment's state and the turns played (a view may need them for the actor)."""

    env_state: object
    turn: jax.Array


class JaxMARLView(MultiAgentEnv):
    """``view``'s environment under JaxMARL's interface (auto-reset in ``step``, as JaxMARL
    does)."""

    def __init__(self, view):
        super().__init__(num_agents=view.n_agents)
        self.view, self.env, self.params = view, view.env, view.env.default_params
        self.agents = list(self.env.role_names)
        obs = Box(0.0, float(view.vocab_size - 1), (view.obs_size,), jnp.float32)
        self.observation_spaces = {a: obs for a in self.agents}
        self.action_spaces = {a: MultiDiscrete(view.head_sizes) for a in self.agents}

    def _obs(self, tokens: jax.Array) -> dict:
        enc = self.view.encode(tokens).astype(jnp.float32)
        out = {a: enc[i] for i, a in enumerate(self.agents)}
        return {**out, "world_state": enc.reshape(-1)}

    def reset(self, key):
        tokens, state = self.env.reset(key, self.params)
        return self._obs(tokens), AdapterState(env_state=state, turn=jnp.int32(0))

    def step_env(self, key, state: AdapterState, actions: dict):
        tokens = self.env.observe(state.env_state, self.params)
        actor = self.view.actor(self.view.encode(tokens), state.turn)
        joint = self.view.to_env(jnp.stack([jnp.asarray(actions[a], jnp.int32)
                                            for a in self.agents]))
        tokens, env_state, reward, term, trunc, info = self.env.step(
            key, state.env_state, joint, self.params)
        done = term | trunc
        rewards = {a: reward[i] for i, a in enumerate(self.agents)}
        dones = {**{a: done for a in self.agents}, "__all__": done}
        state = AdapterState(env_state=env_state, turn=state.turn + 1)
        return self._obs(tokens), state, rewards, dones, {"actor": actor, **info}

    def get_obs(self, state: AdapterState) -> dict:
        return self._obs(self.env.observe(state.env_state, self.params))

    def get_avail_actions(self, state) -> dict:
        """Per agent the choices it may make now, bool ``[n_logits]`` (``view.action_mask``:
        what its role lacks, and what its view does not offer, masked)."""
        enc = self.view.encode(self.env.observe(state.env_state, self.params))
        return {a: self.view.action_mask(enc, i) for i, a in enumerate(self.agents)}

    @property
    def name(self) -> str:
        return self.env.name
