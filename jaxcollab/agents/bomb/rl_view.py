"""The RL view of a bomb variant: per-agent observation vectors and a discrete joint action.

Built on the environment's own ``observe`` / ``step`` (SANZARU, Table 1 delivery rules are the
environment's; nothing here repeats a rule). An agent's **observation vector** is a fixed
selection of its observation tokens (int32 ids below ``VOCAB_SIZE``, for an embedding): the
header (role, round, budget, your-turn), the board, the manual entries the variant uses, the
picks, this turn's inbox (the first ``symbols`` tokens of each sender's latest speech and
gesture, with recipients) and the feedback flags; in Flashing one token more, the light the
role perceived at the light-cycle slot of the next cut (:meth:`BombView.slot_light`: the light
now, or from its own history); in Flashback three more, per sender the first speech token of
the round of the flash the manual picks, from the role's own numbered chat rows
(:meth:`BombView.picked_round_speech`). The rest of the light history and the chat window are
left out: a recurrent policy carries its own memory of what it perceived (so in Flashback the window
limits the text history, not what a recurrent agent remembers).

An agent's **discrete action** is int32 ``[n_heads]``: ``act`` (wait / cut / press),
``target`` (wire or key position 0..6), then per channel (speech, gesture) the recipient
(0 = nobody, 1 + role, 4 = everyone: each teammate gets it as the channel allows, SANZARU
Table 1) and ``symbols`` symbols from an alphabet of ``alphabet`` (symbol ``m``
is gesture id ``m + 1`` or the speech byte ``'A' + m``). A role has only the channels it can
send on (``CAN_SEND``); the others' recipient logits are masked to *nobody*. Sending to a role
that cannot receive the channel is allowed: the environment bounces it, or delivers a gesture to
Blind as blanks, and counts it as dead-channel use.

Timing in Flashing (the team's own plan, not a rule): Blind cuts only in a round whose
light-cycle slot is the next cut's (cut ``i`` in slot ``i mod period``, as
:func:`jaxcollab.envs.bomb.solve.solve` plays it), masked from its own header round and
``[CUT]`` marks (:meth:`BombView.action_mask`). A message reaches its listener at its next turn,
so whether a relayed answer was worked out this round or last depends on the turn order, which
no role perceives whole; an answer for a fixed slot, relayed from the slot's light, is right
whenever it arrives.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.agents.bomb.teams import oracle_hint
from jaxcollab.envs.bomb import BombEnv
from jaxcollab.envs.bomb import tables as T
from jaxcollab.envs.bomb.bank import CYCLE, parse_turn_order
from jaxcollab.envs.bomb.params import TURN_ORDERS, make_params, stack_params
from jaxcollab.envs.bomb.rules import BombAction
from jaxcollab.envs.bomb.state import required_value, seq_index
from jaxcollab.marl.views import NOBODY

ACT, TARGET = 0, 1
_BOARD = ("header", "light", "display", "display2", "light2", "wires", "keys", "pressed",
          "plate", "strip", "manual_mode")
SPEECH_BYTE0 = ord("A")


@dataclasses.dataclass(frozen=True)
class BombView:
    """The RL view of ``env`` (any message caps of at least ``symbols``).

    Args:
        env: a :class:`~jaxcollab.envs.bomb.BombEnv`.
        symbols: symbols per message, 1..4 (at most each cap).
        alphabet: distinct symbols, 2..42.

    Raises:
        ValueError: ``symbols`` or ``alphabet`` out of range, or above the env's caps.
    """

    env: BombEnv
    symbols: int = 1
    alphabet: int = 8

    def __post_init__(self):
        if not 1 <= self.symbols <= min(4, self.env.speech_bytes, self.env.gesture_symbols):
            raise ValueError(f"symbols={self.symbols!r} must be in 1..4 (and within the caps)")
        if not 2 <= self.alphabet <= T.N_SYMBOLS:
            raise ValueError(f"alphabet={self.alphabet!r} must be in 2..{T.N_SYMBOLS}")

    # ---- observations --------------------------------------------------------------------

    @functools.cached_property
    def positions(self) -> np.ndarray:
        """int32 ``[obs_size]``: the observation-token positions the view keeps."""
        sl = self.env.layout.slices()
        v, k = self.env.variant, self.symbols
        pick = [np.arange(sl[n].start, sl[n].stop) for n in _BOARD]
        pick.append(np.arange(sl["manual"].start, sl["manual"].start + 4 * v.rows * v.cols))
        pick.append(np.arange(sl["picks"].start, sl["picks"].stop))
        for channel, cap in (("speech", self.env.speech_bytes),
                             ("gesture", self.env.gesture_symbols)):
            pick.append(np.arange(sl[f"{channel}_meta"].start, sl[f"{channel}_meta"].stop))
            starts = sl[channel].start + cap * np.arange(T.N_AGENTS)
            pick.append((starts[:, None] + np.arange(k)).reshape(-1))
        pick.append(np.arange(sl["feedback"].start, sl["feedback"].stop))
        return np.concatenate(pick).astype(np.int32)

    @functools.cached_property
    def inbox(self) -> tuple[np.ndarray, np.ndarray]:
        """Where heard symbols sit in the observation vector and which tokens they arrive as:
        (slots int32 ``[2, 3, symbols]``: per channel and sender, the vector positions of that
        sender's latest message; tokens int32 ``[2, alphabet]``: the token symbol ``m`` shows
        as when delivered in full on each channel). Used to pass gradients through the
        channel (:class:`~jaxcollab.marl.ppo.PPOConfig` ``dial``)."""
        sl, k = self.env.layout.slices(), self.symbols
        at = {int(p): i for i, p in enumerate(self.positions)}
        slots = np.zeros((2, T.N_AGENTS, k), np.int32)
        for ch, (channel, cap) in enumerate((("speech", self.env.speech_bytes),
                                             ("gesture", self.env.gesture_symbols))):
            for s in range(T.N_AGENTS):
                slots[ch, s] = [at[sl[channel].start + cap * s + j] for j in range(k)]
        m = np.arange(self.alphabet)
        tokens = np.stack([T.BYTE_TOK + SPEECH_BYTE0 + m, T.SYMBOL_TOK + 1 + m]).astype(np.int32)
        return slots, tokens

    @property
    def cycle(self) -> int:
        """The light-cycle period in Flashing, else 0."""
        v = self.env.variant
        return v.period if v.light == T.LIGHT_CYCLE else 0

    @property
    def flashes(self) -> bool:
        """Whether the variant flashes its lights (Flashback)."""
        return self.env.variant.light == T.LIGHT_FLASH

    @property
    def obs_size(self) -> int:
        """:attr:`positions`, then the derived tokens: Flashing's :meth:`slot_light` (1),
        Flashback's :meth:`picked_round_speech` (3)."""
        return int(self.positions.shape[0]) + (self.cycle > 0) + T.N_AGENTS * self.flashes

    def picked_round_speech(self, obs: jax.Array) -> jax.Array:
        """Flashback: the first speech token each sender sent in the round of the flash the
        manual picks for the first cut, as each role's own chat history holds it, int32
        ``[..., 3, 3]`` (role, sender) from observation tokens ``[..., 3, L]``: the chat row
        (earlier rounds only, numbered, within the window) whose round is the role's first
        pick. Only Mute reads picks (the others' are ``HIDDEN``), so only its tokens can be
        other than ``PAD``. A chat row says in which round a message was sent; the inbox does
        not (whether a sender played earlier this round depends on the turn order), so this
        is what lets Mute pair a report with the flash it needs while the window keeps it."""
        sl, H, S = self.env.layout.slices(), T.CHAT_ROUNDS, self.env.speech_bytes
        pick = obs[..., sl["picks"].start]
        rounds = obs[..., sl["chat_round"]]  # [..., 3, H]: NUM_TOK + round, or PAD
        first = obs[..., sl["chat_speech"]].reshape(obs.shape[:-1] + (H, T.N_AGENTS, S))
        hit = (rounds == pick[..., None]) & (rounds != T.PAD)
        spoken = jnp.where(hit[..., None], first[..., 0], 0).sum(-2)  # rounds are distinct
        return jnp.where(hit.any(-1)[..., None], spoken, T.PAD)

    def cut_round(self, rnd: jax.Array, cuts: jax.Array) -> jax.Array:
        """The first round from ``rnd`` on in which Blind may make cut number ``cuts + 1``
        (0-based ``cuts``): in Flashing the next round of light-cycle slot
        ``cuts mod period``; elsewhere ``rnd``. int32, any shape."""
        if not self.cycle:
            return rnd
        return rnd + (cuts - rnd) % self.cycle

    def slot_light(self, obs: jax.Array) -> jax.Array:
        """Flashing: the light each role perceived at the light-cycle slot of the next cut,
        int32 ``[..., 3, 1]`` from observation tokens ``[..., 3, L]``, built only from the
        role's own row: its header round, its ``[CUT]`` marks (cut ``i`` is slot ``i mod
        period``, :meth:`cut_round`) and its light now (the slot showing) or its light history (the
        latest earlier round of the slot). Deaf's is a colour token; Mute's ``HIDDEN``,
        Blind's ``UNREADABLE``; ``PAD`` before the slot first showed."""
        sl = self.env.layout.slices()
        rnd = obs[..., sl["header"].start + 1] - T.NUM_TOK
        cuts = (obs[..., sl["wires"]] == T.CUT_MARK).sum(-1)
        past = rnd - (rnd - cuts) % self.cycle  # the latest round (now or earlier) of the slot
        history = obs[..., sl["history"]][..., ::2]  # light per past round [..., 3, 24]
        seen = jnp.take_along_axis(history, jnp.clip(past, 0, T.MAX_ROUNDS - 1)[..., None],
                                   -1)[..., 0]
        now = obs[..., sl["light"].start]
        return jnp.where(past == rnd, now, jnp.where(past >= 0, seen, T.PAD))[..., None]

    @property
    def vocab_size(self) -> int:
        return T.VOCAB_SIZE

    @functools.cached_property
    def _runs(self) -> tuple[tuple[int, int], ...]:
        """:attr:`positions` as contiguous ``(start, stop)`` runs."""
        p = self.positions
        cuts = np.flatnonzero(np.diff(p) != 1) + 1
        return tuple((int(r[0]), int(r[-1]) + 1) for r in np.split(p, cuts))

    def encode(self, obs: jax.Array) -> jax.Array:
        """Observation tokens int32 ``[..., 3, L]`` → observation vectors int32
        ``[..., 3, obs_size]``. Static slices, not a gather: under ``jit`` XLA then computes
        only the observation sections the view keeps; the derived tokens last
        (:attr:`obs_size`)."""
        derived = ([self.slot_light(obs)] if self.cycle else []) + (
            [self.picked_round_speech(obs)] if self.flashes else [])
        return jnp.concatenate([obs[..., a:b] for a, b in self._runs] + derived, axis=-1)

    n_agents = T.N_AGENTS

    @staticmethod
    def actor(obs: jax.Array, turn: jax.Array | None = None) -> jax.Array:
        """The role whose turn it is, from the your-turn flags of ``obs`` ``[..., 3, L]`` (or
        of observation vectors ``[..., 3, obs_size]``: the header comes first in both);
        ``turn`` (turns since reset) is not needed here."""
        return jnp.argmax(obs[..., :, 3] == T.YES, axis=-1)

    # ---- episodes ------------------------------------------------------------------------

    def episode_table(self, turn_order: str = "deaf,mute,blind", heldout: bool = False):
        """:class:`BombParams` ``[k]`` of the episodes to train (or, ``heldout``, evaluate) on,
        the same for both: the variant under each of the six turn orders (``"cycle"``) or
        under the one given (``"deaf,mute,blind"``).

        Raises:
            ValueError: a bad ``turn_order`` (names the valid forms)."""
        order = parse_turn_order(turn_order)
        orders = TURN_ORDERS if order == CYCLE else np.asarray([order], np.int32)
        return stack_params([make_params(self.env.variant, o) for o in orders])

    @property
    def max_turns(self) -> int:
        """Turns after which every episode of the variant has ended."""
        return T.N_AGENTS * self.env.variant.rounds

    @staticmethod
    def success(state) -> jax.Array:
        """Whether the episode ended defused."""
        return state.ending == T.DEFUSED

    #: Sizes of the :meth:`answer` parts: a position (wire or key), a value (colour or digit),
    #: a manual entry.
    answer_sizes = (T.MAX_WIRES, 10, T.MANUAL_ENTRIES)

    @staticmethod
    def progress(state) -> jax.Array:
        """int32: correct actions done so far (cuts, or code digits pressed)."""
        return state.progress

    def landing(self, state, params):
        """``state`` as it stands when Blind's next action may land: the round advanced by one
        if Blind's turn of this round is already past (its next turn is next round), and in
        Flashing on to the next round Blind may cut in (:meth:`cut_round`). Only Blind acts,
        so nothing else the manual reads changes before then except the round, which in
        Flashing picks the light-cycle slot that judges the cut."""
        blind_slot = jnp.argmax(jnp.asarray(params.turn_order) == T.BLIND)
        turn = state.round + (state.turn > blind_slot).astype(jnp.int32)
        return state.replace(round=self.cut_round(turn, state.progress))

    def answer(self, state, params) -> jax.Array:
        """What the task needs when Blind's next action may land (:meth:`landing`), int32
        ``[3]`` (privileged, for training losses only): the position to act on
        (:func:`~jaxcollab.agents.bomb.teams.oracle_hint`), the manual's answer
        (:func:`~jaxcollab.envs.bomb.state.required_value`: the wire colour or code digit)
        and the manual entry that decides it (``key_seq``: the row or cell the light,
        display, plate or flashes pick). The entry, not just its answer, is what a relay must
        carry to the manual's reader: wires alone often pin the answer but never the entry.
        At Blind's own turn it is the answer now; earlier in a round it is too, except in
        Flashing, where a cut is judged by the light when it lands: there it is the answer
        of the next cut's light-cycle slot, the same at every turn until that cut (timing
        by Blind's mask, :meth:`action_mask`). In Shuffle it follows the rotation: after a
        correct cut the next stage's wire where it now is."""
        land = self.landing(state, params)
        entry = land.key_seq[seq_index(land, params)]
        return jnp.stack([oracle_hint(land, params)[1], required_value(land, params), entry])

    # ---- actions -------------------------------------------------------------------------

    @property
    def head_sizes(self) -> tuple[int, ...]:
        """Sizes of the action heads: act, target, then per channel recipient and symbols."""
        channel = (2 + T.N_AGENTS,) + (self.alphabet,) * self.symbols
        return (len(T.ACT_NAMES), T.MAX_WIRES) + channel * 2

    @property
    def n_logits(self) -> int:
        return sum(self.head_sizes)

    def recipient_head(self, channel: int) -> int:
        return 2 + channel * (1 + self.symbols)

    @functools.cached_property
    def logit_mask(self) -> np.ndarray:
        """bool ``[3, n_logits]``: the logits each role may pick. What a role cannot do is
        masked (SANZARU Table 1): recipients on channels it cannot send on are fixed to
        nobody (``CAN_SEND``), a message goes to a teammate (not to its sender), and only
        Blind acts (the others can only wait). Blind's choices
        are those of the bomb in front of it (invalid-action masking; Huang & Ontañón 2022,
        "A Closer Look at Invalid Action Masking in Policy Gradient Algorithms"): ``press``
        only where the variant has a keypad (real or decoy: touching a decoy stays a choice
        it must learn to refuse), targets only the variant's wire (or key) positions, which
        Blind feels."""
        mask = np.ones((T.N_AGENTS, self.n_logits), bool)
        offsets = self.head_offsets
        v = self.env.variant
        mask[:, offsets[ACT] + 1:offsets[ACT + 1]] = False
        mask[T.BLIND, offsets[ACT] + T.ACT_NAMES.index("cut")] = True
        mask[T.BLIND, offsets[ACT] + T.ACT_NAMES.index("press")] = v.keypad != T.KEYPAD_NONE
        positions = max(v.wires, T.N_KEYS if v.keypad != T.KEYPAD_NONE else 0)
        mask[:, offsets[TARGET] + positions:offsets[TARGET + 1]] = False
        for role in range(T.N_AGENTS):
            for ch in range(2):
                start = offsets[self.recipient_head(ch)]
                if not T.CAN_SEND[role, ch]:
                    mask[role, start + 1:start + 2 + T.N_AGENTS] = False
                mask[role, start + 1 + role] = False  # a message goes to a teammate
        return mask

    def action_mask(self, enc: jax.Array, actor: jax.Array) -> jax.Array:
        """bool ``[n_logits]``: what role ``actor`` may pick, given the observation vectors
        ``enc`` int32 ``[3, obs_size]``: :attr:`logit_mask`, and in Flashing Blind's cut only
        in a round of the next cut's light-cycle slot (:meth:`cut_round` of its own header
        round and ``[CUT]`` marks; the team's timing plan, see the module docstring)."""
        mask = jnp.asarray(self.logit_mask)[actor]
        if not self.cycle:
            return mask
        row = enc[actor]
        rnd = row[self._round_column] - T.NUM_TOK
        cuts = (row[self._wire_columns] == T.CUT_MARK).sum()
        cut = np.arange(self.n_logits) == self.head_offsets[ACT] + T.CUT
        return mask & ~(jnp.asarray(cut) & (self.cut_round(rnd, cuts) != rnd))

    @functools.cached_property
    def head_offsets(self) -> np.ndarray:
        """int ``[n_heads + 1]``: where each action head's logits start (and the end)."""
        return np.cumsum((0,) + self.head_sizes)

    @functools.cached_property
    def _round_column(self) -> int:
        """The observation-vector position of the header's round token."""
        at = self.env.layout.slices()["header"].start + 1
        return int(np.flatnonzero(self.positions == at)[0])

    @functools.cached_property
    def _wire_columns(self) -> np.ndarray:
        """The observation-vector positions of the wire tokens ``[7]``."""
        sl = self.env.layout.slices()["wires"]
        return np.flatnonzero((self.positions >= sl.start) & (self.positions < sl.stop))

    def relevant(self, action: jax.Array) -> jax.Array:
        """bool ``[..., n_heads]``: heads that change what the environment does (the target
        only when acting, symbols only when sent): the factors of the action's probability."""
        always = jnp.ones(action.shape[:-1], bool)
        heads = [always, action[..., ACT] != T.WAIT]
        for ch in range(2):
            heads += [always] + [action[..., self.recipient_head(ch)] != NOBODY] * self.symbols
        return jnp.stack(heads, -1)

    def to_env(self, action: jax.Array) -> BombAction:
        """int32 ``[3, n_heads]`` (one episode) → the environment's joint :class:`BombAction`
        (symbols padded with zeros to the env's caps)."""
        k = self.symbols
        fields = {"act": action[:, ACT], "arg": action[:, TARGET]}
        for ch, (to_f, body_f, cap, base) in enumerate((
                ("speak_to", "speech", self.env.speech_bytes, SPEECH_BYTE0),
                ("gesture_to", "gesture", self.env.gesture_symbols, 1))):
            h = self.recipient_head(ch)
            fields[to_f] = action[:, h] - 1  # NOBODY → NO_TARGET (-1)
            body = (action[:, h + 1:h + 1 + k] + base).astype(jnp.uint8)
            fields[body_f] = jnp.pad(body, ((0, 0), (0, cap - k)))
        return BombAction(**{n: v.astype(jnp.int32) if v.dtype != jnp.uint8 else v
                             for n, v in fields.items()})

    def symbols_sent(self, action: BombAction) -> jax.Array:
        """Inverse of :meth:`to_env` on the symbols: int32 ``[3, 2, symbols]`` (-1 = none)."""
        k = self.symbols
        speech = action.speech[:, :k].astype(jnp.int32) - SPEECH_BYTE0
        gesture = action.gesture[:, :k].astype(jnp.int32) - 1
        out = jnp.stack([speech, gesture], 1)
        to = jnp.stack([action.speak_to, action.gesture_to], 1)
        return jnp.where(to[..., None] >= 0, out, -1)


    def on(self, env) -> BombView:
        """This view of the same variant on ``env``'s message caps (``env`` a
        :class:`~jaxcollab.envs.bomb.BombEnv` of the variant, or the bank's pinned-instance env,
        which carries its variants in the params).

        Raises:
            ValueError: ``env`` is another variant."""
        from jaxcollab.agents.bomb.bank import PinnedInstances

        if env.name != self.env.name and not isinstance(env, PinnedInstances):
            raise ValueError(f"{env.name!r} is not this view's {self.env.name!r}")
        return dataclasses.replace(self, env=BombEnv(self.env.name, env.speech_bytes,
                                                     env.gesture_symbols))


def make_view(name: str, symbols: int = 1, alphabet: int = 8) -> BombView:
    """The RL view of bomb variant ``name`` on an env with the smallest message caps that hold
    ``symbols`` (4 bytes / 4 symbols: same rules, smaller buffers).

    Raises:
        KeyError: unknown variant (lists the valid ones); ValueError: see :class:`BombView`.
    """
    return BombView(BombEnv(name, speech_bytes=4, gesture_symbols=4), symbols, alphabet)
