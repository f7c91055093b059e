"""SANZARU's messages: speech without ``to`` reaches every teammate who can hear (Table 1), the
message caps come from the bomb block and fit Fig. 11's 138-gesture message, a cut message is
reported to its sender, and the paper's call syntax is read beside the JSON calls."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcollab.agents.bomb import FAMILY as BOMB
from jaxcollab.agents.bomb import LLM_CAPS
from jaxcollab.agents.bomb import message_caps as caps
from jaxcollab.agents.bomb.llm import BombGame, decode_calls, parse_calls
from jaxcollab.core.errors import ConfigValueError
from jaxcollab.envs.bomb import BombEnv, make_params
from jaxcollab.envs.bomb import tables as T
from jaxcollab.envs.bomb.env import observe_jit, reset_jit, turn_jit
from jaxcollab.envs.bomb.rules import delivery
from jaxcollab.llm.bridge import Episode
from jaxcollab.llm.client import Reply

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


# --- the LLM side: caps, truncation notes, call syntax ------------------------------------------

#: SANZARU Fig. 11's letter-grid message length: 138 gestures.
FIG11 = 138


def _play_turns(env, replies: list[str]):
    """Play the first ``len(replies)`` turns (order Deaf, Mute, Blind) with these reply texts;
    ``(episode, state, the prompts sent)``."""
    game = BombGame(env, "weak", ORDER)
    state, params = _fresh(env)
    ep, prompts = Episode(0, {r: [] for r in T.ROLE_NAMES}, {}), []
    for step, text in enumerate(replies):
        obs = np.asarray(observe_jit(state, params))
        gen = game.turn(ep, step, obs)
        (req,) = next(gen)
        prompts.append(req.messages[-1]["content"])
        with pytest.raises(StopIteration) as stop:
            gen.send([Reply(text)])
        state = turn_jit(state, stop.value.value, params)[0]
    return ep, state, prompts


def _gestures(n: int, to: str = "mute") -> str:
    symbols = ", ".join(["point_up"] * n)
    return f"<thoughts>t</thoughts><action>gesture(to=\"{to}\", symbols=[{symbols}])</action>"


def test_llm_caps_fit_fig11_and_cuts_are_reported():
    """Under the LLM caps the 138-gesture message arrives whole; under a 32-symbol cap it is
    cut to 32 and the sender's next prompt says so (never silently)."""
    assert caps({"agent": "llm"}) == LLM_CAPS and LLM_CAPS[1] >= FIG11
    assert caps({"agent": "oracle", "bomb": {}}) == (T.DEFAULT_SPEECH_BYTES,
                                                     T.DEFAULT_GESTURE_SYMBOLS)
    assert caps({"agent": "llm", "bomb": {"gesture_symbols": 64}}) == (LLM_CAPS[0], 64)
    wait = "<thoughts>t</thoughts><action>wait()</action>"
    big = BombEnv("base-1", *LLM_CAPS)
    ep, state, prompts = _play_turns(big, [_gestures(FIG11), wait, wait, wait])
    line = next(x for x in big.render_text(state, T.MUTE).splitlines()
                if x.startswith("CHAT r1: FROM deaf (gesture)"))
    assert line.count("☝️") == FIG11 and "cut" not in prompts[3]
    assert f"at most {LLM_CAPS[1]} symbols" in BombGame(big).systems[T.DEAF]
    small = BombEnv("base-1")
    ep, state, prompts = _play_turns(small, [_gestures(FIG11), wait, wait, wait])
    line = next(x for x in small.render_text(state, T.MUTE).splitlines()
                if x.startswith("CHAT r1: FROM deaf (gesture)"))
    assert line.count("☝️") == 32
    assert (f"NOTICE Your message was cut: your last gesture had {FIG11} symbols, over the "
            "limit of 32: only the first 32 were delivered.") in prompts[3]
    assert ep.history["deaf"][0]["cut"].startswith("Your message was cut")


def test_speech_is_cut_at_a_character_boundary_and_reported():
    env = BombEnv("base-1", speech_bytes=8)
    speak = '<thoughts>t</thoughts><action>speak(text="Cut it ✂ now")</action>'
    wait = "<thoughts>t</thoughts><action>wait()</action>"
    ep, state, prompts = _play_turns(env, [speak, wait, wait, wait])  # byte 8 is inside ✂
    assert 'CHAT r1: FROM deaf (speech): "Cut it "' in env.render_text(state, T.BLIND)
    assert ('your last speech was 14 bytes, over the limit of 8: only its first 7 bytes, '
            'ending "Cut it ", were delivered') in prompts[3]


def test_bad_caps_are_refused_up_front():
    with pytest.raises(ConfigValueError, match=r"bomb.gesture_symbols=138 is invalid"):
        BOMB.check(["bomb/base-1"], {"agent": "llm", "bomb": {"gesture_symbols": 138}})


TABLE1 = {  # SANZARU Table 1's calls, verbatim, and what they decode to
    'speak(text="Light is green.")': {"speak_to": T.EVERYONE, "text": "Light is green."},
    'gesture(to="mute", symbols=[thumbs_up])': {"gesture_to": T.MUTE,
                                                "symbols": ("thumbs_up",)},
    'gesture(to="deaf", symbols=[point_up, fist])': {"gesture_to": T.DEAF,
                                                     "symbols": ("point_up", "fist")},
    'speak(to="mute", text="I feel three wires.")': {"speak_to": T.MUTE,
                                                      "text": "I feel three wires."},
    'act(op="cut", position=3)': {"act": "cut", "arg": 2},
    "wait()": {},
}


@pytest.mark.parametrize("call", sorted(TABLE1))
def test_table1_calls_decode(call):
    parsed = parse_calls(f"<thoughts>t</thoughts><action>{call}</action>")
    turn, judged = decode_calls(parsed)
    assert judged.ok and judged.errors == () and turn == TABLE1[call]


def test_call_syntax_variants_and_json_still_first():
    both = parse_calls('<thoughts>t</thoughts><action>speak(to="blind", text="Cut wire 3.")\n'
                       "act(op=cut, position=2)</action>")
    assert decode_calls(both)[0] == {"speak_to": T.BLIND, "text": "Cut wire 3.", "act": "cut",
                                     "arg": 1}
    quoted = parse_calls('<thoughts>t</thoughts><action>speak(text="say "cut" now", '
                         "to=mute)</action>")  # an unescaped quote: the lenient reader
    assert decode_calls(quoted)[0] == {"speak_to": T.MUTE, "text": 'say "cut" now'}
    emoji = parse_calls("<thoughts>t</thoughts><action>gesture(to=deaf, symbols=[👍 ✊])"
                        "</action>")
    assert decode_calls(emoji)[0] == {"gesture_to": T.DEAF, "symbols": ("thumbs_up", "fist")}
    loose = parse_calls("<thoughts>I will wait() later</thoughts> act(op='cut', position=1)")
    assert loose.action == [{"call": "act", "op": "cut", "position": 1}]
    assert loose.errors == ("malformed_xml",)  # outside any <action> tag
    two = parse_calls("<thoughts>t</thoughts><action>wait()</action><action>wait()</action>")
    assert two.errors == ("multiple_actions",) and not two.ok
    json_calls = parse_calls('<thoughts>t</thoughts><action>[{"call": "speak", "text": "hi"}]'
                             "</action>")
    assert decode_calls(json_calls)[0] == {"speak_to": T.EVERYONE, "text": "hi"}
    assert decode_calls(parse_calls("<thoughts>t</thoughts><action>dance()</action>"))[1] \
        .errors == ("unparseable",)
