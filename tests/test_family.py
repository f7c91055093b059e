"""Family plug-ins (jaxcollab.core.family): a toy family added from this file through the public
API plays through ``eval/rollout.py`` (a scripted team and an LLM team against the local test
server), ``eval/export.py``; one episode-key convention across every family and team; the run
driver's collision guard and resume for LLM runs."""

from __future__ import annotations

import json
import re

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from llm_server import LLMServer, fixed_latency

import jaxcollab
from jaxcollab.core.env import Environment
from jaxcollab.core.export import record, reset_instances
from jaxcollab.core.family import Family, LLMGame, ScriptedTeam, Spec
from jaxcollab.core.registry import family_names
from jaxcollab.core.rollout import split_episode_key
from jaxcollab.core.spaces import Discrete
from jaxcollab.io.run import RunCollision
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


@pytest.fixture(scope="module")
def server():
    with LLMServer(latency=fixed_latency(0.05)) as srv:
        yield srv


def llm_args(server, out, *extra):
    return ("env=toy/guess", "agent=llm", f"llm.base_url={server.url}", "llm.model=good",
            "llm.backoff_s=0.01", "episodes=6", "chunk=3", f"out_dir={out}", *extra)


def test_toy_family_rollout_export_and_llm(cli, tmp_path, server):
    assert jaxcollab.family("toy/guess") is FAMILY
    scripted = cli("eval/rollout.py", "env=toy/guess", "agent=tell", "episodes=8",
                   f"out_dir={tmp_path / 's'}")
    assert scripted["success_rate"] == 1.0 and scripted["mean_steps"] == 2.0
    assert scripted["config"]["agent"] == "tell"
    path = cli("eval/export.py", "env=toy/guess", "n=6", f"out={tmp_path / 'x.jsonl'}")
    targets = [json.loads(line)["target"] for line in path.read_text().splitlines()]
    res = cli("eval/rollout.py", *llm_args(server, tmp_path / "l"))
    # the server always answers "~d" (digit 0): episode i is won iff exported instance i's
    # target is 0, on the first step; else never
    won = [t == 0 for t in targets]
    assert res["success_rate"] == np.mean(won) and res["episodes"] == 6
    assert res["mean_steps"] == np.mean([1 if w else 4 for w in won])
    assert res["model"] == "good" and res["parse_errors"] == {}
    assert set(res["tokens"]) == {"seer", "guesser", "total"}
    lines = (tmp_path / "l" / "toy-guess.jsonl").read_text().splitlines()
    recs = [json.loads(x) for x in lines]
    assert [r["episode"] for r in recs] == list(range(6))
    for r, t in zip(recs, targets):
        assert r["agents"]["seer"][0]["prompt"][-1]["content"] == f"step 0: digit {t}"


def test_llm_rerun_resumes_and_a_changed_model_is_refused(cli, tmp_path, server):
    out = tmp_path / "run"
    first = cli("eval/rollout.py", *llm_args(server, out))
    n = len(server.requests)
    again = cli("eval/rollout.py", *llm_args(server, out, "llm.concurrency=2"))  # pacing only
    assert len(server.requests) == n and again["success_rate"] == first["success_rate"]
    for key, value in (("llm.model", "slow"), ("seed", "1"), ("llm.temperature", "0.5"),
                       ("llm.base_url", "http://127.0.0.1:9/v1")):
        with pytest.raises(RunCollision, match=re.escape(key)):
            cli("eval/rollout.py", *llm_args(server, out, f"{key}={value}"))
    assert len(server.requests) == n


def _recorder():
    """A team that plays nothing: it records the key, params and reset state of each episode it
    is handed, and returns the reset states."""
    seen = {}

    class Recorder:
        name = "recorder"

        def play(self, env, keys, params, ids, *, batched_params=False):
            reset = jax.jit(jax.vmap(lambda k, p: env.reset(split_episode_key(k)[0], p)[1],
                                     (0, 0 if batched_params else None)))
            states = jax.device_get(reset(jnp.asarray(keys), params))
            for b, i in enumerate(ids):
                row = lambda tree, b=b: jax.tree.map(lambda x: np.asarray(x)[b], tree)  # noqa
                seen[tuple(i)] = (np.asarray(keys[b]), row(params) if batched_params else params,
                                  row(states))
            return states

    return Recorder(), seen


@pytest.mark.parametrize("name", [p.example for p in map(jaxcollab.family, family_names())
                                  if p.example and p.evaluate is not None])
def test_one_episode_key_convention(name):
    """Episode i of seed s: the family's evaluation hands every team (scripted, LLM) the key
    and params whose reset renders exactly the exporter's instance i."""
    family, n, seed = jaxcollab.family(name), 7, 3
    team, seen = _recorder()
    family.evaluate([name], team, Spec(n, seed, options={}))  # summarises the reset states
    assert sorted(seen) == [(name, i) for i in range(n)]
    env = jaxcollab.make(name)
    for i, rec in enumerate(family.export(name, n, seed, {})):
        key, params, state = seen[(name, i)]
        np.testing.assert_array_equal(key, jaxcollab.episode_keys(seed, n)[i])
        assert rec["text"] == {r: env.render_text(state, k, params)
                               for k, r in enumerate(env.role_names)}


def test_every_built_in_family_names_an_example_of_its_own():
    examples = {f: jaxcollab.family(f).example for f in ("bomb", "ktane", "maze", "parity")}
    for f, example in examples.items():
        assert example in jaxcollab.names() and jaxcollab.family(example).name == f, (f, example)


def test_the_rl_view_and_the_round_task_come_from_the_plug_in():
    """One plug-in object for every consumer: the RL trainer's view (``Family.rl``, through
    :func:`jaxcollab.marl.views.view_of`) and the round trainer's task (``Family.task``)."""
    from jaxcollab.collab.data import round_task
    from jaxcollab.marl.views import view_of

    assert [f for f in family_names() if jaxcollab.family(f).rl] == ["bomb", "ktane"]
    assert view_of("bomb/base-1", 2, 8).inbox[0].shape == (2, 3, 2)  # channel, sender, symbol
    ktane = view_of("ktane/wires")
    assert ktane.inbox is None and ktane.on(jaxcollab.make("ktane/wires")) is ktane
    with pytest.raises(ValueError, match="'ktane/keypad' is not this view's 'ktane/wires'"):
        ktane.on(jaxcollab.make("ktane/keypad"))
    with pytest.raises(KeyError, match="the maze family has no RL view"):
        view_of("maze/split-6x6")
    assert [f for f in family_names() if jaxcollab.family(f).task] == ["maze", "parity"]
    assert round_task({"name": "parity"}).theory and not round_task({"name": "maze"}).theory
    assert round_task({"name": "maze"}).experiment == "mazes"
    with pytest.raises(ValueError, match=r"unknown task 'bomb'; expected one of \['maze', "
                       r"'parity'\]"):
        round_task({"name": "bomb"})


def test_parity_exporter_is_the_rollout_reset():
    name, n, seed = "parity/action", 5, 2
    env, recs = jaxcollab.make(name), jaxcollab.family(name).export(name, n, seed, {})
    keys = jaxcollab.episode_keys(seed, n)
    for i, rec in enumerate(recs):
        state = env.reset(split_episode_key(keys[i])[0])[1]
        assert rec["bits"] == np.asarray(state.bits).tolist()


def test_entry_points_ask_the_plug_in():
    """No probing and no family switchboards in the entry points."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    for path in ("eval/rollout.py", "eval/export.py", "eval/llm.py", "eval/protocols.py",
                 "jaxcollab/llm/run.py"):
        text = (root / path).read_text()
        for banned in ("hasattr(", "import_module", "family ==", "family==", "startswith(\"bomb",
                       "startswith(\"maze", "startswith(\"ktane"):
            assert banned not in text, (path, banned)


def test_eval_llm_is_the_rollout_driver_with_agent_llm(tmp_path, server):
    """``python eval/llm.py …`` composes ``configs/llm.yaml`` (rollout's keys, agent=llm) and
    runs ``eval/rollout.py``'s ``run``."""
    from conftest import ROOT
    from hydra import compose, initialize_config_dir

    from eval import llm, rollout

    with initialize_config_dir(str(ROOT / "configs"), version_base=None):
        cfg = compose("llm", overrides=[o for o in llm_args(server, tmp_path) if
                                        not o.startswith("agent=")])
    assert llm.run is rollout.run
    res = rollout.run(cfg)
    assert res["config"]["agent"] == "llm" and res["episodes"] == 6


def test_eval_llm_command_line_composes_agent_llm():
    import os
    import subprocess
    import sys

    from conftest import ROOT

    out = subprocess.run([sys.executable, "eval/llm.py", "env=bomb/base-1", "llm.model=m",
                          "--cfg", "job"], cwd=ROOT, capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert "agent: llm" in out.stdout and "model: m" in out.stdout
