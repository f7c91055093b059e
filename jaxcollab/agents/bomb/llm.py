"""Bomb families (SANZARU) for LLM teams: role prompts, hint levels, calls, solo condition.

The prompts are our own text (the paper does not print its prompts); what they say follows
SANZARU §3 and Table 1: each role is told what it perceives, which channels each teammate lacks
(hint levels), the gesture alphabet as emoji (Fig. 5), the message caps and the calls it may
make. The reply format is ``<thoughts>free text</thoughts><action>[CALLS]</action>`` (GPTNT's
format, F.1) with CALLS a JSON list of at most one each of ``speak``, ``gesture`` and either
``act`` or ``wait``, or the same calls in SANZARU's call syntax (Table 1: ``speak(to="mute",
text="…")``, ``wait()``; :mod:`jaxcollab.agents.bomb.callsyntax`); ``llm.tools=native``
offers the four
calls as OpenAI tool definitions. A call without ``to`` goes to everyone its channel reaches
(Table 1: Deaf's ``speak(text=…)`` reaches Mute and Blind). A call the role cannot make (Mute
speaking, Deaf cutting) is passed to the environment, which bounces or rejects it and counts it
(SANZARU's perspective flags): it is not a parse error. A message longer than the env's caps is
cut there and the sender is told so in its next prompt. The observation text is the
environment's own rendering of the role's token row, so chat history, blanks and bounces come
from the env.

Each agent keeps its own conversation (SANZARU Fig. 2: per-agent histories): every turn it saw
(user) and said (assistant). Flashback variants drop turns older than the variant's window, so
old rounds scroll out of the chat as they do out of the observation.
"""

from __future__ import annotations

import json
import re

import jax
import numpy as np

from jaxcollab.agents.bomb.callsyntax import read_calls
from jaxcollab.envs.bomb import tables as T
from jaxcollab.llm.bridge import Episode, Game, Turn, clip
from jaxcollab.llm.client import Request
from jaxcollab.llm.parse import SOFT, Parsed, parse_reply, parse_tool_calls

#: SANZARU Table 10's hint levels; the texts of each (:data:`_LACKS`, :data:`_STRONG`,
#: :data:`_PLAYBOOK`) are ours: the paper names the levels but does not print them.
HINTS = ("none", "weak", "strong", "playbook")

_PERCEIVES = {
    T.DEAF: ("You see the board: the light, the display, wire colours and positions, keypad "
             "digits and strip colours. The engraved plate reads [unreadable] to you. You cannot "
             "hear: speech sent to you bounces. You receive gestures. You cannot cut or press."),
    T.MUTE: ("You see only the manual, never the board. You cannot speak: you may only gesture. "
             "You receive speech and gestures. You cannot cut or press."),
    T.BLIND: ("You feel the board: wire positions and which wires are cut, keypad digits, the "
              "plate glyph and the strip glyphs. Colours, the light and the display read "
              "[unreadable] to you. You can speak. Gestures sent to you arrive as blanks, one ? "
              "per symbol. You are the only one who can cut a wire or press a key."),
}
_LACKS = ("Deaf cannot hear (speech to Deaf bounces; gesture to Deaf instead)",
          "Mute cannot speak and never sees the board (it holds the manual; it answers in "
          "gestures)",
          "Blind cannot see (colours, light and display are unreadable to it; gestures reach it "
          "only as blanks, so speak to Blind)")
_STRONG = ("Before relying on a code (what a gesture or a count means), agree on it explicitly "
           "and confirm that your teammates understood it.")
_PLAYBOOK = (
    "Playbook. Round 1: Deaf speaks to Mute, describing the board in words (light, display, "
    "wire colours by position, keypad digits); Blind speaks to Mute what it feels (plate glyph, "
    "number of wires). Mute looks the answer up in the manual and gestures it to Deaf as a "
    "count: as many point_up symbols as the wire position (or key position) to cut (press), "
    "one gesture per answer, the answers of several steps separated by a fist. Deaf decodes the "
    "count and speaks to Blind: 'cut wire N' (or 'press key N'). Blind acts exactly on that "
    "position and reports what it did. Repeat for each further step.")
_FORMAT = (
    "Reply format: <thoughts>free text</thoughts><action>[CALLS]</action>, where CALLS is a JSON "
    "list with at most one of each of: {\"call\": \"speak\", \"to\": \"deaf|mute|blind\", "
    "\"text\": \"...\"}, {\"call\": \"gesture\", \"to\": \"deaf|mute|blind\", \"symbols\": "
    "[\"thumbs_up\", ...]}, and either {\"call\": \"act\", \"op\": \"cut|press\", \"position\": "
    "N} or {\"call\": \"wait\"}. The same calls may be written as speak(to=\"mute\", "
    "text=\"...\"), gesture(to=\"deaf\", symbols=[point_up, fist]), act(op=\"cut\", position=3) "
    "and wait(). Without \"to\", speech or a gesture goes to every teammate who can receive it. "
    "Positions are numbered from 1 as on the board. Your thoughts are private; only calls reach "
    "your teammates.")
_TOOLS_FORMAT = ("Make your calls with the tools offered (at most one of each of speak, gesture, "
                 "and act or wait). Your text is private; only calls reach your teammates.")

_ROLE_ENUM = {"type": "string", "enum": list(T.TARGET_NAMES)}
#: The four calls as OpenAI tool definitions (``llm.tools=native``).
TOOLS = (
    {"type": "function", "function": {
        "name": "speak", "description": "Say text to one teammate (no 'to': everyone who "
        "can hear).",
        "parameters": {"type": "object", "required": ["text"], "properties": {
            "to": _ROLE_ENUM, "text": {"type": "string"}}}}},
    {"type": "function", "function": {
        "name": "gesture", "description": "Show a sequence of gesture symbols to one teammate "
        "(no 'to': everyone who can see).",
        "parameters": {"type": "object", "required": ["symbols"], "properties": {
            "to": _ROLE_ENUM, "symbols": {"type": "array", "items": {
                "type": "string", "enum": [n for n, _ in T.GESTURES]}}}}}},
    {"type": "function", "function": {
        "name": "act", "description": "Cut a wire or press a key, by position from 1.",
        "parameters": {"type": "object", "required": ["op", "position"], "properties": {
            "op": {"type": "string", "enum": ["cut", "press"]},
            "position": {"type": "integer", "minimum": 1}}}}},
    {"type": "function", "function": {
        "name": "wait", "description": "Do nothing with the bomb this turn.",
        "parameters": {"type": "object", "properties": {}}}},
)
_GLYPH_TO_NAME = {glyph: name for name, glyph in T.GESTURES}


def system_prompt(role: int, hint: str, turn_order=(0, 1, 2), rounds: int | None = None,
                  solo: bool = False, tools: bool = False,
                  caps: tuple[int, int] = (T.DEFAULT_SPEECH_BYTES, T.DEFAULT_GESTURE_SYMBOLS)
                  ) -> str:
    """The system prompt of ``role`` at hint level ``hint`` (SANZARU §3, hint levels), with
    the message ``caps`` (speech bytes, gesture symbols) stated.

    Raises:
        ValueError: unknown hint level (lists the valid ones).
    """
    if hint not in HINTS:
        raise ValueError(f"unknown hint level {hint!r}; valid: {', '.join(HINTS)}")
    order = ", ".join(T.ROLE_NAMES[r].capitalize() for r in turn_order)
    budget = f" within {rounds} rounds" if rounds else ""
    if solo:
        lines = [
            "You are defusing a bomb alone. You hold every view: the board as Deaf sees it, the "
            "manual as Mute sees it, and the board by touch as Blind feels it, and you hold the "
            f"cutters. Make the required cuts or presses{budget}; a wrong cut or press ends the "
            "game.",
            _FORMAT if not tools else _TOOLS_FORMAT,
            "Alone, only act and wait have an effect.",
        ]
        return "\n\n".join(lines)
    name = T.ROLE_NAMES[role].upper()
    lines = [
        f"You are {name} on a three-member bomb-defusal team: Deaf, Mute and Blind. Nobody holds "
        f"everything needed: Deaf sees the board, Mute holds the manual, Blind holds the cutters. "
        f"Each round every member takes one turn, in this order: {order}. The team must make the "
        f"required cuts or presses{budget}; a wrong cut or press ends the game.",
        _PERCEIVES[role],
    ]
    if hint != "none":
        lines.append("Your teammates' limits: " + "; ".join(
            _LACKS[r] for r in range(T.N_AGENTS) if r != role) + ".")
    if hint in ("strong", "playbook"):
        lines.append(_STRONG)
    if hint == "playbook":
        lines.append(_PLAYBOOK)
    lines.append("Gesture alphabet (name emoji): " + ", ".join(
        f"{n} {g}" for n, g in T.GESTURES) + ".")
    lines.append(f"A speech message carries at most {caps[0]} bytes of text and a gesture at "
                 f"most {caps[1]} symbols; anything longer is cut, and you are told.")
    lines.append(_FORMAT if not tools else _TOOLS_FORMAT)
    return "\n\n".join(lines)


def decode_calls(parsed: Parsed) -> tuple[dict, Parsed]:
    """Validate a parsed CALLS list: ``(turn, parsed)`` with ``turn`` the keyword arguments of
    :meth:`~jaxcollab.envs.bomb.BombEnv.action` (``{}`` = wait).

    Schema violations are class ``invalid_action``, two calls of one kind (or act with wait)
    ``multiple_actions``, a position outside 1..7 ``out_of_bounds``; any of them voids the turn.
    A speak or gesture without ``to`` (or ``to: "everyone"``) goes to ``everyone``. Which role
    may make which call, and who a call reaches, is *not* checked here: the environment judges
    that.
    """
    if not parsed.ok:
        return {}, parsed
    calls = parsed.action if isinstance(parsed.action, list) else [parsed.action]
    turn: dict = {}
    kinds = [c.get("call") if isinstance(c, dict) else None for c in calls]
    if any(k not in ("speak", "gesture", "act", "wait") for k in kinds):
        return {}, parsed.with_errors("invalid_action")
    if len(set(kinds)) < len(kinds) or {"act", "wait"} <= set(kinds):
        return {}, parsed.with_errors("multiple_actions")
    try:
        for c in calls:
            if c["call"] == "speak":
                turn |= {"speak_to": _target(c.get("to")), "text": str(c["text"])}
            elif c["call"] == "gesture":
                if not isinstance(c["symbols"], list | tuple):
                    return {}, parsed.with_errors("invalid_action")
                syms = [_GLYPH_TO_NAME.get(s, s) if isinstance(s, str) else s
                        for s in c["symbols"]]
                if any(s not in T.SYMBOL_IDS for s in syms):
                    return {}, parsed.with_errors("invalid_action")
                turn |= {"gesture_to": _target(c.get("to")), "symbols": tuple(syms)}
            elif c["call"] == "act":
                if c["op"] not in ("cut", "press"):
                    return {}, parsed.with_errors("invalid_action")
                pos = int(c["position"])
                if not 1 <= pos <= T.MAX_WIRES:
                    return {}, parsed.with_errors("out_of_bounds")
                turn |= {"act": c["op"], "arg": pos - 1}
    except (KeyError, TypeError, ValueError, OverflowError):  # e.g. "position": 1e999
        return {}, parsed.with_errors("invalid_action")
    return turn, parsed


def _target(name) -> int:
    """A recipient: a role's index, or ``EVERYONE`` (no ``to``, ``everyone`` or ``all``)."""
    name = "everyone" if name is None else str(name).lower()
    name = "everyone" if name == "all" else name
    if name not in T.TARGET_NAMES:
        raise ValueError(name)
    return T.TARGET_NAMES.index(name)


def fit_caps(env, turn: dict) -> tuple[dict, str]:
    """``turn`` with its speech cut to ``env.speech_bytes`` (at a character boundary) and its
    gesture to ``env.gesture_symbols``, and the note owed to the sender ("" when nothing was
    cut): a message is never cut silently."""
    notes, out = [], dict(turn)
    data = str(turn.get("text", "")).encode("utf-8")
    if len(data) > env.speech_bytes:
        out["text"] = data[: env.speech_bytes].decode("utf-8", "ignore")
        notes.append(f"your last speech was {len(data)} bytes, over the limit of "
                     f"{env.speech_bytes}: only its first {len(out['text'].encode())} bytes, "
                     f"ending \"{out['text'][-40:]}\", were delivered")
    symbols = tuple(turn.get("symbols", ()))
    if len(symbols) > env.gesture_symbols:
        out["symbols"] = symbols[: env.gesture_symbols]
        notes.append(f"your last gesture had {len(symbols)} symbols, over the limit of "
                     f"{env.gesture_symbols}: only the first {env.gesture_symbols} were "
                     "delivered")
    return out, ("Your message was cut: " + "; ".join(notes) + ".") if notes else ""


def parse_calls(text: str, finish_reason: str = "stop") -> Parsed:
    """A bomb reply's calls: the JSON format (:func:`~jaxcollab.llm.parse.parse_reply`) or,
    where that yields no calls, SANZARU's call syntax (:func:`~jaxcollab.agents.bomb.callsyntax.
    read_calls`) in the ``<action>`` block (else after ``</thoughts>``, else anywhere), keeping
    the reply's soft classes. Never raises."""
    parsed = parse_reply(text, finish_reason)
    text = text if isinstance(text, str) else ""
    shaped = parsed.action is not None and all(
        isinstance(c, dict) and "call" in c
        for c in (parsed.action if isinstance(parsed.action, list) else [parsed.action]))
    if (parsed.ok and shaped) or "multiple_actions" in parsed.errors:
        return parsed
    blocks = _ACTION_BLOCK.findall(text)
    region = blocks[-1] if blocks else _AFTER_THOUGHTS.split(text)[-1]
    calls = read_calls(region)
    if calls is None:
        return parsed
    soft = [e for e in parsed.errors if e in SOFT and e != "repaired_json"]
    return Parsed(calls, parsed.thoughts).with_errors(*soft, *([] if blocks else
                                                              ["malformed_xml"]))


_ACTION_BLOCK = re.compile(r"<action>(.*?)</action>", re.S | re.I)
_AFTER_THOUGHTS = re.compile(r"</thoughts?>", re.I)

#: What a refused agent is asked once in the same turn (ours, after GPTNT's "Guardrail
#: violations", where it is the *partner* whose message tripped the filter that is asked to
#: rephrase; a bomb refusal is of the agent's own prompt, so the agent itself is asked).
REPHRASE = ("Your last request was refused by the provider's content policy. Can you rephrase "
            "that please? Reply in the same format.")


class BombGame(Game):
    """Host side of a bomb variant.

    Args:
        env: a :class:`~jaxcollab.envs.bomb.BombEnv`.
        hint: ``none | weak | strong | playbook`` (SANZARU hint levels).
        turn_order: the roles' order each round (must match the params the rollout uses).
        solo: one agent holds every view and acts on Blind's turns; teammates only wait.
        tools: offer the calls as native tool definitions instead of the text format.
    """

    roles = T.ROLE_NAMES

    def __init__(self, env, hint: str = "weak", turn_order=(0, 1, 2), solo: bool = False,
                 tools: bool = False):
        self.env, self.solo, self.tools = env, bool(solo), bool(tools)
        self.window = int(env.variant.window)
        caps = (env.speech_bytes, env.gesture_symbols)
        self.systems = [system_prompt(r, "none" if solo else hint, turn_order,
                                      int(env.variant.rounds), solo, tools, caps)
                        for r in range(T.N_AGENTS)]
        self._noop = env.noop()  # NumPy: the callback builds actions without JAX

    def action_struct(self):
        return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), self._noop)

    def noop(self):
        return self._noop

    def turn(self, ep: Episode, step: int, obs: np.ndarray) -> Turn:
        role = int(np.flatnonzero(obs[:, 3] == T.YES)[0])
        if self.solo and role != T.BLIND:
            return self._noop
        name = "solo" if self.solo else T.ROLE_NAMES[role]
        if self.solo:
            seen = "\n\n".join(self.env.render_observation(obs[r], r) for r in range(3))
        else:
            seen = self.env.render_observation(obs[role], role)
        rnd = int(obs[role, 1]) - T.NUM_TOK
        note = ep.take_note(name)
        user = seen + (f"\n\nNOTICE {note}" if note else "")
        messages = [{"role": "system", "content": self.systems[role]}]
        for h in ep.history.get(name, []):
            if h["refused"] or (self.window and h["round"] <= rnd - self.window):
                continue  # refused exchanges leave the context (as in GPTNT's guardrail case)
            messages += [{"role": "user", "content": h["seen"]},
                         {"role": "assistant", "content": clip(h["said"])}]
        messages.append({"role": "user", "content": user})
        req = Request(name, self.fit(ep, messages), nonce=f"{ep.index}:{step}",
                      tools=TOOLS if self.tools else ())
        (reply,) = yield [req]
        ep.history.setdefault(name, [])
        if reply.refused:  # one "please rephrase" exchange (ours: :data:`REPHRASE`)
            ep.record(name, step, req, reply, self.refusal(reply), round=rnd, seen=user,
                      said="", refused=True)
            req = Request(name, req.messages + ({"role": "user", "content": REPHRASE},),
                          nonce=f"{req.nonce}:rephrase", tools=req.tools)
            (reply,) = yield [req]
        self.overflowed(ep, req, reply)
        if reply.refused or reply.failure:
            parsed = self.refusal(reply)
        elif self.tools:
            parsed = parse_tool_calls(reply.tool_calls, reply.text)
        else:
            parsed = parse_calls(reply.text, reply.finish_reason)
        turn, parsed = decode_calls(parsed)
        turn, cut = fit_caps(self.env, turn)
        said = reply.text if not self.tools else (
            f"{reply.text or ''}<action>{json.dumps(parsed.action)}</action>")
        ep.history.setdefault(name, [])
        ep.record(name, step, req, reply, parsed, round=rnd, seen=user, said=said,
                  refused=reply.refused or bool(reply.failure), cut=cut)
        if cut:  # owed with the parser's note, on the sender's next turn
            ep.notes[name] = " ".join(n for n in (ep.notes.get(name, ""), cut) if n)
        if not turn:
            return self._noop
        return self.env.action(role, **turn)
