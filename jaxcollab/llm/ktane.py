"""Keep Talking (GPTNT) for LLM teams: Defuser and Expert prompts, action schema, sync/async play.

GPTNT appendices: the Defuser sees the bomb (here: the environment's text of its observation row,
with slot and target labels shown as set-of-marks letters ``[A]``, ``[B]``, …), the Expert gets
the manual and never the bomb. Both answer ``<thoughts>…</thoughts><action>{"result": {"kind":
"do_nothing" | "send_message" | "interact_game", "data": {…}}}</action>`` (GPTNT E, F.1).
Messages travel through per-player queues drained on each turn (GPTNT C.4.2); the environment
sees each message as the phrase of its first ``MESSAGE_WORDS`` vocabulary words (unknown words
dropped; it counts messages and shows the phrase; the full text never enters the game, as in
GPTNT, where messages bypass the game).

Modes (GPTNT C.4.2–C.4.3): ``sync`` — players alternate and game time advances Δ = 3 s after each
Defuser cycle (the environment's own turn cost); Expert cycles are free. ``async`` — the clock runs
while models generate: a Defuser decision that took ``L`` seconds lands ``floor(L / Δ)`` Defuser
slots later (the slots in between are waits, each costing Δ of bomb time), and an Expert message
reaches the Defuser's queue only once ``L`` seconds of game time have passed; latencies are the
measured ones (replayed from the cache on reruns), so slow models lose time. At the end, each
player is asked for a reflection on the game (ours, ``ktane.reflection``: GPTNT asks for none).

Context (GPTNT appendix D.4 "Observation Context Management": each forward pass gets the
current observation and the immediately preceding one, everything older discarded): the
Defuser's older turns keep their messages and feedback but not their view of the bomb; beyond
that, the oldest turns are dropped to stay within the model's context
(:meth:`~jaxcollab.llm.bridge.Game.fit`).
"""

from __future__ import annotations

import math
import re

import jax
import numpy as np

from jaxcollab.envs.ktane import tables as KT
from jaxcollab.envs.ktane import vocab as V
from jaxcollab.envs.ktane.mission import DEFUSER, ROLE_NAMES
from jaxcollab.envs.ktane.modules.base import (
    ACTION_LEN,
    BACK,
    CUT,
    FLIP,
    HOLD,
    MESSAGE,
    MESSAGE_WORDS,
    PRESS,
    RELEASE,
    ROTATE,
    SELECT,
    WAIT,
)
from jaxcollab.envs.ktane.render import manual_text
from jaxcollab.envs.ktane.ruleset import Ruleset, vanilla_ruleset
from jaxcollab.llm.bridge import Episode, Game, Turn, clip
from jaxcollab.llm.client import Request
from jaxcollab.llm.parse import Parsed, parse_reply

MODES = ("sync", "async")
#: interact_game sub-actions → (verb, needs a location). Navigation names follow GPTNT Table
#: E.17 (rotate_*, zoom_out); interaction names Table E.18 (click_release, click_hold, release).
INTERACT = {
    "select": (SELECT, True), "zoom_in": (SELECT, True), "zoom_out": (BACK, False),
    "back": (BACK, False), "flip": (FLIP, False),
    **{f"rotate_{d}": (ROTATE, False) for d in KT.ROTATIONS},
    "press": (PRESS, True), "click_release": (PRESS, True), "cut": (CUT, True),
    "hold": (HOLD, True), "click_hold": (HOLD, True), "release": (RELEASE, True),
}
_LABEL = re.compile(r"\[(\d+)\]")
#: What stands for a view older than the previous one in the Defuser's history.
OMITTED = "(An earlier view of the bomb, no longer shown.)"
_SCHEMA = (
    "Reply format: <thoughts>free text</thoughts><action>JSON</action> with exactly one action, "
    "one of:\n"
    '{"result": {"kind": "do_nothing", "data": {}}}\n'
    '{"result": {"kind": "send_message", "data": {"message": "free text to your partner"}}}')
_INTERACT_DOC = (
    '{"result": {"kind": "interact_game", "data": {"action": "ACTION", "location": "A"}}}\n'
    "ACTION is select (zoom into the module labelled LOCATION), zoom_out, rotate_up, "
    "rotate_down, rotate_left, rotate_right, flip (navigation, no location), or press, cut, "
    "hold, release (on the element labelled LOCATION of the module you are zoomed into). "
    "Locations are the set-of-marks letters shown in brackets in your current view.")


def marks(text: str) -> str:
    """The Defuser's text with label tokens ``[k]`` shown as set-of-marks letters (GPTNT D.2)."""
    return _LABEL.sub(lambda m: f"[{chr(64 + int(m.group(1)))}]", text)


def system_prompt(role: int, mode: str, rules: Ruleset | None = None) -> str:
    """GPTNT-style system prompt of the Defuser (0) or the Expert (1) in ``mode``; the Expert's
    holds the manual of ``rules`` (default: vanilla).

    Raises:
        ValueError: unknown mode.
    """
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; valid: {', '.join(MODES)}")
    time_rule = ("Each of the Defuser's turns consumes 3 seconds of game time; the Expert's "
                 "turns are free." if mode == "sync" else
                 "The game clock runs in real time while you think: the longer you take to "
                 "answer, the more time passes.")
    if role == DEFUSER:
        return "\n\n".join([
            "You are the Defuser in a game of Keep Talking and Nobody Explodes. You see the bomb "
            "(as text) and can interact with it, but you do not have the manual. Your partner, "
            "the Expert, has the manual but cannot see the bomb. Describe what you see, follow "
            "the Expert's instructions and defuse every module before time runs out; three "
            "strikes explode the bomb.", time_rule, _SCHEMA + "\n" + _INTERACT_DOC])
    return "\n\n".join([
        "You are the Expert in a game of Keep Talking and Nobody Explodes. You have the bomb "
        "defusal manual below but cannot see the bomb. Your partner, the Defuser, sees the bomb "
        "and acts on it. Ask for the details you need and tell the Defuser exactly what to do.",
        time_rule, _SCHEMA, manual_text(rules)])


def decode_action(parsed: Parsed, role: int, view: str) -> tuple[tuple[int, int, str], Parsed]:
    """``((verb, target, message), parsed)`` from a parsed ``{"result": …}`` action.

    Classes: schema violations ``invalid_action``; a location letter that is not a mark in the
    current ``view`` ``invalid_label`` (GPTNT F.2 semantic failure); an Expert trying to
    interact with the game ``invalid_action``. Any of them makes the turn a wait.
    """
    wait = (WAIT, 0, "")
    if not parsed.ok:
        return wait, parsed
    try:
        result = parsed.action["result"]
        kind, data = result["kind"], result.get("data") or {}
        if kind == "do_nothing":
            return wait, parsed
        if kind == "send_message":
            return (MESSAGE, 0, str(data["message"])), parsed
        if kind != "interact_game" or role != DEFUSER:
            return wait, parsed.with_errors("invalid_action")
        verb, located = INTERACT[str(data["action"])]
    except (KeyError, TypeError, AttributeError):
        return wait, parsed.with_errors("invalid_action")
    if verb == ROTATE:
        return (ROTATE, KT.ROTATIONS.index(data["action"][len("rotate_"):]), ""), parsed
    if not located:
        return (verb, 0, ""), parsed
    loc = str(data.get("location", "")).strip("[] ").upper()
    if len(loc) != 1 or f"[{loc}]" not in view:
        return wait, parsed.with_errors("invalid_label")
    return (verb, ord(loc) - 65, ""), parsed


def message_phrase(text: str) -> np.ndarray:
    """What the environment records of a free-text message: int32 ``[MESSAGE_WORDS]`` tokens of
    its vocabulary words in order (tried as written and without edge punctuation, lower- and
    upper-case; set-of-marks labels like ``[C]`` kept), unknown words dropped, 0-padded;
    ``nothing`` if no word is known."""
    words = []
    for word in re.findall(r"\[[A-Z]\]|[A-Za-z0-9'./-]+", text):
        bare = word.strip(".'-/")
        known = [c for w in (word, bare) for c in (w, w.lower(), w.upper()) if c in V.VOCAB[1:]]
        words += [V.tok(known[0])] if known else []
    words = words[:MESSAGE_WORDS] or [V.tok("nothing")]
    return np.pad(np.array(words, np.int32), (0, MESSAGE_WORDS - len(words)))


class KtaneGame(Game):
    """Host side of a Keep-Talking mission.

    Args:
        env: a :class:`~jaxcollab.envs.ktane.KtaneEnv`.
        mode: ``sync`` or ``async`` (module docstring).
        reflection: ask each player for an end-of-game reflection.
        rules: the episodes' :class:`~jaxcollab.envs.ktane.ruleset.Ruleset` (default:
            vanilla); the Expert's manual is written from it. Play with
            ``env.ruleset_params(rules)`` so the bomb follows the same rules.
    """

    roles = ROLE_NAMES

    def __init__(self, env, mode: str = "sync", reflection: bool = True,
                 rules: Ruleset | None = None):
        self.env, self.mode, self.reflection = env, mode, bool(reflection)
        self.rules = vanilla_ruleset() if rules is None else rules
        self.systems = [system_prompt(r, mode, self.rules) for r in range(2)]
        self.manual = manual_text(self.rules) + "\n\n"

    def action_struct(self):
        return jax.ShapeDtypeStruct((2, ACTION_LEN), np.int32)

    def noop(self):
        return np.zeros((2, ACTION_LEN), np.int32)

    def _state(self, ep: Episode) -> dict:
        return ep.data.setdefault("ktane", {
            "clock_s": 0.0, "queue": {r: [] for r in ROLE_NAMES}, "pending": None,
            "busy_until": {r: 0.0 for r in ROLE_NAMES}})

    def _conversation(self, ep: Episode, name: str) -> list[dict]:
        """The system prompt and ``name``'s past exchanges. As GPTNT (appendix D.4
        "Observation Context Management") passes only the current and the immediately preceding
        observation, older turns keep their messages and feedback but not the view
        (:data:`OMITTED` in its place); refused exchanges leave the context. Replies are fed
        back clipped (:func:`~jaxcollab.llm.bridge.clip`)."""
        role = ROLE_NAMES.index(name)
        turns = [h for h in ep.history[name] if not h["refused"]]
        messages = [{"role": "system", "content": self.systems[role]}]
        for j, h in enumerate(turns):
            seen = h["seen"] if j == len(turns) - 1 else h.get("brief", h["seen"])
            messages += [{"role": "user", "content": seen},
                         {"role": "assistant", "content": clip(h["said"])}]
        return messages

    def turn(self, ep: Episode, step: int, obs: np.ndarray) -> Turn:
        role = step % 2  # sync alternation of the environment: even turns are the Defuser's
        name, s = ROLE_NAMES[role], self._state(ep)
        now = s["clock_s"]
        if role == DEFUSER:
            s["clock_s"] += KT.TURN_S
            if s["pending"] is not None:  # async: an earlier decision still generating
                ready, action = s["pending"]
                if now < ready:
                    return self.noop()
                s["pending"] = None
                return action
        elif now < s["busy_until"][name]:
            return self.noop()
        if role == DEFUSER:
            view = marks(self.env.render_observation(obs[DEFUSER], DEFUSER))
        else:  # the Expert's row is the manual (already in its system prompt) + the phrase
            text = self.env.render_observation(obs[role], role, self.rules)
            view = text.removeprefix(self.manual)
        inbox = [m for t, m in s["queue"][name] if t <= now]
        s["queue"][name] = [(t, m) for t, m in s["queue"][name] if t > now]
        partner = ROLE_NAMES[1 - role].capitalize()
        parts = [view]
        parts.append(f"Messages from the {partner}:\n" + "\n".join(inbox) if inbox else
                     f"No new messages from the {partner}.")
        note = ep.take_note(name)
        if note:
            parts.append(f"<execution-feedback>{note}</execution-feedback>")
        user = "\n\n".join(parts)
        brief = "\n\n".join([OMITTED] + parts[1:]) if role == DEFUSER else user
        messages = [*self._conversation(ep, name), {"role": "user", "content": user}]
        req = Request(name, self.fit(ep, messages), nonce=f"{ep.index}:{step}")
        (reply,) = yield [req]
        self.overflowed(ep, req, reply)
        failed = reply.refused or bool(reply.failure)
        parsed = self.refusal(reply) if failed else parse_reply(reply.text, reply.finish_reason)
        (verb, target, text), parsed = decode_action(parsed, role,
                                                     view if role == DEFUSER else "")
        text = clip(text)
        ep.record(name, step, req, reply, parsed, seen=user, brief=brief, said=reply.text,
                  refused=failed, clock_s=now)
        lag = reply.latency_s if self.mode == "async" else 0.0
        if reply.refused:  # GPTNT: the partner is asked to rephrase; its messages are dropped
            s["queue"][ROLE_NAMES[1 - role]].append((now, "Can you rephrase that please?"))
        if verb == MESSAGE:
            s["queue"][ROLE_NAMES[1 - role]].append((now + lag, text))
        action = self.noop()
        action[role, :2] = (verb, target)
        if verb == MESSAGE:
            action[role, 2:] = message_phrase(text)
        if role != DEFUSER:
            s["busy_until"][name] = now + lag
            return action
        slots = math.floor(lag / KT.TURN_S)
        if slots:
            s["pending"] = (now + slots * KT.TURN_S, action)
            return self.noop()
        return action

    def finish(self, ep: Episode, outcome: str) -> Turn:
        """End-of-game reflection: each player is told the outcome and asked to reflect."""
        if not self.reflection:
            return
        reqs = []
        for name in ROLE_NAMES:
            messages = [*self._conversation(ep, name), {"role": "user", "content": (
                f"The game is over: {outcome}. Reflect on the game: what went well, what went "
                f"wrong in your collaboration, and what you would do differently.")}]
            reqs.append(Request(name, self.fit(ep, messages), nonce=f"{ep.index}:reflection"))
        replies = yield reqs
        ep.data["reflection"] = {r.agent: rep.text for r, rep in zip(reqs, replies)}
