"""GPTNT's mission sets: time limits from the turn budget, fixed bombs, the multi set's shape."""

import jax
import numpy as np
import pytest

import jaxcollab
from jaxcollab.agents.ktane import evaluate
from jaxcollab.core.rollout import episode_keys
from jaxcollab.envs.ktane import GPTNT_TIME_LIMIT_S
from jaxcollab.envs.ktane.missions import MULTI, multi_missions, single_missions, turn_budget
from jaxcollab.envs.ktane.modules import MODULE_TYPES

# GPTNT's published single-module limits in seconds (App. B.4.2), typed from the paper.
PUBLISHED = {"wires": 81, "keypad": 90, "whos_on_first": 93, "memory": 105,
             "complicated_wires": 126, "simon": 135, "wire_sequence": 135, "button": 144,
             "morse": 144, "maze": 183, "passwords": 231}  # fmt: skip
LEVEL3 = {"morse", "complicated_wires", "wire_sequence", "passwords"}


def test_turn_budget_times_three_seconds_gives_the_published_limits():
    assert {m: 3 * turn_budget(m) for m in PUBLISHED} == PUBLISHED == GPTNT_TIME_LIMIT_S
    assert turn_budget("memory") == 5 + 5 + 8 + 4 + 3 + 10


def test_single_set_is_every_module_times_ten_seeds():
    single = single_missions()
    assert len(single) == 11 * 10 == len(jaxcollab.resolve("ktane/missions/single"))
    for name, m in single.items():
        module = name.split("/")[3]
        assert m.modules == (module,) and m.time_limit_s == PUBLISHED[module]
        assert m.max_strikes == 3 and m.n_widgets == 5
    assert len({m.seed for m in single.values()}) == 110
    assert {m.modules[0] for m in single.values()} == set(MODULE_TYPES)


def test_multi_set_shape():
    multi = multi_missions()
    assert list(multi) == jaxcollab.resolve("ktane/missions/multi")
    sizes = [len(m.modules) for m in multi.values()]
    assert sum(sizes) == 34 and set(sizes) == {3, 4}
    for m in multi.values():
        assert len(set(m.modules)) == len(m.modules)  # distinct modules
        assert m.time_limit_s in (180, 300) and m.n_widgets == 5 and m.max_strikes == 3
    assert [len(LEVEL3 & set(mods)) for mods, _ in MULTI[-2:]] == [3, 3]


@pytest.mark.full  # long for the default tier (measured idle)
def test_a_mission_is_one_fixed_bomb_and_the_oracle_defuses_it():
    env = jaxcollab.make("ktane/missions/single/maze/3")
    bombs = jax.vmap(env.init_state)(episode_keys(0, 4))
    assert np.all(np.asarray(bombs.modules) == np.asarray(bombs.modules)[0])
    assert np.all(np.asarray(bombs.edge.serial) == np.asarray(bombs.edge.serial)[0])
    other = jaxcollab.make("ktane/missions/single/maze/4")
    assert other == env  # same shape: one compiled env, the seed is a runtime param
    other_bomb = other.init_state(episode_keys(0, 1)[0])
    assert not np.array_equal(np.asarray(other_bomb.modules), np.asarray(bombs.modules)[0])
    fresh = jax.vmap(jaxcollab.make("ktane/maze").init_state)(episode_keys(0, 4))
    assert len({tuple(m) for m in np.asarray(fresh.modules)[:, 0]}) > 1
    res = evaluate(["ktane/missions/single/maze/3", "ktane/missions/single/maze/4"], "oracle", 4, 0)
    assert res["success_rate"] == 1.0 and res["mean_strikes"] == 0
