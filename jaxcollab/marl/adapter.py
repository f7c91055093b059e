"""A bomb variant as a JaxMARL ``MultiAgentEnv`` (Rutherford et al. 2024, "JaxMARL:
Multi-Agent RL Environments and Algorithms in JAX"), so JaxMARL's wrappers and baselines run
on it unchanged.

Agents are named by role (``deaf``, ``mute``, ``blind``). Observations are each role's RL-view
vector (:class:`~jaxcollab.marl.view.BombView`) as float32 token ids, plus ``world_state`` (all
three, for centralised critics); actions are each role's discrete action ``[n_heads]``
(``MultiDiscrete``); every agent gets the team reward; ``dones["__all__"]`` is the episode's end
(defused, wrong action or out of rounds), after which JaxMARL's ``step`` resets. Only the acting
role's action is played each turn (one turn is one role's; SANZARU Table 1); ``infos`` carry the
acting role and the ending. All rules stay in the environment's ``reset`` / ``step``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxmarl.environments.multi_agent_env import MultiAgentEnv
from jaxmarl.environments.spaces import Box, MultiDiscrete

from jaxcollab.envs.bomb import tables as T
from jaxcollab.marl.view import BombView


class JaxMARLBomb(MultiAgentEnv):
    """``view``'s variant under JaxMARL's interface (auto-reset in ``step``, as JaxMARL does)."""

    def __init__(self, view: BombView):
        super().__init__(num_agents=T.N_AGENTS)
        self.view, self.env, self.params = view, view.env, view.env.default_params
        self.agents = list(T.ROLE_NAMES)
        obs = Box(0.0, float(view.vocab_size - 1), (view.obs_size,), jnp.float32)
        self.observation_spaces = {a: obs for a in self.agents}
        self.action_spaces = {a: MultiDiscrete(view.head_sizes) for a in self.agents}

    def _obs(self, tokens: jax.Array) -> dict:
        enc = self.view.encode(tokens).astype(jnp.float32)
        out = {a: enc[i] for i, a in enumerate(self.agents)}
        return {**out, "world_state": enc.reshape(-1)}

    def reset(self, key):
        tokens, state = self.env.reset(key, self.params)
        return self._obs(tokens), state

    def step_env(self, key, state, actions: dict):
        tokens = self.env.observe(state, self.params)
        actor = self.view.actor(tokens)
        joint = self.view.to_env(jnp.stack([jnp.asarray(actions[a], jnp.int32)
                                            for a in self.agents]))
        tokens, state, reward, term, trunc, info = self.env.step(key, state, joint, self.params)
        done = term | trunc
        rewards = {a: reward[i] for i, a in enumerate(self.agents)}
        dones = {**{a: done for a in self.agents}, "__all__": done}
        return self._obs(tokens), state, rewards, dones, {"actor": actor, **info}

    def get_obs(self, state) -> dict:
        return self._obs(self.env.observe(state, self.params))

    def get_avail_actions(self, state) -> dict:
        """Per agent the choices it may make, bool ``[n_logits]`` (channels it lacks masked)."""
        mask = jnp.asarray(self.view.logit_mask)
        return {a: mask[i] for i, a in enumerate(self.agents)}

    @property
    def name(self) -> str:
        return self.env.name
