"""``talking``: a Defuser and an Expert that defuse bombs by talking (GPTNT §4; a scripted team).

A plain (non-privileged) policy: the Defuser reads only its observation row, the Expert only its
own row (the Defuser's last phrase) and the manual (:mod:`~jaxcollab.agents.ktane.reading`: the
module rules applied to what it heard). Each keeps its own memory; each updates it only on its
own turn (sync mode: even turns are the Defuser's).

The dialogue, in the message vocabulary:

* Defuser, zoomed on an unsolved module: ``module <title> <label> <face> strikes <n>`` followed
  by the module's view word for word (a Password is first read by pressing each column's down
  arrow five times; it then describes ``display`` and the 30 letters it saw).
* Expert: ``edgework`` if the module's rules read the casing and it has not heard it; the
  Defuser then turns the bomb to each side (up, left, down, right, left: four sides, back to the
  front, one turn each as in the game), and sends ``edgework`` and what the sides show.
* Expert: an instruction plan ``<verb> <label>… <verb> <label>…`` (``cut [C]``, ``press [B]
  [B] [A]``, ``cut [A] press [D]``) that the Defuser carries out action by action; or
  ``release <digit>`` for a held button, which the Defuser releases once its timer shows the
  digit. A plan ends where the Expert cannot see ahead (a new Simon stage, a new Wire Sequence
  panel, any Memory or Who's on First press); the Defuser then describes the module again. A
  strike aborts the plan and the module is described again.
"""

from __future__ import annotations

import dataclasses
import hashlib

import chex
import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.agents.ktane.reading import (
    MAX_PLAN,
    NOTE_LEN,
    READINGS,
    digit,
    edgework_facts,
    lookup,
    plan,
)
from jaxcollab.agents.ktane.view import FACE_AT, SLOT_TOKENS, defuser_view
from jaxcollab.core.rollout import Policy, policy
from jaxcollab.envs.ktane import KtaneEnv
from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane import vocab as V
from jaxcollab.envs.ktane.edgework import Facts
from jaxcollab.envs.ktane.modules import module_type, passwords
from jaxcollab.envs.ktane.modules.base import (
    ACTION_LEN,
    CUT,
    FLIP,
    HOLD,
    MESSAGE,
    MESSAGE_WORDS,
    PRESS,
    RELEASE,
    ROTATE,
    SELECT,
    VERBS,
    VIEW_LEN,
    WAIT,
    Ctx,
)
from jaxcollab.envs.ktane.observe import FACE_LEN, HEADER_LEN, HEARD_LEN, OBS_LEN
from jaxcollab.envs.ktane.ruleset import Ruleset, vanilla_ruleset

#: Defuser modes: find a module / await the Expert / carry out a plan / read the sides / read
#: the Password columns / hold the button until the release digit.
NAV, REPLY, PLAN, TOUR, READ, HOLDING = range(6)
#: Rotations that show the four sides and end on the front (from the front or the back).
TOUR_TURNS = np.array([0, 2, 1, 3, 2], np.int32)  # up, left, down, right, left
#: Words before the view in a module description: ``module title label face strikes n``.
DESC_HEAD = 6
#: Password reading: presses per column (the sixth letter seen is the one shown after them).
PW_PRESSES = T.PW_LETTERS * (T.PW_COLUMN - 1)
#: VERB_WORD[verb]: the instruction word of each module verb (0 for the others).
VERB_WORD = np.zeros(len(VERBS), np.int32)
VERB_WORD[[PRESS, CUT, HOLD, RELEASE]] = V.toks(("press", "cut", "hold", "release"))
#: Defuser-row positions (:func:`jaxcollab.envs.ktane.observe.header`) of the last turn's
#: result, the strike count and the four timer digits.
_LAST_AT, _STRIKES_AT, _TIMER_AT = 19, 8, np.array([1, 2, 4, 5])


@chex.dataclass(frozen=True)
class DefuserMemory:
    """The Defuser's memory (int32 unless noted): ``mode`` (:data:`NAV` …), ``slot`` the
    module worked on (-1 none), the plan ``verbs`` / ``targets`` ``[MAX_PLAN]`` with ``n_plan``
    and ``done``, ``tour`` (rotations made), ``edge`` ``[MESSAGE_WORDS]`` words read off the
    sides, ``seen`` ``[5, 6]`` Password letters and ``reads`` (presses made), ``digit`` the
    release digit."""

    mode: jax.Array
    slot: jax.Array
    verbs: jax.Array
    targets: jax.Array
    n_plan: jax.Array
    done: jax.Array
    tour: jax.Array
    edge: jax.Array
    seen: jax.Array
    reads: jax.Array
    digit: jax.Array


@chex.dataclass(frozen=True)
class ExpertMemory:
    """The Expert's memory: ``known`` (bool: edgework heard), ``facts`` (the manual's edgework
    predicates of what it heard), ``desc`` ``[MESSAGE_WORDS]`` the last module description and
    ``notes`` int32 ``[MAX_SLOTS, NOTE_LEN]`` per module slot."""

    known: jax.Array
    facts: Facts
    desc: jax.Array
    notes: jax.Array


@chex.dataclass(frozen=True)
class TeamMemory:
    """``turn`` (int32, turns played) and each role's memory."""

    turn: jax.Array
    defuser: DefuserMemory
    expert: ExpertMemory


def compact(words: jax.Array) -> jax.Array:
    """The non-padding words first, in order (same shape)."""
    return words[jnp.argsort(words == V.PAD, stable=True)]


def say(words) -> jax.Array:
    """A ``message`` action row carrying ``words`` (padded or cut to ``MESSAGE_WORDS``)."""
    words = jnp.atleast_1d(jnp.asarray(words, jnp.int32))[:MESSAGE_WORDS]
    phrase = jnp.pad(words, (0, MESSAGE_WORDS - words.shape[0]))
    return jnp.concatenate([jnp.array([MESSAGE, 0], jnp.int32), phrase])


def do(verb, target) -> jax.Array:
    """A non-message action row ``(verb, target)``."""
    return jnp.pad(jnp.stack([verb, target]).astype(jnp.int32), (0, ACTION_LEN - 2))


# --- Defuser ---------------------------------------------------------------------------------


def _init_defuser() -> DefuserMemory:
    z = jnp.int32(0)
    return DefuserMemory(
        mode=jnp.int32(NAV), slot=jnp.int32(-1), verbs=jnp.zeros(MAX_PLAN, jnp.int32),
        targets=jnp.zeros(MAX_PLAN, jnp.int32), n_plan=z, done=z, tour=z,
        edge=jnp.zeros(MESSAGE_WORDS, jnp.int32), seen=jnp.zeros((T.PW_LETTERS, T.PW_COLUMN),
                                                                  jnp.int32),
        reads=z, digit=jnp.int32(-1),
    )


def parse_instruction(phrase: jax.Array):
    """An Expert plan phrase → ``(verbs, targets, n)``: each set-of-marks label is one action
    with the latest instruction verb before it (int32 ``[MAX_PLAN]`` each, ``n`` actions)."""
    verb_of = lookup(VERB_WORD, phrase)  # verb id at instruction words, else -1
    last = jax.lax.cummax(jnp.where(verb_of >= 0, jnp.arange(phrase.shape[0]), -1))
    verb = jnp.where(last >= 0, verb_of[jnp.maximum(last, 0)], WAIT)
    label = lookup(V.LABEL, phrase)
    at = jnp.flatnonzero(label >= 0, size=MAX_PLAN, fill_value=0)
    return verb[at], label[at], jnp.minimum(jnp.sum(label >= 0), MAX_PLAN).astype(jnp.int32)


def _go_to(env: KtaneEnv, face, slot):
    """Select ``slot`` if it is on the visible face, else flip the bomb."""
    here = jnp.asarray(env.board.slot_face)[jnp.maximum(slot, 0)] == face
    return do(jnp.where(here, SELECT, FLIP), slot % T.SLOTS_PER_FACE)


def _title(row, slot) -> jax.Array:
    """The title word of module ``slot`` in the face view (``module [k]|zoom title status``)."""
    return row[HEADER_LEN + SLOT_TOKENS * jnp.maximum(slot, 0) + 2]


def _describe(row, slot, words) -> jax.Array:
    """``module title label face strikes n`` + ``words``."""
    head = jnp.stack([
        jnp.int32(V.tok("module")),
        _title(row, slot),
        jnp.asarray(V.LABEL)[slot % T.SLOTS_PER_FACE],
        row[FACE_AT],
        jnp.int32(V.tok("strikes")),
        row[_STRIKES_AT],
    ])
    return say(jnp.concatenate([head, words]))


def defuser_turn(env: KtaneEnv, row: jax.Array, mem: DefuserMemory):
    """One Defuser turn from its observation row ``[OBS_LEN]`` and memory: ``(action row
    [ACTION_LEN], memory)``."""
    face, zoom, solved = defuser_view(env, row)
    heard = row[OBS_LEN - HEARD_LEN :]
    fresh = heard[1] == V.tok("says")
    reply = heard[2:]
    view = row[HEADER_LEN + FACE_LEN : HEADER_LEN + FACE_LEN + VIEW_LEN]
    struck = row[_LAST_AT] == V.tok("strike")

    # --- what the last turns changed --------------------------------------------------------
    verbs, targets, n = parse_instruction(reply)
    answered = (mem.mode == REPLY) & fresh
    mode = jnp.where(
        answered,
        jnp.select([reply[0] == V.tok("edgework"), reply[0] == V.tok("release")],
                   [TOUR, HOLDING], PLAN),
        mem.mode,
    )
    mem = mem.replace(
        verbs=jnp.where(answered, verbs, mem.verbs),
        targets=jnp.where(answered, targets, mem.targets),
        n_plan=jnp.where(answered, n, mem.n_plan), done=jnp.where(answered, 0, mem.done),
        tour=jnp.where(answered, 0, mem.tour), edge=jnp.where(answered, 0, mem.edge),
        digit=jnp.where(answered, digit(reply[1]), mem.digit),
    )
    finished = ((mode == PLAN) & ((mem.done >= mem.n_plan) | struck)) | (
        (mode == HOLDING) & (row[_LAST_AT] != V.tok("wait")) & ~answered)
    slot_solved = (mem.slot >= 0) & solved[jnp.maximum(mem.slot, 0)] & (
        jnp.asarray(env.board.slot_face)[jnp.maximum(mem.slot, 0)] == face)
    mode = jnp.where(finished | slot_solved, NAV, mode)
    mem = mem.replace(mode=mode, slot=jnp.where(slot_solved, -1, mem.slot))

    # --- this turn's action, by mode ----------------------------------------------------------
    here = (jnp.asarray(env.board.slot_face) == face) & ~solved
    slot = jnp.where(mem.slot >= 0, mem.slot, jnp.where(jnp.any(here), jnp.argmax(here), -1))
    on_it = (zoom == slot) & (slot >= 0)
    is_password = _title(row, slot) == V.tok(passwords.PASSWORDS.title)

    # read the Password columns: record the letters shown, press the next down arrow
    r = jnp.where(mode == READ, mem.reads, 0)
    per_col = T.PW_COLUMN - 1
    col, k = jnp.minimum(r // per_col, T.PW_LETTERS - 1), r % per_col
    seen = jnp.where(r < PW_PRESSES, mem.seen.at[col, k].set(view[1 + col]), mem.seen)
    prev = jnp.maximum(r // per_col - 1, 0)  # a column just cycled shows its sixth letter
    seen = jnp.where((r > 0) & (k == 0), seen.at[prev, per_col].set(view[1 + prev]), seen)
    letters = jnp.concatenate([jnp.array([V.tok("display")], jnp.int32), seen.reshape(-1)])
    read_row = jnp.where(r < PW_PRESSES, do(PRESS, T.PW_LETTERS + col)[None],
                         _describe(row, slot, letters)[None])[0]

    # tour the sides: note each side's words, turn on; back on the front, send them
    sides = compact(jnp.concatenate([mem.edge, row[HEADER_LEN : HEADER_LEN + FACE_LEN]]))
    edge = jnp.where((face >= 2) & (mode == TOUR), sides[:MESSAGE_WORDS], mem.edge)
    edge_msg = say(jnp.concatenate([jnp.array([V.tok("edgework")], jnp.int32), edge]))
    tour_row = jnp.where(mem.tour < len(TOUR_TURNS),
                         do(ROTATE, jnp.asarray(TOUR_TURNS)[jnp.minimum(mem.tour, 4)])[None],
                         edge_msg[None])[0]

    timer = row[_TIMER_AT]
    release_now = jnp.any(timer == jnp.asarray(V.DIGIT)[jnp.clip(mem.digit, 0, 9)])
    plan_row = jnp.where(on_it, do(mem.verbs[jnp.minimum(mem.done, MAX_PLAN - 1)],
                                   mem.targets[jnp.minimum(mem.done, MAX_PLAN - 1)]),
                         _go_to(env, face, slot))
    nav_row = jnp.where(
        slot < 0, do(FLIP, 0),
        jnp.where(on_it, jnp.where(is_password, read_row, _describe(row, slot, view)),
                  _go_to(env, face, slot)))
    action = jax.lax.select_n(
        mode, nav_row, do(WAIT, 0), plan_row, tour_row, read_row,
        jnp.where(release_now, do(RELEASE, 0), do(WAIT, 0)),
    )

    # --- memory after the action --------------------------------------------------------------
    starts_read = (mode == NAV) & on_it & is_password
    described = (mode == NAV) & on_it & ~is_password
    reading = (mode == READ) | starts_read
    sent_read = reading & (r >= PW_PRESSES)
    toured = (mode == TOUR) & (mem.tour >= len(TOUR_TURNS))
    new_mode = jnp.select(
        [described | sent_read | toured, starts_read],
        [REPLY, READ],
        mode,
    )
    return action, mem.replace(
        mode=new_mode.astype(jnp.int32),
        slot=jnp.where((mode == NAV) & (slot >= 0), slot, mem.slot).astype(jnp.int32),
        done=mem.done + ((mode == PLAN) & on_it),
        tour=mem.tour + (mode == TOUR),
        edge=edge,
        seen=jnp.where(reading, seen, mem.seen),
        reads=jnp.where(reading, r + 1, mem.reads),
    )


# --- Expert ----------------------------------------------------------------------------------


def _init_expert() -> ExpertMemory:
    return ExpertMemory(
        known=jnp.bool_(False),
        facts=edgework_facts(jnp.zeros(MESSAGE_WORDS, jnp.int32)),
        desc=jnp.zeros(MESSAGE_WORDS, jnp.int32),
        notes=jnp.full((T.MAX_SLOTS, NOTE_LEN), -1, jnp.int32),
    )


def _plan_words(verbs, targets, used) -> jax.Array:
    """``<verb> <label>…``: a verb word where the verb changes, a label per action."""
    prev = jnp.concatenate([jnp.array([-1], jnp.int32), verbs[:-1]])
    words = jnp.stack([jnp.where(verbs != prev, jnp.asarray(VERB_WORD)[verbs], 0),
                       jnp.asarray(V.LABEL)[jnp.clip(targets, 0, len(V.LABEL) - 1)]], 1)
    return compact(jnp.where(used[:, None], words, 0).reshape(-1))


def _answer_branch(name: str):
    """The Expert's answer for module type ``name``: ``(phrase, note)``."""
    t, r = module_type(name), READINGS[name]

    def answer(words, note, ctx, key):
        m, release = r.read(words, note, ctx)
        verbs, targets, used, after = plan(t, m, ctx, key, r.more)
        release_words = jnp.pad(jnp.stack([jnp.int32(V.tok("release")),
                                           jnp.asarray(V.DIGIT)[jnp.maximum(release, 0)]]),
                                (0, 2 * MAX_PLAN - 2))
        phrase = jnp.where(release >= 0, release_words, _plan_words(verbs, targets, used))
        return phrase, r.keep(after)

    return answer


def expert_turn(env: KtaneEnv, manual: Ruleset, row: jax.Array, mem: ExpertMemory,
                key: jax.Array):
    """One Expert turn from its observation row (the Defuser's phrase), the manual's rule
    tables and its memory: ``(action row [ACTION_LEN], memory)``. It answers a fresh
    description or edgework phrase and otherwise waits."""
    fresh = row[1] == V.tok("says")
    phrase = row[2 : 2 + MESSAGE_WORDS]
    edge = fresh & (phrase[0] == V.tok("edgework"))
    module = fresh & (phrase[0] == V.tok("module"))
    mem = mem.replace(
        known=mem.known | edge,
        facts=jax.tree.map(lambda a, b: jnp.where(edge, a, b), edgework_facts(phrase[1:]),
                           mem.facts),
        desc=jnp.where(module, phrase, mem.desc),
    )
    desc = mem.desc
    titles = V.toks([t.title for t in env.board.kinds])
    kind = jnp.maximum(lookup(titles, desc[1]), 0)
    slot = lookup(V.toks(T.FACES), desc[3]) * T.SLOTS_PER_FACE + lookup(V.LABEL, desc[2])
    slot = jnp.clip(slot, 0, T.MAX_SLOTS - 1)
    ctx = Ctx(facts=mem.facts, strikes=digit(desc[5]), display=jnp.zeros(4, jnp.int32),
              rules=manual)
    words = desc[DESC_HEAD : DESC_HEAD + VIEW_LEN]
    branches = [_answer_branch(t.name) for t in env.board.kinds]
    answer, note = jax.lax.switch(kind, branches, words, mem.notes[slot], ctx, key)
    needs = jnp.asarray([READINGS[t.name].edgework for t in env.board.kinds])[kind] & ~mem.known
    ask = jnp.zeros_like(answer).at[0].set(V.tok("edgework"))
    reply = jnp.where(needs, ask, answer)
    act = (edge | module) & (mem.desc[0] == V.tok("module"))
    return jnp.where(act, say(reply), do(WAIT, 0)), mem.replace(
        notes=jnp.where(act & ~needs, mem.notes.at[slot].set(note), mem.notes)
    )


# --- the team --------------------------------------------------------------------------------


def _init(key) -> TeamMemory:
    return TeamMemory(turn=jnp.int32(0), defuser=_init_defuser(), expert=_init_expert())


@dataclasses.dataclass(frozen=True)
class _Talking:
    """The talking team's ``act``, compared by value (the env and the manual's contents), so
    equal teams share compiled rollouts."""

    env: KtaneEnv
    manual: Ruleset = dataclasses.field(compare=False)
    manual_digest: bytes = dataclasses.field(init=False)

    def __post_init__(self):
        digest = hashlib.sha256()
        for leaf in jax.tree.leaves(self.manual):
            digest.update(np.asarray(leaf).tobytes())
        object.__setattr__(self, "manual_digest", digest.digest())

    def __call__(self, key, obs, mem: TeamMemory):
        d_row, d_mem = defuser_turn(self.env, obs[0], mem.defuser)
        e_row, e_mem = expert_turn(self.env, self.manual, obs[1], mem.expert, key)
        mine = mem.turn % 2
        keep = lambda role, new, old: jax.tree.map(  # noqa: E731
            lambda a, b: jnp.where(mine == role, a, b), new, old)
        return jnp.stack([d_row, e_row]), TeamMemory(
            turn=mem.turn + 1, defuser=keep(0, d_mem, mem.defuser),
            expert=keep(1, e_mem, mem.expert))


def talking_team(env: KtaneEnv, manual: Ruleset | None = None) -> Policy:
    """The talking Defuser + Expert as a plain :class:`~jaxcollab.core.rollout.Policy` whose
    state is a :class:`TeamMemory`; the Expert holds ``manual`` (the public rule tables of the
    ruleset played, default vanilla: the manual is a document, not hidden state). Equal by value
    to every talking team of an equal env and manual."""
    manual = vanilla_ruleset() if manual is None else manual
    return policy(_Talking(env, manual), _init, name="talking")
