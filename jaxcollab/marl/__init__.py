"""Multi-agent RL on the puzzle families: the RL view protocol (each family's view is its
plug-in's, :attr:`jaxcollab.core.family.Family.rl`), IPPO / MAPPO with recurrent policies
under one ``jit``, learned teams as rollout policies (the ``learned`` team of every family with
an RL view) and the JaxMARL adapter."""

from jaxcollab.marl.ppo import PPOConfig, Trainer
from jaxcollab.marl.team import learned, learned_team, load_team, save_team
from jaxcollab.marl.views import View, view_of

__all__ = ["PPOConfig", "Trainer", "View", "learned", "learned_team", "load_team", "save_team",
           "view_of"]
