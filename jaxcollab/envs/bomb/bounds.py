"""Information bounds of the bomb variants: the fewest rounds and message symbols any team needs
to defuse a variant *for sure* (SANZARU, Tables 1, 2 and 9; the model is ours).

Everything is read from the environment itself: who perceives which fact from
:func:`~jaxcollab.envs.bomb.observe.observe` (a fact is perceived by the roles whose observation
row changes when the fact changes), the channels from the delivery matrix
(:data:`~jaxcollab.envs.bomb.tables.CAN_SEND`, :data:`~jaxcollab.envs.bomb.tables.RECEIVE`), the
turn orders from :data:`~jaxcollab.envs.bomb.params.TURN_ORDERS`, which key the light shows in
each round from :func:`~jaxcollab.envs.bomb.state.light_now`, and what the generator implies (a
light-cycle slot that the other slots determine) from samples of
:func:`~jaxcollab.envs.bomb.generate.generate`.

**The model.** The team agrees on its protocol beforehand and every agent remembers all it
perceived and received. Action ``u`` (a cut or a code digit; in flashing variants a light-cycle
slot) needs three facts: the manual, the key that selects the manual entry (light and display,
the plate, or a flash) and the layout (wire colours, or the keypad digits). Whoever holds the
manual and the key knows the *value* (the wire colour or code digit); whoever holds the value
and the layout knows the *answer* (the position). Blind (the only role whose acts count) acts
when it knows the answer, or the value and the layout, or when one candidate is left (one uncut
wire: the generator keeps the answer on an uncut wire). A message reaches its recipient at the
recipient's next turn (SANZARU Table 1); a message delivered in full can carry everything its
sender knows, a gesture delivered as blanks carries a count: the answers or values whose joint
number of possibilities is at most ``G + 1``. Success must be sure, so an act before the facts
can have reached Blind is a guess; the bounds hold for every episode that does not guess.
Not modelled: a count keyed on a fact only its receiver holds (Mute gesturing, as blanks, the
position for every plate glyph before it knows the plate); it would need a covering code of the
manual's glyph rows in ``G + 1`` counts and could only lower carving-1 under deaf-mute-blind
(2 rounds here) to 1, the variant's ``min_rounds`` either way.

**Rounds** (:func:`round_bound`): a search over every protocol's message routing in the
time-expanded turn sequence, per turn order; a variant's ``min_rounds`` is the minimum over
turn orders (and, where the instance matters, e.g. which flash the manual picks, over
instances).

**Symbols** (:func:`symbol_bound`): the cheapest route of the facts: a value resolver ``V``
gets the manual (once) and each action's key, a position resolver ``P`` gets the layout (once)
and each value, and Blind gets each answer; a value with ``n`` possibilities costs
``ceil(log_A n)`` symbols over a channel with an ``A``-letter alphabet (42 gestures, 255 speech
bytes) and up to ``n - 1`` blanks as a count (a message's timing and recipient carry nothing;
cardinalities from the variant row and the tables). This is the fewest symbols of a relay
protocol, not a bound against codes that exploit the generator's correlations.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.envs.bomb import tables as T
from jaxcollab.envs.bomb.params import TURN_ORDERS, make_params
from jaxcollab.envs.bomb.state import light_now

#: Facts an action can need, and the state fields that hold them.
FACTS = ("manual", "light", "display", "plate", "wires", "keypad")
_ALPHABET = {T.SPEECH: 255, T.GESTURE: T.N_SYMBOLS}  # letters per symbol (non-zero bytes)
ACTOR = T.BLIND  # rules: only Blind's cuts and presses count (SANZARU Table 1)


def _perturbed(state, fact: str, variant: T.Variant):
    """``state`` with ``fact`` changed to other valid values."""
    code = variant.task == T.TASK_CODE
    change = {
        "manual": ("manual_val", lambda v: (v + 1) % (100 if code else T.N_COLOURS)),
        "light": ("light_seq", lambda v: (v + 1) % T.N_LIGHTS),
        "display": ("disp_seq", lambda v: (v + 1) % 10),
        "plate": ("plate", lambda v: (v + 1) % len(T.PLATE_GLYPHS)),
        "wires": ("wire_colour", lambda v: np.where(v >= 0, (v + 1) % T.N_COLOURS, v)),
        "keypad": ("keypad", lambda v: (v + 1) % 10),
    }
    name, fn = change[fact]
    return state.replace(**{name: fn(np.asarray(getattr(state, name))).astype(np.int32)})


@functools.cache
def perceivers(variant_name: str) -> dict[str, frozenset[int]]:
    """Which roles perceive each fact of :data:`FACTS` in ``variant_name`` at the start of an
    episode: the roles whose :func:`~jaxcollab.envs.bomb.observe.observe` row changes when the
    fact changes (SANZARU Tables 1 and 8, as the environment implements them).

    Returns:
        ``{fact: frozenset of role ids}`` (empty where the variant does not show the fact).
    """
    from jaxcollab.envs.bomb.env import observe_jit, reset_jit

    variant = T.variant(variant_name)
    params = make_params(variant)
    state = reset_jit(jax.random.PRNGKey(0), params, T.DEFAULT_SPEECH_BYTES,
                      T.DEFAULT_GESTURE_SYMBOLS)
    base = np.asarray(observe_jit(state, params))
    out = {}
    for fact in FACTS:
        changed = np.asarray(observe_jit(_perturbed(state, fact, variant), params)) != base
        out[fact] = frozenset(int(r) for r in np.flatnonzero(changed.any(1)))
    return out


def channels() -> dict[tuple[int, int], dict[int, int]]:
    """``{(sender, recipient): {channel: FULL or BLANKS}}``: every call that is not bounced
    (the delivery matrix, :func:`~jaxcollab.envs.bomb.rules.delivery`)."""
    out: dict[tuple[int, int], dict[int, int]] = {}
    for s, r in itertools.permutations(range(T.N_AGENTS), 2):
        modes = {ch: int(T.RECEIVE[r, ch]) for ch in (T.SPEECH, T.GESTURE)
                 if T.CAN_SEND[s, ch] and T.RECEIVE[r, ch] != T.BOUNCE}
        if modes:
            out[(s, r)] = modes
    return out


# ---- the facts an action needs ---------------------------------------------------------------


@dataclass(frozen=True)
class Needs:
    """What a variant's actions need, from its row and :func:`perceivers`.

    Attributes:
        variant: the variant row.
        holders: ``manual`` / ``key`` / ``layout`` -> the roles that perceive it (the key: the
            light and display, the plate, or a flash; the layout: wire colours or keypad).
        cycle: the keys are light-cycle slots shown in rounds ``r % period`` (flashing); the
            action *usages* are then the slots (one cut each), else the ``steps`` actions.
    """

    variant: T.Variant
    holders: dict[str, frozenset[int]]
    cycle: bool

    @property
    def usages(self) -> range:
        return range(self.variant.period if self.cycle else self.variant.steps)

    def key_holders(self) -> frozenset[int]:
        return self.holders["key"]

    def candidates(self, progress: int) -> int:
        """Positions Blind can choose from at ``progress`` (uncut wires or unpressed keys)."""
        total = T.N_KEYS if self.variant.task == T.TASK_CODE else self.variant.wires
        return total - progress

    def forced(self, progress: int) -> bool:
        """One uncut wire left: Blind needs nothing (the answer is always an uncut wire)."""
        return (not self.cycle and self.variant.task == T.TASK_CUT
                and self.candidates(progress) == 1)


def _key_facts(v: T.Variant) -> tuple[str, ...]:
    if v.key == T.KEY_GLYPH:
        return ("plate",)
    return ("light", "display") if v.cols > 1 else ("light",)


def _joint(holders: Iterable[frozenset[int]]) -> frozenset[int]:
    """Roles holding every fact of a compound atom (light and display)."""
    return functools.reduce(frozenset.__and__, holders)


@functools.cache
def _implied_slots(variant_name: str, samples: int = 4096) -> frozenset[int]:
    """Light-cycle slots whose light the other slots' lights determine in every sampled
    instance (e.g. a period-3 cycle over 3 lights is a permutation: two slots give the third)."""
    from jaxcollab.envs.bomb import reset_batch

    v = T.variant(variant_name)
    keys = jax.random.split(jax.random.PRNGKey(1), samples)
    states = reset_batch(keys, make_params(v), T.DEFAULT_SPEECH_BYTES, T.DEFAULT_GESTURE_SYMBOLS)
    lights = np.asarray(states.light_seq)[:, : v.period]
    out = set()
    for c in range(v.period):
        rest = [tuple(row) for row in np.delete(lights, c, axis=1)]
        seen: dict[tuple, int] = {}
        if all(seen.setdefault(k, x) == x for k, x in zip(rest, lights[:, c], strict=True)):
            out.add(c)
    return frozenset(out)


@functools.cache
def needs(variant_name: str) -> Needs:
    """The :class:`Needs` of a variant.

    Raises:
        ValueError: a needed fact nobody perceives (the variant cannot be solved).
    """
    v = T.variant(variant_name)
    seen = perceivers(v.name)
    layout = "keypad" if v.task == T.TASK_CODE else "wires"
    holders = {"manual": seen["manual"], "layout": seen[layout],
               "key": _joint(seen[f] for f in _key_facts(v))}
    empty = [k for k, h in holders.items() if not h]
    if empty:
        raise ValueError(f"{v.name}: nobody perceives {empty}")
    return Needs(v, holders, v.light == T.LIGHT_CYCLE)


# ---- rounds: search over message routings ----------------------------------------------------


def _key_atom(nd: Needs, u: int, pick: tuple[int, ...]) -> tuple:
    v = nd.variant
    if v.key == T.KEY_GLYPH:
        return ("key", 0)
    if v.light == T.LIGHT_FLASH:
        return ("key", pick[u])
    return ("key", u)


@functools.cache
def shown_keys(variant_name: str) -> np.ndarray:
    """int32 ``[MAX_ROUNDS, SEQ + 1]``: which key the board shows in round ``r`` after ``p``
    actions (an index into the state's per-stage / per-slot / per-flash light sequence, ``-1``
    when the light is dark), read from the environment's own
    :func:`~jaxcollab.envs.bomb.state.light_now` on a probe state whose light sequence is
    ``0, 1, 2, ...`` (SANZARU Table 2: staged lights, light cycles, flashes)."""
    from jaxcollab.envs.bomb.env import reset_jit

    params = make_params(T.variant(variant_name))
    probe = reset_jit(jax.random.PRNGKey(0), params, 4, 4)
    probe = probe.replace(light_seq=jnp.arange(T.SEQ, dtype=jnp.int32))
    return np.asarray(_shown(probe, params))


@jax.jit
def _shown(probe, params):
    def at(r, p):
        return light_now(probe.replace(round=r, progress=p), params)

    grid = jnp.arange(T.MAX_ROUNDS), jnp.arange(T.SEQ + 1)
    return jax.vmap(lambda r: jax.vmap(lambda p: at(r, p))(grid[1]))(grid[0])


def _visible_keys(nd: Needs, rnd: int, progress: int) -> set[tuple]:
    """Key atoms the key holders perceive now: the plate always, else the light shown."""
    if nd.variant.key == T.KEY_GLYPH:
        return {("key", 0)}
    shown = int(shown_keys(nd.variant.name)[rnd, progress])
    return {("key", shown)} if shown >= 0 else set()


def _close(nd: Needs, know: set, pick, implied: frozenset[int]) -> None:
    """Add the keys, values and answers ``know`` lets a role work out (in place); ``implied``:
    the light-cycle slots the other slots determine."""
    if implied:
        have = {a[1] for a in know if a[0] == "key"}
        for c in implied:
            if set(nd.usages) - {c} <= have:
                know.add(("key", c))
    for u in nd.usages:
        if ("manual",) in know and _key_atom(nd, u, pick) in know:
            know.add(("value", u))
        if ("value", u) in know and ("layout",) in know:
            know.add(("answer", u))


def _blank_payload(nd: Needs, know: frozenset, done: frozenset, cap: int) -> frozenset:
    """Answers (then values) for undone usages that fit one count of at most ``cap`` values."""
    size = {"answer": nd.candidates(0), "value": 100 if nd.variant.task == T.TASK_CODE
            else T.N_COLOURS}
    items = sorted((a for a in know if a[0] in size and a[1] not in done),
                   key=lambda a: (a[0] != "answer", a[1]))
    out, total = [], 1
    for a in items:
        if total * size[a[0]] <= cap:
            out.append(a)
            total *= size[a[0]]
    return frozenset(out)


def _routings(sender: int) -> list[dict[int, int]]:
    """Non-dominated ways for ``sender`` to address one recipient per channel:
    ``{recipient: FULL or BLANKS}`` (a full delivery dominates blanks, blanks nothing)."""
    chans = channels()
    options = []
    per_channel = [[None] + [r for (s, r), m in chans.items() if s == sender and ch in m]
                   for ch in (T.SPEECH, T.GESTURE)]
    for choice in itertools.product(*per_channel):
        got: dict[int, int] = {}
        for ch, r in zip((T.SPEECH, T.GESTURE), choice, strict=True):
            if r is not None:
                mode = chans[(sender, r)][ch]
                got[r] = T.FULL if T.FULL in (mode, got.get(r)) else mode
        options.append(got)

    def rank(m):
        return {T.FULL: 2, T.BLANKS: 1}.get(m, 0)

    def dominated(a, b):  # b at least as good for every recipient, better for one
        keys = a.keys() | b.keys()
        return a != b and all(rank(b.get(k)) >= rank(a.get(k)) for k in keys)

    unique = [o for i, o in enumerate(options) if o not in options[:i]]
    return [o for o in unique if not any(dominated(o, b) for b in unique)]


def round_bound(variant_name: str, turn_order: tuple[int, int, int], pick: tuple[int, ...] = (),
                gesture_symbols: int = T.DEFAULT_GESTURE_SYMBOLS) -> int | None:
    """Fewest rounds in which a team surely completes every action under ``turn_order``
    (rounds begun, as :func:`jaxcollab.agents.bomb.rounds_used` counts them), or None if no
    protocol finishes within the round budget.

    Args:
        turn_order: a permutation of the role ids. pick: the flash each stage uses (flashback;
            default: stage ``s`` uses flash ``s``). gesture_symbols: the gesture cap ``G``.
    """
    nd = needs(variant_name)
    v = nd.variant
    pick = pick or tuple(range(v.steps))
    cap = gesture_symbols + 1
    implied = _implied_slots(v.name) if nd.cycle else frozenset()
    static = {r: {("manual",)} if r in nd.holders["manual"] else set() for r in range(3)}
    for r in nd.holders["layout"]:
        static[r].add(("layout",))
    routings = {r: _routings(r) for r in range(3)}
    empty = frozenset()
    # state: (progress, done usages, knowledge per role, pending delivery per role)
    frontier = {(0, empty, (empty,) * 3, (empty,) * 3)}
    for g in range(3 * v.rounds):
        rnd, actor = g // 3, int(turn_order[g % 3])
        nxt = set()
        for progress, done, know, pending in frontier:
            k = set(know[actor] | pending[actor] | static[actor])
            if actor in nd.holders["key"]:
                k |= _visible_keys(nd, rnd, progress)
            _close(nd, k, pick, implied)
            if actor == ACTOR and progress < v.steps:
                u = rnd % v.period if nd.cycle else progress
                if u not in done and (nd.forced(progress) or ("answer", u) in k
                                      or (("value", u) in k and ("layout",) in k)):
                    progress, done = progress + 1, done | {u}
                    if progress == v.steps:
                        return rnd + 1
            k = frozenset(k)
            know2 = tuple(k if r == actor else know[r] for r in range(3))
            for routing in routings[actor]:
                pend = list(pending)
                pend[actor] = empty
                for r, mode in routing.items():
                    pend[r] = pend[r] | (k if mode == T.FULL else
                                         _blank_payload(nd, k, done, cap))
                nxt.add((progress, done, know2, tuple(pend)))
        frontier = _undominated(nxt)
    return None


def _undominated(states: set) -> set:
    """Drop states another state with the same progress matches or beats everywhere."""
    by_key: dict = {}
    for s in states:
        by_key.setdefault((s[0], s[1]), []).append(s)
    keep = set()
    for group in by_key.values():
        for s in group:
            if not any(o is not s and all(a <= b for a, b in zip(s[2] + s[3], o[2] + o[3],
                                                                  strict=True))
                       and (s[2] + s[3]) != (o[2] + o[3]) for o in group):
                keep.add(s)
    return keep


def _picks(v: T.Variant) -> list[tuple[int, ...]]:
    """The flash picks an instance can have: any flash for a picking rule, else stage order."""
    if v.pick_rule:
        return [(f,) + tuple(range(1, v.steps)) for f in range(v.flashes)]
    return [tuple(range(v.steps))]


# ---- symbols: cheapest route of the facts ----------------------------------------------------


def _hop(sender: int, recipient: int, n: int, gesture_symbols: int) -> float:
    """Symbols to send one of ``n`` values directly (inf where no channel carries it)."""
    if n <= 1:
        return 0
    best = math.inf
    for ch, mode in channels().get((sender, recipient), {}).items():
        if mode == T.FULL:
            best = min(best, math.ceil(math.log(n) / math.log(_ALPHABET[ch]) - 1e-12))
        elif n - 1 <= gesture_symbols:
            best = min(best, n - 1)  # value v as v blanks
    return best


def _ship(holders: frozenset[int], to: int, n: int, gesture_symbols: int) -> float:
    """Symbols to get one of ``n`` values from any holder to ``to`` (relays allowed)."""
    if to in holders:
        return 0
    direct = [_hop(h, to, n, gesture_symbols) for h in holders]
    relayed = [_hop(h, m, n, gesture_symbols) + _hop(m, to, n, gesture_symbols)
               for h in holders for m in range(3) if m not in (h, to)]
    return min(direct + relayed)


def cardinalities(variant_name: str) -> dict[str, int]:
    """How many values each shipped item can take (from the variant row and the tables):
    ``manual`` (answers per entry ^ entries x glyph labellings x flash picks), ``key`` (one
    action's key; a picking flash rule: the whole flash sequence), ``value``, ``layout``."""
    v = T.variant(variant_name)
    code = v.task == T.TASK_CODE
    entries = v.rows * v.cols
    labels = math.perm(len(T.PLATE_GLYPHS), v.rows) if v.key == T.KEY_GLYPH else 1
    picks = math.perm(v.flashes, v.steps) if v.pick_rule else 1
    if v.key == T.KEY_GLYPH:
        key = len(T.PLATE_GLYPHS)
    elif v.light == T.LIGHT_FLASH:
        key = v.rows ** v.flashes if v.pick_rule else v.rows
    else:
        key = v.rows * v.cols
    return {"manual": (100 if code else T.N_COLOURS) ** entries * labels * picks, "key": key,
            "value": 10 if code else T.N_COLOURS,
            "layout": 10 ** T.N_KEYS if code else T.N_COLOURS ** v.wires}


def symbol_bound(variant_name: str, gesture_symbols: int = T.DEFAULT_GESTURE_SYMBOLS
                 ) -> tuple[int, dict]:
    """Fewest message symbols (gesture symbols plus speech bytes) of a relay protocol that
    surely completes every action, and its route ``{value_resolver, position_resolver,
    symbols}`` (roles by name). Keys shared by several actions (the plate, a flash sequence
    under a picking rule) are shipped once."""
    nd = needs(variant_name)
    v = nd.variant
    n = cardinalities(variant_name)
    acts = [p for p in range(v.steps) if not nd.forced(p)]
    shared_key = v.key == T.KEY_GLYPH or v.pick_rule
    best = (math.inf, {})
    for vr, pr in itertools.product(range(3), repeat=2):
        ship = functools.partial(_ship, gesture_symbols=gesture_symbols)
        cost = ship(nd.holders["manual"], vr, n["manual"])
        cost += ship(nd.holders["layout"], pr, n["layout"])
        key = ship(nd.key_holders(), vr, n["key"])
        cost += key if shared_key else key * len(acts)
        for p in acts:
            cost += ship(frozenset({vr}), pr, n["value"])
            cost += ship(frozenset({pr}), ACTOR, nd.candidates(p))
        if cost < best[0]:
            best = (cost, {"value_resolver": T.ROLE_NAMES[vr],
                           "position_resolver": T.ROLE_NAMES[pr]})
    return int(best[0]), best[1]


# ---- per variant ----------------------------------------------------------------------------


def order_name(order) -> str:
    """``deaf-mute-blind`` for the role ids ``(0, 1, 2)``."""
    return "-".join(T.ROLE_NAMES[int(r)] for r in order)


def _describe(nd: Needs, route: dict) -> str:
    def names(roles):
        return "/".join(T.ROLE_NAMES[r] for r in sorted(roles))

    v = nd.variant
    key = {T.KEY_GLYPH: "the plate", T.KEY_FLASH: "a flash"}.get(
        v.key, "light and display" if v.cols > 1 else "the light")
    layout = "the keypad" if v.task == T.TASK_CODE else "the wire colours"
    forced = [p for p in range(v.steps) if nd.forced(p)]
    text = (f"{v.steps} action(s); each needs the manual ({names(nd.holders['manual'])}), "
            f"{key} ({names(nd.holders['key'])}) and {layout} "
            f"({names(nd.holders['layout'])}); only blind acts, once per turn")
    if forced:
        text += f"; action(s) {forced} need nothing (one uncut wire left)"
    implied = _implied_slots(v.name) if nd.cycle else frozenset()
    if implied:
        text += f"; each cycle slot in {sorted(implied)} follows from the others"
    return (text + f". Cheapest route: the {route['value_resolver']} works out each value, "
            f"the {route['position_resolver']} each position.")


@functools.cache
def variant_bounds(variant_name: str, gesture_symbols: int = T.DEFAULT_GESTURE_SYMBOLS) -> dict:
    """The bounds of one variant: ``min_rounds`` (over turn orders and instances),
    ``rounds_to_guarantee`` (fewest rounds that succeed on every instance, best turn order),
    ``by_turn_order.<deaf-mute-blind>`` (min rounds there), ``min_symbols``, ``route``,
    ``holders`` (role names per fact) and ``derivation`` (text)."""
    nd = needs(variant_name)
    v = nd.variant
    by_order, worst = {}, {}
    for order in TURN_ORDERS:
        rounds = [round_bound(v.name, tuple(order), p, gesture_symbols) for p in _picks(v)]
        finite = [r for r in rounds if r is not None]
        by_order[order_name(order)] = min(finite) if finite else None
        worst[order_name(order)] = None if None in rounds else max(rounds)
    symbols, route = symbol_bound(v.name, gesture_symbols)
    valid = [r for r in by_order.values() if r is not None]
    guarantee = [r for r in worst.values() if r is not None]
    return {
        "min_rounds": min(valid) if valid else None,
        "rounds_to_guarantee": min(guarantee) if guarantee else None,
        "round_budget": v.rounds,
        "by_turn_order": by_order,
        "min_symbols": symbols,
        "route": route,
        "holders": {k: [T.ROLE_NAMES[r] for r in sorted(h)] for k, h in nd.holders.items()},
        "derivation": _describe(nd, route),
    }


__all__ = ["FACTS", "Needs", "cardinalities", "channels", "needs", "order_name", "perceivers",
           "round_bound", "shown_keys", "symbol_bound", "variant_bounds"]
