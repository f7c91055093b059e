"""The protocol tables on a hand-written team through the RL view: exact mutual information and
dead-channel use."""

import jax.numpy as jnp
import numpy as np
import pytest

import jaxcollab
from jaxcollab.agents.bomb.rl_protocol import protocol_tables
from jaxcollab.agents.bomb.rl_view import make_view
from jaxcollab.agents.bomb.view import parse
from jaxcollab.envs.bomb import tables as T

VIEW = make_view("bomb/base-1")


def _team(key, obs):
    """Deaf gestures the light to Mute and speaks to itself (a bounce); the others idle."""
    light = parse(obs[T.DEAF], T.DEAF, VIEW.env.layout).light
    a = jnp.zeros((T.N_AGENTS, len(VIEW.head_sizes)), jnp.int32)
    g, s = VIEW.recipient_head(1), VIEW.recipient_head(0)
    a = a.at[T.DEAF, g].set(1 + T.MUTE).at[T.DEAF, g + 1].set(light)
    a = a.at[T.DEAF, s].set(1 + T.DEAF).at[T.DEAF, s + 1].set(3)
    return VIEW.to_env(a)


@pytest.mark.full  # long for the default tier (measured idle)
def test_tables_of_a_hand_written_protocol():
    tables = protocol_tables(jaxcollab.stateless(_team, name="light"), VIEW, episodes=64)
    assert set(tables) == {"deaf/speech", "deaf/gesture", "mute/gesture", "blind/speech"}
    g = tables["deaf/gesture"]
    assert g["turns"] == 64 * 8 and g["sent"] == g["turns"] and g["dead_channel"] == 0.0
    assert g["recipients"] == {"deaf": 0, "mute": g["sent"], "blind": 0, "everyone": 0}
    light = g["features"]["light"]
    counts = np.asarray(light["table"]).sum(1)
    entropy = -(counts / counts.sum() * np.log2(counts / counts.sum())).sum()
    assert light["mutual_information_bits"] == pytest.approx(entropy)   # the light, one-to-one
    assert tables["deaf/speech"]["dead_channel"] == 1.0                 # speech to Deaf bounces
    assert tables["mute/gesture"]["sent"] == 0
    heard = tables["mute/gesture"]["features"]["heard_gesture"]["values"]
    assert heard and min(heard) >= 1 and max(heard) <= T.N_LIGHTS      # gesture ids: the light
