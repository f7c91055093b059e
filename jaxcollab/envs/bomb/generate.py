"""Instance generation: a jit/vmap-safe ``reset`` that draws a board and manual consistent with
one variant's rules (SANZARU, Tables 8 and 9).

Guarantees (tested): every required wire colour is unique among the wires still uncut when it is
required; wires the manual never names avoid every named colour; in bait variants each cut's
manual row maps the light to its own colour with probability ``1 / N_LIGHTS`` (SANZARU Fig. 12
maps blue to blue), and at every other cut the light's own colour is on an uncut wire that is
*not* the answer (the bait); flashing cycles name
distinct wires; keypad codes use two distinct digits present on the keypad. All random numbers
come from one ``jax.random.bits`` word expanded by an integer hash.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxcollab.envs.bomb import tables as T
from jaxcollab.envs.bomb.params import BombParams
from jaxcollab.envs.bomb.state import BombState, mix

_SIZES = {"key": T.MANUAL_ENTRIES, "light": T.N_LIGHTS, "colour": T.N_COLOURS,
          "pos": T.MAX_WIRES, "flash": T.SEQ, "glyph": len(T.PLATE_GLYPHS), "digit": 10,
          "kp": T.N_KEYS, "fill": T.SEQ, "val": 2 * T.MANUAL_ENTRIES,
          "other": T.MAX_WIRES * T.N_COLOURS, "misc": 4, "self": T.SEQ}


def _uniforms(key: jax.Array) -> tuple[dict[str, jax.Array], jax.Array]:
    """Named slices of uniform numbers in [0, 1), and a uint32 seed for the noise parts.

    One 32-bit word comes from ``jax.random.bits``; the rest are a counter-based integer hash
    of it (:func:`~jaxcollab.envs.bomb.state.mix`), which is far cheaper than a threefry
    draw per number and plenty for board generation.
    """
    total = sum(_SIZES.values())
    seed = jax.random.bits(key, (), jnp.uint32)
    words = mix(mix(seed + jnp.arange(total + 1, dtype=jnp.uint32) * jnp.uint32(0x9E3779B9)))
    u = (words[:total] >> 8).astype(jnp.float32) * (1.0 / (1 << 24))
    out, at = {}, 0
    for name, n in _SIZES.items():
        out[name] = u[at : at + n]
        at += n
    return out, words[total]


def _perm(u: jax.Array, valid: jax.Array) -> jax.Array:
    """A random permutation whose first ``valid`` entries are a shuffle of ``range(valid)``.

    Sort-free (pairwise ranks), which vectorises far better than ``argsort`` on small rows.
    """
    n = u.shape[0]
    x = u + 2.0 * (jnp.arange(n) >= valid)
    i = jnp.arange(n)
    less = (x[None, :] < x[:, None]) | ((x[None, :] == x[:, None]) & (i[None, :] < i[:, None]))
    rank = less.sum(1)  # rank[i] = position of i in sorted order
    return (jnp.arange(n)[None, :] * (rank[None, :] == i[:, None])).sum(1)


def _perm_inverse(perm: jax.Array) -> jax.Array:
    """``inverse[perm[k]] = k``."""
    k = jnp.arange(perm.shape[0])
    return (k[None, :] * (perm[None, :] == k[:, None])).sum(1)


def _pick_by_onehot(index: jax.Array, values: jax.Array, active: jax.Array, n: int):
    """Scatter ``values[i]`` to slot ``index[i]`` for active ``i``: returns (hit ``[n]``, val)."""
    hit = (index[:, None] == jnp.arange(n)[None, :]) & active[:, None]
    return hit.any(0), (hit * values[:, None]).sum(0)


def generate(key: jax.Array, params: BombParams, speech_bytes: int, gesture_symbols: int
             ) -> BombState:
    """Draw one episode's initial state for the variant in ``params``.

    Args:
        key: PRNG key.
        params: the variant's :class:`BombParams` (dynamic; one compile serves all variants).
        speech_bytes, gesture_symbols: message caps S and G (static shapes).

    Returns:
        A :class:`BombState` at round 0, turn 0.
    """
    u, noise = _uniforms(key)
    p = params
    s = jnp.arange(T.SEQ)
    key_perm = _perm(u["key"], p.rows * p.cols)
    light_perm = _perm(u["light"], p.rows)
    colour_perm = _perm(u["colour"], T.N_COLOURS)
    pos_perm = _perm(u["pos"], p.wires)
    glyph_perm = _perm(u["glyph"], len(T.PLATE_GLYPHS))
    digit_perm = _perm(u["digit"], 10)
    disp0 = (u["misc"][0] * p.cols).astype(jnp.int32)

    # Manual entry deciding each stage / cycle slot (distinct across stages and slots).
    cycle_keys = light_perm[jnp.minimum(s, T.N_LIGHTS - 1)] * p.cols + disp0
    stage_keys = jnp.where(p.key == T.KEY_GLYPH, key_perm[0], key_perm[: T.SEQ])
    key_seq = jnp.where(p.light == T.LIGHT_STAGE, stage_keys, cycle_keys)

    # What the board shows.
    pick = jnp.where(p.pick_rule == 1, _perm(u["flash"], p.flashes), s)
    hit, picked = _pick_by_onehot(pick, key_seq, s < p.steps, T.SEQ)
    flash_seq = jnp.where(hit, picked, (u["fill"] * p.rows).astype(jnp.int32))
    carving_light = (u["misc"][1] * T.N_LIGHTS).astype(jnp.int32)
    light_seq = jnp.where(p.key == T.KEY_GLYPH, carving_light, key_seq // p.cols)
    light_seq = jnp.where(p.light == T.LIGHT_FLASH, flash_seq, light_seq)
    disp_seq = jnp.where(p.cols > 1, key_seq % p.cols, 0)

    # Named answers: distinct colours. Bait: a stage whose row maps its light to itself answers
    # the light's colour; the other stages form a chain, each answering the previous chained
    # stage's light (the first a colour no light shows), so each chained stage's light colour
    # is on a later stage's wire, or on the bait wire for the last one.
    n_named = jnp.where(p.task == T.TASK_CODE, 0, jnp.where(p.light == T.LIGHT_CYCLE, p.period,
                                                             p.steps))
    stage_light = key_seq // p.cols
    in_lights = ((stage_light[:, None] == jnp.arange(T.N_COLOURS)) & (s < p.steps)[:, None]).any(0)
    bait_first = colour_perm[jnp.argmax(~in_lights[colour_perm])]
    to_itself = (u["self"] * T.N_LIGHTS < 1.0) & (s < p.steps)
    chained = (s < p.steps) & ~to_itself
    last_chained = jax.lax.cummax(jnp.where(chained, s, -1))  # at or before each stage
    before = jnp.concatenate([jnp.full(1, -1), last_chained[:-1]])
    bait_colours = jnp.where(to_itself, stage_light, jnp.where(
        before >= 0, stage_light[jnp.clip(before, 0, T.SEQ - 1)], bait_first))
    named = jnp.where(p.bait == 1, bait_colours, colour_perm[jnp.minimum(s, T.N_COLOURS - 1)])
    has_bait = (p.bait == 1) & chained.any()
    bait_wire = stage_light[jnp.clip(last_chained[-1], 0, T.SEQ - 1)]

    # Keypad and code (carving-2).
    keypad = digit_perm[: T.N_KEYS]
    kp_perm = _perm(u["kp"], T.N_KEYS)
    code = keypad[kp_perm[0]] * 10 + keypad[kp_perm[1]]

    # Manual: random entries, overwritten at the named keys.
    k = jnp.arange(T.MANUAL_ENTRIES)
    rand_colour = (u["val"][: T.MANUAL_ENTRIES] * T.N_COLOURS).astype(jnp.int32)
    rand_code = (u["val"][T.MANUAL_ENTRIES :] * 100).astype(jnp.int32)
    is_code = p.task == T.TASK_CODE
    n_manual_named = jnp.where(is_code, 1, n_named)
    hit, val = _pick_by_onehot(key_seq, jnp.where(is_code, code, named), s < n_manual_named,
                               T.MANUAL_ENTRIES)
    manual_val = jnp.where(hit, val, jnp.where(is_code, rand_code, rand_colour))
    used = k < p.rows * p.cols
    manual_a = jnp.where(p.key == T.KEY_GLYPH, glyph_perm[jnp.minimum(k, 7)], k // p.cols)
    manual_a = jnp.where(used, manual_a, -1)
    manual_b = jnp.where(used & (p.cols > 1), k % p.cols, -1)
    plate = jnp.where(p.key == T.KEY_GLYPH, glyph_perm[key_seq[0]],
                      (u["misc"][2] * len(T.PLATE_GLYPHS)).astype(jnp.int32))

    # Wires: named colours at random positions, then the bait wire, then colours nobody names.
    named_mask = ((named[:, None] == jnp.arange(T.N_COLOURS)) & (s < n_named)[:, None]).any(0)
    other_u = u["other"].reshape(T.MAX_WIRES, T.N_COLOURS)
    other = jnp.argmax(jnp.where(named_mask, -1.0, other_u), axis=1)
    rank = _perm_inverse(pos_perm)
    colour = jnp.where(rank < n_named, named[jnp.minimum(rank, T.SEQ - 1)], other)
    colour = jnp.where(has_bait & (rank == n_named), bait_wire, colour)
    colour = jnp.where(jnp.arange(T.MAX_WIRES) < p.wires, colour, -1)

    i32 = jnp.int32
    return BombState(
        round=i32(0), turn=i32(0), ending=i32(T.RUNNING), progress=i32(0),
        wire_colour=colour.astype(i32), wire_cut=jnp.zeros(T.MAX_WIRES, bool),
        key_seq=key_seq.astype(i32), light_seq=light_seq.astype(i32),
        disp_seq=disp_seq.astype(i32), pick=pick.astype(i32),
        manual_a=manual_a.astype(i32), manual_b=manual_b.astype(i32),
        manual_val=manual_val.astype(i32),
        keypad=keypad.astype(i32), pressed=jnp.zeros(T.N_KEYS, bool), plate=plate.astype(i32),
        noise=noise,
        hist_light=jnp.full(T.MAX_ROUNDS, -1, i32), hist_disp=jnp.full(T.MAX_ROUNDS, -1, i32),
        seen_colours=i32(0), bounces=i32(0), rejected=i32(0), acts=i32(0),
        wrong_round=jnp.bool_(False),
        speech=jnp.zeros((T.CHAT_SLOTS, T.N_AGENTS, speech_bytes // 4), jnp.uint32),
        speech_to=jnp.full((T.CHAT_SLOTS, T.N_AGENTS), T.NO_TARGET, i32),
        gesture=jnp.zeros((T.CHAT_SLOTS, T.N_AGENTS, gesture_symbols // 4), jnp.uint32),
        gesture_to=jnp.full((T.CHAT_SLOTS, T.N_AGENTS), T.NO_TARGET, i32),
        bounced=jnp.zeros((T.N_AGENTS, 2), bool), act_rejected=jnp.zeros(T.N_AGENTS, bool),
    )
