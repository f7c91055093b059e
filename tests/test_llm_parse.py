"""LLM reply parsers: no reply can end a run, and the answer is read, not the prompt.

Property tests feed arbitrary text (and arbitrary JSON-ish tool calls) through every parser and
action decoder; example tests pin the replies real models sent (issue "Reliability II") and one
case per false positive seen: an example quoted from the prompt, the maze's column numbers after
a ``%``, and bracketed words of the game's own rendering.
"""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jaxcollab
from jaxcollab.agents.bomb.callsyntax import read_calls
from jaxcollab.agents.bomb.llm import decode_calls, parse_calls
from jaxcollab.agents.bomb.llm import system_prompt as bomb_prompt
from jaxcollab.agents.ktane.llm import decode_action, marks, message_phrase
from jaxcollab.agents.maze.llm import annotated, parse_move
from jaxcollab.agents.maze.llm import system_prompt as maze_prompt
from jaxcollab.envs.bomb import tables as T
from jaxcollab.llm.parse import ERROR_CLASSES, parse_reply, parse_tool_calls

#: Fragments real replies are made of, so arbitrary text reaches the parsers' deep branches.
_PIECES = st.sampled_from([
    "<thoughts>", "</thoughts>", "<thought>", "<action>", "</action>", "```json", "```", "[", "]",
    "{", "}", '"call"', ":", ",", '"act"', '"op": "cut"', '"position": ', "1e999", "-3", "9",
    '"to": "deaf"', '"symbols": ["👍", [1]]', '"text": "\\ud800"', '{"result": ', '"kind": ',
    '"interact_game"', '"data": {"action": "rotate_up"', '"location": "[A]"', "~", "d", "%",
    "0.1, 0.7, 0.1, 0.1.", ".", "e.g. ", "\n", "[unreadable]", "[blue]", "null", "NaN",
    # SANZARU's call syntax (Table 1)
    "speak(", "gesture(", "act(", "wait()", ")", 'to="mute"', "to=blind", 'text="', "text='",
    "symbols=[", "point_up", "👍", "op=cut", "position=", "“", "”", "\\", "=", "**k", "-",
    "\\ud800",
])
REPLIES = st.one_of(st.text(), st.lists(st.one_of(_PIECES, st.text(max_size=5)),
                                        max_size=30).map("".join))
_BOMB_ENV = None


def _bomb_env():
    global _BOMB_ENV  # noqa: PLW0603  (one env object: action() is host-side numpy)
    if _BOMB_ENV is None:
        _BOMB_ENV = jaxcollab.make("bomb/base-1")
    return _BOMB_ENV


def _check_parsed(parsed) -> None:
    assert set(parsed.errors) <= set(ERROR_CLASSES)
    assert isinstance(parsed.note(), str)
    json.dumps(parsed.action, ensure_ascii=False).encode("utf-8")  # transcripts can hold it


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=REPLIES, finish=st.sampled_from(["stop", "length"]), role=st.integers(0, 2))
def test_any_reply_is_a_bomb_turn_or_a_classified_error(text, finish, role):
    parsed = parse_calls(text, finish)
    _check_parsed(parsed)
    turn, judged = decode_calls(parsed)
    _check_parsed(judged)
    assert bool(turn) <= judged.ok
    _bomb_env().action(role, **turn)  # the environment accepts every decoded turn


@settings(max_examples=300, deadline=None)
@given(text=REPLIES)
def test_call_syntax_reader_never_raises(text):
    calls = read_calls(text)
    assert calls is None or (calls and all(
        isinstance(c, dict) and c["call"] in ("speak", "gesture", "act", "wait") for c in calls))
    json.dumps(calls, ensure_ascii=False)


@settings(max_examples=200, deadline=None)
@given(text=REPLIES, role=st.integers(0, 1))
def test_any_reply_is_a_ktane_action_or_a_classified_error(text, role):
    (verb, target, message), judged = decode_action(parse_reply(text), role, "[A] [B] [C]")
    _check_parsed(judged)
    assert 0 <= target < 26 and isinstance(message, str)
    assert message_phrase(message).shape == (message_phrase("").shape[0],)


@settings(max_examples=200, deadline=None)
@given(text=REPLIES, verbalized=st.booleans())
def test_any_reply_is_a_maze_move_or_a_classified_error(text, verbalized):
    move, probs, parsed = parse_move(text, verbalized)
    _check_parsed(parsed)
    assert move is None or 0 <= move < 4
    assert probs is None or (np.all(probs >= 0) and abs(probs.sum() - 1) < 1e-9)
    assert (move is None) == ("no_action" in parsed.errors)


_JSONISH = st.recursive(st.none() | st.booleans() | st.floats() | st.integers() | st.text(),
                        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(), c,
                                                                            max_size=3),
                        max_leaves=8)


@settings(max_examples=200, deadline=None)
@given(calls=st.one_of(_JSONISH, st.lists(st.one_of(_JSONISH, st.fixed_dictionaries({
    "function": st.fixed_dictionaries({"name": _JSONISH, "arguments": st.one_of(
        _JSONISH, REPLIES)})})), max_size=3)), text=st.one_of(st.none(), REPLIES))
def test_any_tool_calls_are_calls_or_a_classified_error(calls, text):
    parsed = parse_tool_calls(calls, text)
    _check_parsed(parsed)
    turn, judged = decode_calls(parsed)
    _check_parsed(judged)
    _bomb_env().action(2, **turn)


# --- the replies real models sent --------------------------------------------------------------

def test_maze_vector_ending_a_sentence_and_a_lone_dot():
    move, probs, p = parse_move("I am unsure. % 0.1, 0.7, 0.1, 0.1.", verbalized=True)
    assert move is None and np.allclose(probs, [0.1, 0.7, 0.1, 0.1]) and p.errors == (
        "no_action",)
    move, probs, p = parse_move(".", verbalized=True)
    assert (move, probs) == (None, None) and p.errors == ("no_action", "unparseable")
    move, probs, _ = parse_move("~r % 60, 30, 5, 5", verbalized=True)  # percentages
    assert move == 1 and np.allclose(probs, [0.6, 0.3, 0.05, 0.05])


@pytest.mark.parametrize("text", ["~r % 10%, 70%, 10%, 10%", "~r % [10 %; 70 %; 10 %; 10 %]",
                                  "~r % 10% 70% 10% 10%."])
def test_maze_percentages_with_their_sign_parse(text):
    move, probs, p = parse_move(text, verbalized=True)
    assert move == 1 and np.allclose(probs, [0.1, 0.7, 0.1, 0.1]) and p.ok


def test_maze_five_percentages_are_not_a_vector():
    move, probs, p = parse_move("~r % 10%, 70%, 10%, 5%, 5%", verbalized=True)
    assert move == 1 and probs is None and p.errors == ("unparseable",)


def test_surrogates_and_overflow_are_classified():
    p = parse_reply('<thoughts>t</thoughts><action>[{"call": "speak", "to": "deaf", "text": '
                    '"\\ud800 hi"}]</action>')
    turn, p = decode_calls(p)
    assert p.ok and turn["text"] == "? hi"
    _bomb_env().action(0, **turn)
    turn, p = decode_calls(parse_reply('<thoughts>t</thoughts><action>[{"call": "act", "op": '
                                       '"cut", "position": 1e999}]</action>'))
    assert turn == {} and p.errors == ("invalid_action",)
    turn, p = decode_calls(parse_calls('<thoughts>t</thoughts><action>speak(text="\\ud800 '
                                       'hi")</action>'))  # call syntax: the same cleaning
    assert p.ok and turn["text"] == "? hi"
    _bomb_env().action(0, **turn)
    p = parse_reply("<action>" + "[" * 50_000 + "</action>")
    assert not p.ok and p.errors == ("missing_thoughts", "unparseable")


# --- the answer, not the prompt ------------------------------------------------------------------

def test_maze_example_move_from_the_prompt_is_not_an_answer():
    example = maze_prompt("action", 4).split("\n\n")[-1]  # "... after the delimiter ~, e.g. ~d."
    assert "e.g. ~d" in example
    move, _, p = parse_move(f"The instructions say: {example} I cannot see the exit yet.",
                            verbalized=False)
    assert move is None and p.errors == ("no_action",)
    move, _, _ = parse_move(f"{example} My move: ~r", verbalized=False)
    assert move == 1
    move, _, _ = parse_move("~ Let me think. ~left", verbalized=False)  # "~ L…" is not a move
    assert move == 3


def test_maze_percent_before_column_numbers_is_not_a_vector():
    grid = annotated("@.#\n..#\n#..")
    move, probs, p = parse_move(f"~d %\n{grid}", verbalized=True)
    assert move == 0 and probs is None and p.errors == ("unparseable",)
    _, probs, _ = parse_move("~d % 1 2 3 4 5 6", verbalized=True)  # the header on one line
    assert probs is None
    example = maze_prompt("verbalized", 4).split("\n\n")[-1]
    assert "e.g. % 0.6, 0.3, 0.05, 0.05" in example
    _, probs, _ = parse_move(f"{example} ~u", verbalized=True)  # the prompt's example vector
    assert probs is None


def _rendering(role: int) -> str:
    env = _bomb_env()
    obs, _ = jax.jit(env.reset)(jax.random.PRNGKey(0))
    return env.render_observation(np.asarray(obs)[role], role)


@pytest.mark.parametrize("role", [T.BLIND, T.DEAF])
def test_game_rendering_is_not_a_bomb_action(role):
    seen = _rendering(role)
    assert "[unreadable]" in seen if role == T.BLIND else "[" in seen
    for reply in (seen, f"<thoughts>I see:\n{seen}</thoughts>", "The plate reads [unreadable].",
                  "<thoughts>Wire 2 is [blue], wire 1 [red].</thoughts>"):
        parsed = parse_reply(reply)
        assert parsed.action is None and "no_action" in parsed.errors
        assert "repaired_json" not in parsed.errors and "malformed_xml" not in parsed.errors


def test_set_of_marks_and_format_placeholders_are_not_actions():
    parsed = parse_reply(marks("module [1] Wires unsolved\n[1] red intact\n[2] blue intact"))
    assert parsed.errors == ("missing_thoughts", "no_action")
    fmt = "<thoughts>free text</thoughts><action>[CALLS]</action>"
    assert fmt in bomb_prompt(T.DEAF, "weak")
    real = '<action>[{"call": "wait"}]</action>'
    parsed = parse_reply(f"<thoughts>The format is {fmt}.</thoughts>{real}")
    assert parsed.ok and parsed.action == [{"call": "wait"}]


def test_the_final_action_is_read():
    example = '{"call": "speak", "to": "deaf", "text": "..."}'
    final = '[{"call": "act", "op": "cut", "position": 3}]'
    parsed = parse_reply(f"<thoughts>t</thoughts> A call looks like {example}; mine: {final}")
    assert parsed.action == json.loads(final) and parsed.errors == ("malformed_xml",)
    parsed = parse_reply(f"<thoughts>t</thoughts><action>I pick {final}</action>")
    assert parsed.action == json.loads(final) and parsed.errors == ("repaired_json",)
