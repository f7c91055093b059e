"""Message encodings (Collaboration Gap paper, App. E): exact strings, round trips, errors."""

import numpy as np
import pytest

from jaxcollab.collab.messages import MessageCodec, decide, quantize
from jaxcollab.envs.parity import VOCAB

MAZE_VOCAB = "#.?@=|drul0123456789"


def test_quantize_exact_values():
    probs = np.array([[0.333, 0.333, 0.334, 0.0], [0.0, 0.0, 1.0, 0.0], [0.996, 0.004, 0, 0]])
    np.testing.assert_array_equal(
        quantize(probs), [[33, 33, 34, 0], [1, 0, 99, 0], [99, 1, 0, 0]]
    )
    assert quantize(np.array([[0.2, 0.8]]), digits=1).tolist() == [[2, 8]]


def test_quantize_sums_to_total_and_fits_digits():
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.full(4, 0.3), size=2000)
    counts = np.asarray(quantize(probs))
    assert (counts.sum(-1) == 100).all()
    assert counts.max() <= 99 and counts.min() >= 0
    assert np.abs(counts / 100 - probs).max() <= 0.02  # rounding moves an entry at most 1-2 units


def test_binary_probability_round_trip_every_percent():
    codec = MessageCodec("probability", VOCAB, "01")
    p1 = np.arange(1, 100) / 100
    tokens = codec.encode(np.stack([1 - p1, p1], -1))
    assert tokens.shape == (99, 2)
    strings = codec.serialise(tokens)
    assert strings[:3] == ["01", "02", "03"] and strings[49] == "50" and strings[-1] == "99"
    np.testing.assert_allclose(codec.decode(tokens)[:, 1], p1, atol=1e-6)
    assert [round(float(codec.parse(s)[1]) * 100) for s in strings] == list(range(1, 100))


def test_binary_probability_clips_to_two_digits():
    codec = MessageCodec("probability", VOCAB, "01")
    assert codec.serialise(codec.encode(np.array([[0.0, 1.0], [1.0, 0.0]]))) == ["99", "01"]


def test_vector_probability_message_for_maze_vocab():
    codec = MessageCodec("probability", MAZE_VOCAB, "drul")
    assert codec.width == 8
    tokens = codec.encode(np.array([[0.5, 0.25, 0.125, 0.125]]))
    assert codec.serialise(tokens) == ["50251312"]  # largest remainder: ties to the lower index
    np.testing.assert_allclose(codec.parse("50251312"), [0.5, 0.25, 0.13, 0.12], atol=1e-6)
    q = np.array([[0.07, 0.0, 0.9, 0.03]])
    np.testing.assert_allclose(codec.decode(codec.encode(q)), q, atol=1e-6)


def test_action_messages_ties_go_to_higher_class():
    codec = MessageCodec("action", VOCAB, "01")
    assert codec.width == 1
    probs = np.array([[0.5, 0.5], [0.51, 0.49], [0.2, 0.8]])
    assert codec.serialise(codec.encode(probs)) == ["1", "0", "1"]
    np.testing.assert_array_equal(codec.parse("0"), [1.0, 0.0])
    assert decide(np.array([0.4, 0.3, 0.3])).tolist() == 0
    maze = MessageCodec("action", MAZE_VOCAB, "drul")
    assert maze.serialise(maze.encode(np.array([[0.1, 0.2, 0.6, 0.1]]))) == ["u"]


def test_bad_messages_and_codecs_raise_clear_errors():
    codec = MessageCodec("probability", VOCAB, "01")
    with pytest.raises(ValueError, match="'5' "):
        codec.parse("5")
    with pytest.raises(ValueError, match="'\\?' is not a valid probability"):
        codec.decode(np.array([VOCAB.index("?"), 0]))
    with pytest.raises(ValueError, match="unknown message protocol 'gesture'.*action"):
        MessageCodec("gesture", VOCAB, "01")
    with pytest.raises(ValueError, match="missing from the vocabulary"):
        MessageCodec("action", VOCAB, "dr")
