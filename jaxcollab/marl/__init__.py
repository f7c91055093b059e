"""Multi-agent RL on the puzzle families: the RL views of the bomb variants and Keep-Talking
modules, IPPO / MAPPO with recurrent policies under one ``jit``, learned teams as rollout
policies, the JaxMARL adapter and the analysis of a learned protocol."""

from jaxcollab.agents.bomb.rl_view import BombView, make_view
from jaxcollab.marl.ppo import PPOConfig, Trainer
from jaxcollab.marl.team import learned_team, load_team, save_team

__all__ = ["BombView", "PPOConfig", "Trainer", "learned_team", "load_team", "make_view",
           "save_team"]
