"""Scripted bomb teams as pure JAX policies (modelled on the protocols of
SANZARU, Figs. 7–9; the teams themselves are our choice).

A team maps ``(key, obs[3, L], layout)`` to a joint :class:`BombAction`; each role's row is
computed from that role's own observation row only. The oracle is privileged: it plays the
correct ``(act, arg)`` read from the hidden state (:func:`oracle_hint`). :func:`team_policy`
wraps any team as a policy of the generic rollout (:mod:`jaxcollab.core.rollout`).

Protocol teams (all route Mute → gesture → Deaf → Blind, by speech or, for ``counting``, by a
gesture Blind gets as blanks; and Blind → speech → Mute for the plate glyph):

* ``symbol`` (one symbol per value): Deaf reports light, display, cuts done and the last four
  rounds' lights; Mute answers the wire colour (or code digit) with one symbol, echoing the
  facts it used; Deaf checks the echo, finds the wire and tells Blind its position.
* ``counting``: the same relay, every value sent as a count of repeated symbols; it leaves out
  the light history to fit the 32-symbol cap, and Deaf shows Blind the wire (or key) as a
  gesture that Blind gets as blanks, reading the item from their number (SANZARU Fig. 9); that
  gesture is dead-channel use, so this team's ``bounces`` count its instructions.
* ``onebit``: Deaf asks "is it this wire / key?" one item per round; Mute answers 👍 or 👎.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax
import jax.numpy as jnp

from jaxcollab.agents.bomb.codecs import COUNT, MAX_VALUES, SYMBOL, Codec
from jaxcollab.agents.bomb.view import View, parse
from jaxcollab.core.rollout import Policy, privileged_policy, stateless
from jaxcollab.envs.bomb import tables as T
from jaxcollab.envs.bomb.observe import Layout
from jaxcollab.envs.bomb.params import BombParams
from jaxcollab.envs.bomb.rules import BombAction
from jaxcollab.envs.bomb.state import BombState, required_value

HIST = 4  # past rounds' lights a report carries
YES_SYM, NO_SYM = T.SYMBOL_IDS["thumbs_up"], T.SYMBOL_IDS["thumbs_down"]
N_ITEMS = T.MAX_WIRES + T.N_KEYS  # one-bit candidates: wires, then keys


Turn = BombAction  # one role's row: the same fields without the leading agent axis


def quiet(layout: Layout, act=T.WAIT, arg=0) -> Turn:
    """A turn that sends nothing."""
    return Turn(act=jnp.int32(act), arg=jnp.int32(arg), speak_to=jnp.int32(T.NO_TARGET),
                speech=jnp.zeros(layout.speech_bytes, jnp.uint8),
                gesture_to=jnp.int32(T.NO_TARGET),
                gesture=jnp.zeros(layout.gesture_symbols, jnp.uint8))


def stack(turns: list[Turn]) -> BombAction:
    """Rows for (Deaf, Mute, Blind) → a joint :class:`BombAction`."""
    f = lambda name: jnp.stack([jnp.asarray(getattr(t, name)) for t in turns])  # noqa: E731
    return BombAction(act=f("act").astype(jnp.int32), arg=f("arg").astype(jnp.int32),
                      speak_to=f("speak_to").astype(jnp.int32), speech=f("speech"),
                      gesture_to=f("gesture_to").astype(jnp.int32), gesture=f("gesture"))


def oracle_hint(state: BombState, params: BombParams) -> jax.Array:
    """Privileged: the correct ``(act, arg)`` now, int32 ``[2]`` (``WAIT`` if none lands now)."""
    req = required_value(state, params)
    wire = (state.wire_colour == req) & ~state.wire_cut
    key = (state.keypad == req) & ~state.pressed
    code = params.task == T.TASK_CODE
    ok = jnp.where(code, key.any(), wire.any())
    act = jnp.where(ok, jnp.where(code, T.PRESS, T.CUT), T.WAIT)
    return jnp.stack([act, jnp.where(code, jnp.argmax(key), jnp.argmax(wire))]).astype(jnp.int32)


# ---- shared reasoning ------------------------------------------------------------------------


def facts(deaf: View, with_history: bool) -> tuple[jax.Array, jax.Array]:
    """Deaf's report values ``[light+1, display, progress, round, hist...]`` and their count."""
    progress = deaf.wire_cut.sum() + deaf.pressed.sum()
    past = deaf.round - 1 - jnp.arange(HIST)
    hist = jnp.where(past >= 0, deaf.hist_light[jnp.clip(past, 0, T.MAX_ROUNDS - 1)] + 1, 0)
    values = jnp.concatenate([jnp.stack([deaf.light + 1, deaf.display, progress, deaf.round]),
                              hist])
    n = 4 + HIST if with_history else 3
    return _pad(values), jnp.int32(n)


def resolve(mute: View, report: jax.Array, n: jax.Array, glyph: jax.Array):
    """Mute's manual lookup for the facts in ``report``: (ok, kind ``CUT``/``PRESS``, value).

    ``value`` is the wire colour to cut, or the code digit to press at this progress.
    """
    light, disp, progress, rnd = report[0] - 1, report[1], report[2], report[3]
    pick = mute.picks[jnp.clip(progress, 0, T.SEQ - 1)]
    back = rnd - 1 - pick
    flash = jnp.where(pick == rnd, light,
                      jnp.where((back >= 0) & (back < HIST) & (n >= 4 + HIST),
                                report[4 + jnp.clip(back, 0, HIST - 1)] - 1, -1))
    used = mute.m_label >= 0
    by_light = (mute.m_label == light) & ((mute.m_col == disp) | (mute.m_col < 0))
    match = jnp.select([mute.key_mode == T.KEY_GLYPH, mute.key_mode == T.KEY_FLASH],
                       [mute.m_label == glyph, mute.m_label == flash], by_light) & used
    e = jnp.argmax(match)
    code = mute.task == T.TASK_CODE
    value = jnp.where(code & (progress > 0), mute.m_v1[e], mute.m_v0[e])
    ok = match.any() & (n >= 3) & ((mute.key_mode != T.KEY_GLYPH) | (glyph >= 0))
    return ok, jnp.where(code, T.PRESS, T.CUT), value


def items(deaf: View) -> tuple[jax.Array, jax.Array, jax.Array]:
    """One-bit candidates: (available bool ``[11]``, kind ``[11]``, value ``[11]``)."""
    wires = deaf.wire_present & ~deaf.wire_cut
    keys = (deaf.keys >= 0) & ~deaf.pressed
    kind = jnp.concatenate([jnp.full(T.MAX_WIRES, T.CUT), jnp.full(T.N_KEYS, T.PRESS)])
    return jnp.concatenate([wires, keys]), kind, jnp.concatenate([deaf.wire_colour, deaf.keys])


def locate(deaf: View, kind: jax.Array, value: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Where ``value`` is: (found, position) of the uncut wire / unpressed key with it."""
    avail, kinds, values = items(deaf)
    match = avail & (kinds == kind) & (values == value)
    i = jnp.argmax(match)
    return match.any(), jnp.where(i >= T.MAX_WIRES, i - T.MAX_WIRES, i)


def _pad(values: jax.Array) -> jax.Array:
    return jnp.pad(values, (0, MAX_VALUES - values.shape[0])).astype(jnp.int32)


def blind_turn(blind: View, codec: Codec, layout: Layout, blanks: bool = False) -> Turn:
    """Follow Deaf's ``[kind, position]`` if still doable; report the plate to Mute.

    Deaf's instruction is spoken in ``codec``, or (``blanks``) a gesture of ``item + 1``
    symbols that Blind counts as blanks (item: wire position, or ``MAX_WIRES`` + key).
    """
    if blanks:
        item = (blind.gesture[T.DEAF] != 0).sum() - 1
        heard = blind.gesture_from[T.DEAF] & (item >= 0)
        kind = jnp.where(item < T.MAX_WIRES, T.CUT, T.PRESS)
        pos = jnp.clip(jnp.where(item < T.MAX_WIRES, item, item - T.MAX_WIRES), 0,
                       T.MAX_WIRES - 1)
    else:
        said, n = codec.decode(blind.speech[T.DEAF], gesture=False)
        heard = blind.speech_from[T.DEAF] & (n >= 2)
        kind, pos = said[0], jnp.clip(said[1], 0, T.MAX_WIRES - 1)
    can_cut = (kind == T.CUT) & blind.wire_present[pos] & ~blind.wire_cut[pos]
    can_press = (kind == T.PRESS) & (pos < T.N_KEYS) & ~blind.pressed[jnp.minimum(pos, 3)]
    act = jnp.where(heard & (can_cut | can_press), kind, T.WAIT)
    report = codec.encode(_pad(blind.plate[None]), jnp.int32(1), layout.speech_bytes, False)
    return dataclasses.replace(quiet(layout, act, pos), speak_to=jnp.int32(T.MUTE),
                               speech=report)


def _instruct(turn: Turn, ok, kind, pos, codec: Codec, layout: Layout) -> Turn:
    """Deaf tells Blind ``[kind, position]`` when ``ok``."""
    speech = codec.encode(_pad(jnp.stack([kind, pos])), jnp.int32(2), layout.speech_bytes, False)
    return dataclasses.replace(turn, speak_to=jnp.where(ok, T.BLIND, T.NO_TARGET), speech=speech)


def _show_blanks(turn: Turn, ok, kind, pos, layout: Layout) -> Turn:
    """Deaf gestures ``item + 1`` symbols to Blind when ``ok`` instead of its report (one gesture
    per turn); Blind counts the blanks (item: wire position, or ``MAX_WIRES`` + key)."""
    item = jnp.where(kind == T.PRESS, T.MAX_WIRES + pos, pos)
    body = jnp.where(jnp.arange(layout.gesture_symbols) <= item, T.SYMBOL_IDS["clap"], 0)
    return dataclasses.replace(turn, gesture_to=jnp.where(ok, T.BLIND, turn.gesture_to),
                               gesture=jnp.where(ok, body.astype(jnp.uint8), turn.gesture))


# ---- relay teams (symbol / counting) ---------------------------------------------------------


def relay_team(codec: Codec, with_history: bool, blanks: bool = False) -> Callable:
    """Deaf reports, Mute answers with an echo, Deaf relays the position to Blind (spoken in
    ``codec``, or with ``blanks`` as a gesture Blind counts as blanks)."""

    def team(key, obs, layout: Layout) -> BombAction:
        deaf, mute, blind = (parse(obs[r], r, layout) for r in range(T.N_AGENTS))
        report, n = facts(deaf, with_history)
        d_turn = dataclasses.replace(
            quiet(layout), gesture_to=jnp.int32(T.MUTE),
            gesture=codec.encode(report, n, layout.gesture_symbols, True))
        answer, n_ans = codec.decode(deaf.gesture[T.MUTE], gesture=True)
        fresh = deaf.gesture_from[T.MUTE] & (n_ans >= 5) & (answer[1:4] == report[:3]).all()
        found, pos = locate(deaf, answer[0], answer[4])
        if blanks:
            d_turn = _show_blanks(d_turn, fresh & found, answer[0], pos, layout)
        else:
            d_turn = _instruct(d_turn, fresh & found, answer[0], pos, codec, layout)

        heard, n_heard = codec.decode(mute.gesture[T.DEAF], gesture=True)
        glyph, n_glyph = codec.decode(mute.speech[T.BLIND], gesture=False)
        glyph_v = jnp.where(mute.speech_from[T.BLIND] & (n_glyph >= 1), glyph[0], -1)
        ok, kind, value = resolve(mute, heard, jnp.where(mute.gesture_from[T.DEAF], n_heard, 0),
                                  glyph_v)
        reply = _pad(jnp.concatenate([jnp.stack([kind]), heard[:3], jnp.stack([value])]))
        m_turn = dataclasses.replace(
            quiet(layout), gesture_to=jnp.where(ok, T.DEAF, T.NO_TARGET),
            gesture=codec.encode(reply, jnp.int32(5), layout.gesture_symbols, True))
        return stack([d_turn, m_turn, blind_turn(blind, codec, layout, blanks)])

    return team


# ---- one-bit team ----------------------------------------------------------------------------


def onebit_team(key, obs, layout: Layout) -> BombAction:
    """Deaf asks about one wire or key per round; Mute answers yes/no (one bit)."""
    deaf, mute, blind = (parse(obs[r], r, layout) for r in range(T.N_AGENTS))
    report, _ = facts(deaf, with_history=True)
    avail, kinds, values = items(deaf)
    last, n_last = SYMBOL.decode(deaf.gesture[T.DEAF], gesture=True)
    q = 4 + HIST  # query = report, then kind, value, item
    same = (n_last == q + 3) & (last[:3] == report[:3]).all()
    said = jnp.where(deaf.gesture_from[T.MUTE], deaf.gesture[T.MUTE, 0], 0)
    prev = jnp.clip(last[q + 2], 0, N_ITEMS - 1)
    order = (jnp.arange(N_ITEMS) - prev - 1) % N_ITEMS  # items after prev first
    nxt = jnp.argmin(jnp.where(avail, order, N_ITEMS))
    first = jnp.argmax(avail)
    item = jnp.where(same, jnp.where(said == NO_SYM, nxt, prev), first)
    query = _pad(jnp.concatenate([report[:q], jnp.stack([kinds[item], values[item], item])]))
    d_turn = dataclasses.replace(
        quiet(layout), gesture_to=jnp.int32(T.MUTE),
        gesture=SYMBOL.encode(query, jnp.int32(q + 3), layout.gesture_symbols, True))
    confirmed = same & (said == YES_SYM) & avail[prev]
    d_turn = _instruct(d_turn, confirmed, kinds[prev], jnp.where(prev >= T.MAX_WIRES,
                                                                 prev - T.MAX_WIRES, prev),
                       SYMBOL, layout)

    asked, n_asked = SYMBOL.decode(mute.gesture[T.DEAF], gesture=True)
    glyph, n_glyph = SYMBOL.decode(mute.speech[T.BLIND], gesture=False)
    glyph_v = jnp.where(mute.speech_from[T.BLIND] & (n_glyph >= 1), glyph[0], -1)
    heard = mute.gesture_from[T.DEAF] & (n_asked == q + 3)
    ok, kind, value = resolve(mute, asked, jnp.where(heard, q, 0), glyph_v)
    yes = ok & (asked[q] == kind) & (asked[q + 1] == value)
    bit = jnp.zeros(layout.gesture_symbols, jnp.uint8).at[0].set(
        jnp.where(yes, YES_SYM, NO_SYM).astype(jnp.uint8))
    m_turn = dataclasses.replace(quiet(layout), gesture_to=jnp.where(heard, T.DEAF, T.NO_TARGET),
                                 gesture=bit)
    return stack([d_turn, m_turn, blind_turn(blind, SYMBOL, layout)])


# ---- baselines -------------------------------------------------------------------------------


def oracle_team(key, obs, policy_state, state: BombState, params: BombParams, *,
                layout: Layout) -> tuple[BombAction, tuple]:
    """Privileged: Blind plays the correct move read from the hidden state (:func:`oracle_hint`);
    nobody talks (upper bound)."""
    hint = oracle_hint(state, params)
    return stack([quiet(layout), quiet(layout), quiet(layout, hint[0], hint[1])]), policy_state


def solo_team(key, obs, layout: Layout) -> BombAction:
    """One agent holding all three views acts as Blind with no messages (no-communication
    baseline): it reads Deaf's board, Mute's manual and Blind's plate directly."""
    deaf, mute, blind = (parse(obs[r], r, layout) for r in range(T.N_AGENTS))
    report, n = facts(deaf, with_history=True)
    ok, kind, value = resolve(mute, report, n, blind.plate)
    found, pos = locate(deaf, kind, value)
    act = jnp.where(ok & found, kind, T.WAIT)
    return stack([quiet(layout), quiet(layout), quiet(layout, act, pos)])


def random_team(key, obs, layout: Layout) -> BombAction:
    """Every role: wait half the time, else cut a random position 0..6 or press a key 0..3;
    send 8 random printable bytes and 4 random symbols to a random role (or nobody).

    All draws come from one ``jax.random.bits`` call (small compiled graph).
    """
    bits = jax.random.bits(key, (T.N_AGENTS, 12), jnp.uint32)
    item = (bits[:, 0] % N_ITEMS).astype(jnp.int32)
    act = jnp.where(bits[:, 1] % 2 == 0, T.WAIT, jnp.where(item < T.MAX_WIRES, T.CUT, T.PRESS))
    arg = jnp.where(item < T.MAX_WIRES, item, item - T.MAX_WIRES)
    to = (bits[:, 2:4] % (T.N_AGENTS + 1)).astype(jnp.int32) - 1
    text = 32 + jax.lax.bitcast_convert_type(bits[:, 4:6], jnp.uint8).reshape(T.N_AGENTS, 8) % 95
    symbols = 1 + bits[:, 6:10] % T.N_SYMBOLS
    pad = lambda x, n: jnp.pad(x.astype(jnp.uint8), ((0, 0), (0, n - x.shape[1])))  # noqa: E731
    return BombAction(act=act.astype(jnp.int32), arg=arg, speak_to=to[:, 0],
                      speech=pad(text, layout.speech_bytes), gesture_to=to[:, 1],
                      gesture=pad(symbols, layout.gesture_symbols))


#: name → team. ``oracle`` is privileged (reads the state); the others read observations only.
TEAMS: dict[str, Callable] = {
    "oracle": oracle_team,
    "random": random_team,
    "solo": solo_team,
    "symbol": relay_team(SYMBOL, with_history=True),
    "counting": relay_team(COUNT, with_history=False, blanks=True),
    "onebit": onebit_team,
}
PROTOCOL_TEAMS = ("onebit", "symbol", "counting")


def team(name: str) -> Callable:
    """Look up a team by name.

    Raises:
        KeyError: unknown team; the message lists the valid ones.
    """
    if name not in TEAMS:
        raise KeyError(f"unknown bomb team {name!r}; valid: {', '.join(TEAMS)}")
    return TEAMS[name]


@dataclasses.dataclass(frozen=True)
class _ForLayout:
    """``fn(*args, layout=layout)``, compared by value: equal teams share compiled rollouts."""

    fn: Callable
    layout: Layout

    def __call__(self, *args):
        return self.fn(*args, layout=self.layout)


def team_policy(name: str, layout: Layout) -> Policy:
    """Team ``name`` for message caps ``layout`` as a rollout policy, equal by value to every
    other ``team_policy(name, layout)`` (so rollouts reuse their compile):
    :class:`~jaxcollab.core.rollout.PrivilegedPolicy` for the oracle, else a stateless
    :class:`~jaxcollab.core.rollout.Policy`.

    Raises:
        KeyError: unknown team; the message lists the valid ones.
    """
    fn = team(name)
    if fn is oracle_team:
        return privileged_policy(_ForLayout(oracle_team, layout), name="oracle")
    return stateless(_ForLayout(fn, layout), name=name)
