"""Family plug-ins (jaxcollab.core.family): a toy family added through the public API
(``tests/toy_family.py``) plays through ``eval/rollout.py`` (a scripted team and an LLM team
against the local test server), ``eval/export.py``; one episode-key convention across every
family and team; the run driver's collision guard and resume for LLM runs."""

from __future__ import annotations

import json
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from llm_server import LLMServer, fixed_latency
from toy_family import FAMILY

import jaxcollab
from jaxcollab.core.family import Spec
from jaxcollab.core.registry import family_names
from jaxcollab.core.rollout import split_episode_key
from jaxcollab.io.run import RunCollision


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
    from jaxcollab.agents.maze import _experiment as maze_experiment
    from jaxcollab.agents.parity.task import _experiment as parity_experiment
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
    parity, maze = round_task({"name": "parity"}), round_task({"name": "maze"})
    assert parity.theory.methods == ("closed_form", "enumeration") and maze.theory is None
    assert parity.scores is None and maze.scores.name == "maze_success"
    assert parity.experiment is parity_experiment  # the wing's Protocols
    assert maze.experiment is maze_experiment  # the wing's Mazes
    assert (parity.config.__name__, maze.config.__name__) == ("ParityTask", "MazeTask")
    assert (set(parity.run_keys), set(maze.run_keys)) == ({"seeds", "separation"},
                                                          {"bayes_mazes"})
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
    for path in ("jaxcollab/agents/driver.py", "eval/export.py", "eval/llm.py", "eval/protocols.py",
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
