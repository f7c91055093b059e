"""The RL view of the bomb variants: observation vectors are the env's own tokens, the discrete
joint action goes through the env's own step with its delivery rules."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcollab.agents.bomb.rl_view import NOBODY, BombView, make_view
from jaxcollab.envs.bomb import tables as T

VIEW = make_view("bomb/base-1", symbols=2, alphabet=8)
ENV = VIEW.env
STEP, RESET = jax.jit(ENV.step), jax.jit(ENV.reset)


def _action(view: BombView, role: int, act=T.WAIT, target=0, speech=None, gesture=None):
    """One episode's discrete joint action: ``role`` does the turn, the others idle."""
    a = np.zeros((T.N_AGENTS, len(view.head_sizes)), np.int32)
    a[role, 0], a[role, 1] = act, target
    for ch, msg in enumerate((speech, gesture)):
        if msg is not None:
            to, symbols = msg
            h = view.recipient_head(ch)
            a[role, h] = 1 + to
            a[role, h + 1:h + 1 + len(symbols)] = symbols
    return view.to_env(jnp.asarray(a))


def _play(turns):
    """Reset base-1 (turn order Deaf, Mute, Blind) and play ``turns``; the last obs and info."""
    obs, state = RESET(jax.random.PRNGKey(3), ENV.default_params)
    info = None
    for a in turns:
        obs, state, _, _, _, info = STEP(jax.random.PRNGKey(0), state, a)
    return obs, state, info


def _section(enc_row, name):
    """The view's tokens that come from observation section ``name``."""
    sl = ENV.layout.slices()[name]
    keep = (VIEW.positions >= sl.start) & (VIEW.positions < sl.stop)
    return np.asarray(enc_row)[keep]


def test_view_is_a_selection_of_the_env_tokens():
    obs, _, _ = _play([])
    enc = VIEW.encode(obs)
    assert enc.shape == (T.N_AGENTS, VIEW.obs_size) and enc.dtype == jnp.int32
    np.testing.assert_array_equal(enc, np.asarray(obs)[:, VIEW.positions])
    # base-1: 3 manual rows x 4 tokens are kept, the 17 unused entries are not
    assert len(_section(enc[T.MUTE], "manual")) == 12
    assert (_section(enc[T.MUTE], "wires") == T.HIDDEN).all()   # Mute never sees the board
    assert (_section(enc[T.BLIND], "light") == T.UNREADABLE).all()
    assert int(VIEW.actor(obs)) == T.DEAF


def test_channels_a_role_lacks_and_sends_to_itself_are_masked():
    mask = VIEW.logit_mask
    offsets = np.cumsum((0,) + VIEW.head_sizes)
    speech, gesture = (offsets[VIEW.recipient_head(ch)] for ch in (0, 1))
    # recipients: nobody, deaf, mute, blind, everyone
    assert mask[T.MUTE, speech + NOBODY] and not mask[T.MUTE, speech + 1:speech + 5].any()
    np.testing.assert_array_equal(mask[T.BLIND, speech:speech + 5], [1, 1, 1, 0, 1])
    assert not mask[T.BLIND, gesture + 1:gesture + 5].any()
    for ch in (speech, gesture):  # Deaf sends on both channels, to a teammate or to both
        np.testing.assert_array_equal(mask[T.DEAF, ch:ch + 5], [1, 0, 1, 1, 1])


def test_only_blind_acts_and_only_on_the_bomb_in_front_of_it():
    offsets = np.cumsum((0,) + VIEW.head_sizes)
    act = lambda m: m[:, offsets[0]:offsets[1]]  # noqa: E731  wait, cut, press
    target = lambda m: m[:, offsets[1]:offsets[2]]  # noqa: E731
    # base-1: 3 wires, no keypad; Deaf and Mute can only wait (SANZARU Table 1)
    np.testing.assert_array_equal(act(VIEW.logit_mask), [[1, 0, 0], [1, 0, 0], [1, 1, 0]])
    np.testing.assert_array_equal(target(VIEW.logit_mask), [[1, 1, 1, 0, 0, 0, 0]] * 3)
    # haystack-2: a decoy keypad stays pressable (refusing it is the variant's test)
    hay = make_view("bomb/haystack-2").logit_mask
    np.testing.assert_array_equal(act(hay)[T.BLIND], [1, 1, 1])
    np.testing.assert_array_equal(target(hay)[T.BLIND], [1, 1, 1, 1, 0, 0, 0])
    # base-5: seven wires
    assert target(make_view("bomb/base-5").logit_mask)[T.BLIND].all()


def test_speech_reaches_blind_and_gestures_reach_blind_as_blanks():
    # Deaf speaks [3, 5] to Blind; Mute gestures [1, 2] to Blind; Blind reads its inbox.
    obs, state, _ = _play([_action(VIEW, T.DEAF, speech=(T.BLIND, [3, 5])),
                           _action(VIEW, T.MUTE, gesture=(T.BLIND, [1, 2]))])
    enc = VIEW.encode(obs)[T.BLIND]
    speech = _section(enc, "speech").reshape(T.N_AGENTS, 2)
    assert (speech[T.DEAF] - T.BYTE_TOK == np.array([ord("A") + 3, ord("A") + 5])).all()
    gesture = _section(enc, "gesture").reshape(T.N_AGENTS, 2)
    assert (gesture[T.MUTE] == T.BLANK).all()        # a gesture reaches Blind as blanks
    assert int(state.bounces) == 1                     # ... and counts as dead-channel use
    assert int(VIEW.actor(obs)) == T.BLIND


def test_speech_to_everyone_reaches_each_teammate_who_hears():
    # Deaf speaks [3, 5] to everyone (SANZARU Table 1): Mute and Blind read it, no bounce.
    obs, state, _ = _play([_action(VIEW, T.DEAF, speech=(T.EVERYONE, [3, 5]))])
    for role in (T.MUTE, T.BLIND):
        speech = _section(VIEW.encode(obs)[role], "speech").reshape(T.N_AGENTS, 2)
        assert (speech[T.DEAF] - T.BYTE_TOK == np.array([ord("A") + 3, ord("A") + 5])).all()
    assert int(state.bounces) == 0


def test_speech_to_deaf_bounces():
    # Blind (third in base-1's order) speaks to Deaf: bounced, flagged, counted.
    quiet = _action(VIEW, T.DEAF)
    obs, state, _ = _play([quiet, _action(VIEW, T.MUTE),
                           _action(VIEW, T.BLIND, speech=(T.DEAF, [1, 1]))])
    enc = VIEW.encode(obs)
    assert (_section(enc[T.DEAF], "speech") == T.PAD).all()
    assert _section(enc[T.BLIND], "feedback")[0] == T.YES
    assert int(state.bounces) == 1


def test_cut_through_the_view_ends_the_episode_as_the_env_rules():
    obs, state = RESET(jax.random.PRNGKey(3), ENV.default_params)
    right = ENV.solution(state)[0]
    for target, ending in ((right, T.DEFUSED), ((right + 1) % 3, T.WRONG_ACTION)):
        _, s, _ = _play([_action(VIEW, T.DEAF), _action(VIEW, T.MUTE),
                         _action(VIEW, T.BLIND, T.CUT, target)])
        assert int(s.ending) == ending


def test_symbols_round_trip_through_the_env_action():
    a = _action(VIEW, T.DEAF, speech=(T.BLIND, [7, 2]), gesture=(T.MUTE, [0, 4]))
    sent = np.asarray(VIEW.symbols_sent(a))
    assert sent[T.DEAF].tolist() == [[7, 2], [0, 4]]
    assert (sent[T.MUTE] == -1).all()


def test_bad_view_sizes_are_refused():
    with pytest.raises(ValueError, match="symbols=5"):
        BombView(ENV, symbols=5)
    with pytest.raises(ValueError, match="alphabet=50"):
        BombView(ENV, alphabet=50)


def test_every_variant_has_a_view():
    for v in T.VARIANTS:
        view = make_view(v.name)
        derived = {T.LIGHT_CYCLE: 1, T.LIGHT_FLASH: T.N_AGENTS}.get(v.light, 0)
        assert view.obs_size == len(view.positions) + derived > 0
        assert view.positions.max() < view.env.layout.length


@pytest.mark.parametrize("name", ["bomb/base-1",
                                  pytest.param("bomb/carving-1", marks=pytest.mark.full),
                                  pytest.param("bomb/base-2", marks=pytest.mark.full)])
@pytest.mark.full  # long: the default tier's time (issue 36)
def test_answer_names_the_wire_its_colour_and_the_deciding_manual_entry(name):
    from jaxcollab.envs.bomb.state import display_now, light_now

    view = make_view(name)
    env = view.env
    for seed in range(5):
        _, state = env.reset(jax.random.PRNGKey(seed), env.default_params)
        position, value, entry = np.asarray(view.answer(state, env.default_params)).tolist()
        assert position == env.solution(state)[0]
        assert int(state.wire_colour[position]) == value == int(state.manual_val[entry])
        label = int(state.plate) if name == "bomb/carving-1" else int(
            light_now(state, env.default_params))
        assert int(state.manual_a[entry]) == label    # the row the light (or plate) picks
        if name == "bomb/base-2":                      # and the grid's column the display picks
            assert int(state.manual_b[entry]) == int(display_now(state, env.default_params))
    assert view.answer_sizes == (T.MAX_WIRES, 10, T.MANUAL_ENTRIES)


def _constructed(name, order=(T.DEAF, T.MUTE, T.BLIND), **fields):
    """A reset state of variant ``name`` with ``fields`` overwritten, and its params."""
    from jaxcollab.envs.bomb.params import make_params

    view = make_view(name)
    params = make_params(view.env.variant, order)
    _, state = view.env.reset(jax.random.PRNGKey(0), params)
    return view, state.replace(**{k: jnp.asarray(v, jnp.int32) for k, v in fields.items()}), \
        params


def test_answer_in_shuffle_follows_the_rotation_to_the_second_cut():
    manual = np.zeros(T.MANUAL_ENTRIES, np.int32)
    manual[2], manual[0] = 1, 0     # stage 0 (entry 2) names colour 1, stage 1 (entry 0) colour 0
    key_seq = np.zeros(T.SEQ, np.int32)
    key_seq[:2] = 2, 0
    view, state, params = _constructed("bomb/shuffle-1", turn=2, manual_val=manual,
                                       key_seq=key_seq, wire_colour=[3, 1, 4, 0, -1, -1, -1])
    assert np.asarray(view.answer(state, params)).tolist() == [1, 1, 2]
    cut = jnp.zeros((T.N_AGENTS, len(view.head_sizes)), jnp.int32).at[T.BLIND, :2].set(
        jnp.array([T.CUT, 1]))
    _, after, reward, term, trunc, _ = view.env.step(jax.random.PRNGKey(0), state,
                                                     view.to_env(cut), params)
    # the first cut is right but does not defuse (no reward); the survivors rotate one place
    assert (float(reward[0]), bool(term), int(view.progress(after))) == (0.0, False, 1)
    assert np.asarray(after.wire_colour[:4]).tolist() == [0, 1, 3, 4]
    assert np.asarray(view.answer(after, params)).tolist() == [0, 0, 0]


def test_answer_in_flashing_is_the_entry_of_the_next_cuts_light_cycle_slot():
    manual = np.zeros(T.MANUAL_ENTRIES, np.int32)
    manual[1], manual[2] = 2, 4     # cycle slot 0 (entry 1) names colour 2, slot 1 (entry 2) 4
    key_seq = np.zeros(T.SEQ, np.int32)
    key_seq[:2] = 1, 2
    fields = dict(manual_val=manual, key_seq=key_seq, wire_colour=[0, 2, 4, -1, -1, -1, -1])
    first = (T.BLIND, T.DEAF, T.MUTE)
    # the one cut lands in slot 0 (an even round) whenever it is asked: [wire 1, colour 2,
    # entry 1] at Blind's own turn, after it (next round is odd: the round after), in an odd
    # round, and with Blind still to play
    for order, rnd, turn in ((first, 0, 0), (first, 0, 1), (first, 1, 2),
                             ((T.DEAF, T.MUTE, T.BLIND), 1, 1)):
        view, state, params = _constructed("bomb/flashing-1", order, round=rnd, turn=turn,
                                           **fields)
        assert np.asarray(view.answer(state, params)).tolist() == [1, 2, 1], (order, rnd, turn)
    # flashing-4 (period 3), one cut done: the second cut's slot 1 (entry 2, colour 4, wire 2),
    # landing in round 1 (asked after Blind's turn of round 0) or round 4 (asked in round 2)
    key_seq[2] = 3
    for rnd, turn in ((0, 1), (2, 0)):
        view, state, params = _constructed(
            "bomb/flashing-4", first, round=rnd, turn=turn, progress=1, manual_val=manual,
            key_seq=key_seq, wire_colour=[0, 2, 4, 1, 3, -1, -1])
        state = state.replace(wire_cut=jnp.arange(T.MAX_WIRES) == 1)
        assert np.asarray(view.answer(state, params)).tolist() == [2, 4, 2], (rnd, turn)
        assert int(view.landing(state, params).round) == (1, 4)[rnd // 2]


def _flashing_obs(name, rnd, cut, **fields):
    """Observation tokens of a ``name`` state in round ``rnd`` with wires ``cut`` (bool [7])."""
    view, state, params = _constructed(name, round=rnd, **fields)
    state = state.replace(wire_cut=jnp.asarray(cut))
    return view, view.env.observe(state, params)


def test_flashing_view_holds_each_roles_light_of_the_next_cuts_slot():
    # flashing-4 (period 3): lights per slot 3, 0, 4; rounds 0 and 1 seen (history), round 2 now
    hist = np.full(T.MAX_ROUNDS, -1, np.int32)
    hist[:2] = 3, 0
    seq = np.zeros(T.SEQ, np.int32)
    seq[:3] = 3, 0, 4
    cut = np.zeros(T.MAX_WIRES, bool)
    for cuts, rnd, want in ((0, 2, 3), (1, 2, 0), (2, 2, 4), (1, 0, None), (2, 1, None)):
        cut[:] = np.arange(T.MAX_WIRES) < cuts
        view, obs = _flashing_obs("bomb/flashing-4", rnd, cut, hist_light=hist, light_seq=seq)
        tokens = np.asarray(view.slot_light(obs))[:, 0].tolist()
        deaf = T.PAD if want is None else T.COLOUR_TOK + want   # PAD: the slot not shown yet
        blind = T.PAD if want is None else T.UNREADABLE         # (Mute feels no cuts: slot 0)
        assert tokens == [deaf, T.HIDDEN, blind], (cuts, rnd)
        assert int(view.encode(obs)[T.DEAF, -1]) == deaf


def test_flashing_blind_may_cut_only_in_the_next_cuts_slot():
    cut = np.zeros(T.MAX_WIRES, bool)
    allowed = []
    for rnd in range(4):
        view, obs = _flashing_obs("bomb/flashing-1", rnd, cut)
        masks = [np.asarray(view.action_mask(view.encode(obs), r)) for r in range(T.N_AGENTS)]
        allowed.append([bool(m[T.CUT]) for m in masks])
        assert all(m[T.WAIT] for m in masks)
        others = np.arange(view.n_logits) != T.CUT                 # only the cut changes
        assert (masks[T.BLIND][others] == view.logit_mask[T.BLIND][others]).all()
    assert allowed == [[False, False, True], [False] * 3, [False, False, True], [False] * 3]
    cut[0] = True   # flashing-4, one cut done: the second cut in slot 1 (rounds 1, 4, ...)
    for rnd, ok in ((0, False), (1, True), (3, False), (4, True)):
        view, obs = _flashing_obs("bomb/flashing-4", rnd, cut)
        assert bool(view.action_mask(view.encode(obs), T.BLIND)[T.CUT]) == ok, rnd
    base = VIEW.encode(RESET(jax.random.PRNGKey(3), ENV.default_params)[0])
    assert bool(VIEW.action_mask(base, T.BLIND)[T.CUT])   # no timing outside Flashing


@pytest.mark.full
def test_keep_talking_defuser_is_offered_what_its_view_allows():
    """Idle, the Defuser may look around and pick a module up; holding the Keypad, only its
    verb (press) on its four keys, or put it down; the Expert only waits or talks."""
    from jaxcollab.agents.ktane.rl_view import make_ktane_view
    from jaxcollab.envs.ktane.modules.base import VERBS

    view = make_ktane_view("ktane/keypad")
    env, params = view.env, view.env.default_params
    obs, state = env.reset(jax.random.PRNGKey(0), params)

    def offered(obs, role):
        m = np.asarray(view.action_mask(view.encode(obs), role))
        return [VERBS[i] for i in np.flatnonzero(m[:len(VERBS)])], m[len(VERBS):][:6].tolist()

    assert offered(obs, 0) == (["wait", "message", "select", "rotate", "flip"], [True] * 6)
    assert offered(obs, 1)[0] == ["wait", "message"]
    pick_up = jnp.zeros((2, len(view.head_sizes)), jnp.int32).at[0, 0].set(VERBS.index("select"))
    obs, *_ = env.step(jax.random.PRNGKey(1), state, view.to_env(pick_up), params)
    assert offered(obs, 0) == (["wait", "message", "back", "press"], [True] * 4 + [False] * 2)


def test_flashback_mute_reads_the_speech_of_the_picked_flashs_round_from_its_chat():
    """Deaf speaks symbol ``round`` to Mute every round (order Mute, Blind, Deaf: Deaf last);
    the manual picks flash 1, so Mute's derived token is Deaf's round-1 symbol once round 1
    is in its chat (rounds 2 to 4: the window of 4), ``PAD`` before and after; the others'
    are ``PAD`` (they read no picks)."""
    view, state, params = _constructed("bomb/flashback-1", (T.MUTE, T.BLIND, T.DEAF),
                                       pick=[1, 0, 2, 3, 4, 5, 6, 7])
    step = jax.jit(view.env.step)
    seen = []
    for _ in range(6 * T.N_AGENTS):
        enc = view.encode(view.env.observe(state, params))
        if int(view.actor(enc)) == T.MUTE:
            derived = np.asarray(enc[:, -T.N_AGENTS:])
            assert (np.delete(derived, T.MUTE, 0) == T.PAD).all()
            seen.append(derived[T.MUTE].tolist())
        a = np.zeros((T.N_AGENTS, len(view.head_sizes)), np.int32)
        a[T.DEAF, view.recipient_head(0):view.recipient_head(0) + 2] = 1 + T.MUTE, state.round
        _, state, *_ = step(jax.random.PRNGKey(0), state, view.to_env(jnp.asarray(a)), params)
    said = [T.BYTE_TOK + ord("A") + 1, T.PAD, T.PAD]   # from Deaf; Mute and Blind said nothing
    assert seen == [[T.PAD] * 3] * 2 + [said] * 3 + [[T.PAD] * 3]
