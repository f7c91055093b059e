"""A toy family written as a user would, through the public API only: the environment
``toy/guess`` (:class:`Guess`), a scripted team ``tell``, an evaluation, an exporter and an LLM
game; importing this module registers it (``jaxcollab.register``, ``jaxcollab.register_family``).

``tests/test_family.py`` imports it in-process; ``tests/test_family_package.py`` installs it as
a package of its own (``toyfamily``, found through the ``jaxcollab.families`` entry point) and
runs the command-line entry points on it.
"""

from __future__ import annotations

import re

import chex
import jax
import jax.numpy as jnp
import numpy as np

import jaxcollab
from jaxcollab.core.env import Environment
from jaxcollab.core.export import record, reset_instances
from jaxcollab.core.family import Family, LLMGame, ScriptedTeam, Spec
from jaxcollab.core.spaces import Discrete
from jaxcollab.llm.bridge import Game
from jaxcollab.llm.client import Request
from jaxcollab.llm.parse import Parsed
from jaxcollab.scale import preempt

UNSEEN = 4  # the guesser's token before any message


@chex.dataclass(frozen=True)
class GuessState:
    target: jax.Array   # int32 [] in 0..3, seen by the seer only
    message: jax.Array  # int32 [], the seer's last message (UNSEEN before the first)
    t: jax.Array        # int32 [] steps played
    won: jax.Array      # bool []


class Guess(Environment):
    """The seer sees a digit 0..3 and sends one digit a step; the guesser sees only the
    message and wins by naming the digit within 4 steps."""

    name, n_agents, role_names = "toy/guess", 2, ("seer", "guesser")
    max_episode_steps = 4
    default_params = ()

    def reset(self, key, params=None):
        state = GuessState(target=jax.random.randint(key, (), 0, 4), message=jnp.int32(UNSEEN),
                           t=jnp.int32(0), won=jnp.bool_(False))
        return self.observe(state), state

    def step(self, key, state, actions, params=None):
        done = state.won | (state.t >= 4)
        new = state.replace(message=jnp.clip(actions[0], 0, 3), t=state.t + 1,
                            won=actions[1] == state.target)
        state = jax.tree.map(lambda a, b: jnp.where(done, a, b), state, new)
        reward = jnp.full((2,), jnp.where(done, 0.0, new.won), jnp.float32)
        return self.observe(state), state, reward, state.won, ~state.won & (state.t >= 4), {}

    def observe(self, state, params=None):
        return jnp.stack([jnp.stack([state.target, state.t]),
                          jnp.stack([state.message, state.t])]).astype(jnp.int32)

    def observation_space(self, params=None):
        return Discrete(5, (2, 2))

    def action_space(self, params=None):
        return Discrete(4, (2,))

    def render_observation(self, obs_row, role):
        what = "digit" if role == 0 else "message"
        return f"step {int(obs_row[1])}: {what} {int(obs_row[0])}"


def tell(key, obs):
    """The scripted team: the seer sends its digit, the guesser names the message."""
    return jnp.stack([obs[0, 0], obs[1, 0]]).astype(jnp.int32)


def evaluate(env_names, team, spec: Spec) -> dict:
    """Toy results: ``agent``, ``episodes``, ``success_rate``, ``mean_steps``."""
    env, keys = jaxcollab.make(env_names[0]), np.asarray(spec.keys())

    def run(rows):
        final = team.play(env, keys[rows], env.default_params,
                          [(env_names[0], int(r)) for r in rows])
        return {"won": np.asarray(final.won), "t": np.asarray(final.t)}

    final = preempt.resumable_episodes(run, np.arange(spec.episodes),
                                       min(spec.chunk, spec.episodes), spec.save_dir)
    return {"agent": team.name, "episodes": spec.episodes,
            "success_rate": float(final["won"].mean()), "mean_steps": float(final["t"].mean())}


def export(name, n, seed, options):
    env = jaxcollab.make(name)
    obs, states = reset_instances(env, n, seed)
    return [{**record(env, seed, i, obs[i]), "target": int(states.target[i])} for i in range(n)]


MOVES = "drul"  # the test server answers "~d" to any prompt it does not recognise


class GuessGame(Game):
    """LLM side: each step both roles read their row and answer a move; its index is the
    digit sent (seer) or guessed (guesser)."""

    roles = ("seer", "guesser")

    def __init__(self, env):
        self.env = env

    def action_struct(self):
        return jax.ShapeDtypeStruct((2,), np.int32)

    def noop(self):
        return np.zeros(2, np.int32)

    def turn(self, ep, step, obs):
        reqs = [Request(role, ({"role": "system", "content": f"You are the {role}."},
                               {"role": "user", "content": self.env.render_observation(obs[r], r)}),
                        nonce=f"{ep.index}:{step}") for r, role in enumerate(self.roles)]
        replies = yield reqs
        digits = []
        for req, reply in zip(reqs, replies):
            found = re.search(r"~([drul])", reply.text)
            digits.append(MOVES.index(found.group(1)) if found else 0)
            ep.record(req.agent, step, req, reply, Parsed(digits[-1]))
        return np.asarray(digits, np.int32)


FAMILY = Family(
    name="toy",
    teams={"tell": lambda options: ScriptedTeam("tell", lambda env: jaxcollab.stateless(tell))},
    evaluate=evaluate,
    export=export,
    llm=LLMGame(game=lambda name, env, params, options: GuessGame(env),
                outcome=lambda s: (bool(s.won), "won" if s.won else "lost"), temperature=0.0),
)
jaxcollab.register("toy/guess", Guess)
jaxcollab.register_family(FAMILY)
