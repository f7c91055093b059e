"""SANZARU's messages: speech without ``to`` reaches every teammate who can hear (Table 1), the
message caps come from the bomb block and fit Fig. 11's 138-gesture message, a cut message is
reported to its sender, and the paper's call syntax is read beside the JSON calls."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcollab.envs.bomb import BombEnv, make_params
from jaxcollab.envs.bomb import tables as T
from jaxcollab.envs.bomb.env import reset_jit, turn_jit
from jaxcollab.envs.bomb.rules import delivery

ORDER = (T.DEAF, T.MUTE, T.BLIND)


@pytest.fixture(scope="module")
def env():
    return BombEnv("base-1")


def _fresh(env):
    params = make_params(T.variant("base-1"), ORDER)
    state = reset_jit(jax.random.PRNGKey(0), params, speech_bytes=env.speech_bytes,
                      gesture_symbols=env.gesture_symbols)
    return state, params


def test_delivery_to_everyone_follows_the_receive_table():
    """Speech to everyone: Deaf's and Blind's reach a teammate in full (Mute hears), Mute's
    bounces (it cannot speak); a gesture to everyone reaches someone in full from Deaf and
    Mute, and bounces from Blind (it cannot gesture)."""
    got = {(s, ch): int(delivery(jnp.int32(s), jnp.int32(T.EVERYONE), ch))
           for s in range(T.N_AGENTS) for ch in (T.SPEECH, T.GESTURE)}
    assert got == {(T.DEAF, T.SPEECH): T.FULL, (T.DEAF, T.GESTURE): T.FULL,
                   (T.MUTE, T.SPEECH): T.BOUNCE, (T.MUTE, T.GESTURE): T.FULL,
                   (T.BLIND, T.SPEECH): T.FULL, (T.BLIND, T.GESTURE): T.BOUNCE}


def test_speech_to_everyone_reaches_who_can_hear(env):
    state, params = _fresh(env)
    deaf = env.action("deaf", speak_to="everyone", text="Light is green.")
    state = turn_jit(state, deaf, params)[0]
    assert int(state.bounces) == 0
    for role in (T.MUTE, T.BLIND):  # SANZARU Table 1: both receive Deaf's speech
        assert 'FROM deaf (speech): "Light is green."' in env.render_text(state, role)
    assert 'YOU SENT (speech) to everyone: "Light is green."' in env.render_text(state, T.DEAF)
    mute = env.action("mute", gesture_to="everyone", symbols=("point_up", "fist"))
    state = turn_jit(state, mute, params)[0]
    assert "FROM mute (gesture): ☝️ ✊" in env.render_text(state, T.DEAF)
    assert "FROM mute (gesture): ? ?" in env.render_text(state, T.BLIND).splitlines()
    blind = env.action("blind", speak_to="everyone", text="I feel three wires.")
    state = turn_jit(state, blind, params)[0]
    assert int(state.bounces) == 0  # Mute hears it: not dead-channel use
    assert 'FROM blind (speech): "I feel three wires."' in env.render_text(state, T.MUTE)
    deaf_view = env.render_text(state, T.DEAF)
    assert "three wires" not in deaf_view  # Deaf cannot hear
    state = turn_jit(state, env.action("deaf", speak_to="mute", text="x"), params)[0]
    state = turn_jit(state, env.action("mute", speak_to="everyone", text="y"), params)[0]
    assert int(state.bounces) == 1  # Mute cannot speak, to anyone
    assert "NOTICE your speech bounced" in env.render_text(state, T.MUTE)
