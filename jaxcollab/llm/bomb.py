"""Bomb families (SANZARU) for LLM teams: role prompts, hint levels, calls, solo condition.

Prompts follow SANZARU §3 and Table 1: each role is told what it perceives, which channels each
teammate lacks (hint levels), the gesture alphabet as emoji, and the calls it may make. The reply
format is ``<thoughts>free text</thoughts><action>[CALLS]</action>`` with CALLS a JSON list of at
most one each of ``speak``, ``gesture`` and either ``act`` or ``wait``; ``llm.tools=native`` offers
the same four calls as OpenAI tool definitions. A call the role cannot make (Mute speaking, Deaf
cutting) is passed to the environment, which bounces or rejects it and counts it (SANZARU's
perspective flags): it is not a parse error. The observation text is the environment's own
rendering of the role's token row, so chat history, blanks and bounces come from the env.

Each agent keeps its own conversation (SANZARU Fig. 2: per-agent histories): every turn it saw
(user) and said (assistant). Flashback variants drop turns older than the variant's window, so
old rounds scroll out of the chat as they do out of the observation.
"""

from __future__ import annotations

import json

import jax
import numpy as np

from jaxcollab.envs.bomb import tables as T
from jaxcollab.llm.bridge import Episode, Game, Turn, clip
from jaxcollab.llm.client import Request
from jaxcollab.llm.parse import Parsed, parse_reply, parse_tool_calls

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
    "N} or {\"call\": \"wait\"}. Positions are numbered from 1 as on the board. Your thoughts are "
    "private; only calls reach your teammates.")
_TOOLS_FORMAT = ("Make your calls with the tools offered (at most one of each of speak, gesture, "
                 "and act or wait). Your text is private; only calls reach your teammates.")

_ROLE_ENUM = {"type": "string", "enum": list(T.ROLE_NAMES)}
#: The four calls as OpenAI tool definitions (``llm.tools=native``).
TOOLS = (
    {"type": "function", "function": {
        "name": "speak", "description": "Say text to one teammate.",
        "parameters": {"type": "object", "required": ["to", "text"], "properties": {
            "to": _ROLE_ENUM, "text": {"type": "string"}}}}},
    {"type": "function", "function": {
        "name": "gesture", "description": "Show a sequence of gesture symbols to one teammate.",
        "parameters": {"type": "object", "required": ["to", "symbols"], "properties": {
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
                  solo: bool = False, tools: bool = False) -> str:
    """The system prompt of ``role`` at hint level ``hint`` (SANZARU §3, hint levels).

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
    lines.append(_FORMAT if not tools else _TOOLS_FORMAT)
    return "\n\n".join(lines)


def decode_calls(parsed: Parsed) -> tuple[dict, Parsed]:
    """Validate a parsed CALLS list: ``(turn, parsed)`` with ``turn`` the keyword arguments of
    :meth:`~jaxcollab.envs.bomb.BombEnv.action` (``{}`` = wait).

    Schema violations are class ``invalid_action``, two calls of one kind (or act with wait)
    ``multiple_actions``, a position outside 1..7 ``out_of_bounds``; any of them voids the turn.
    Which role may make which call is *not* checked here: the environment judges that.
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
                turn |= {"speak_to": _role(c["to"]), "text": str(c["text"])}
            elif c["call"] == "gesture":
                syms = [_GLYPH_TO_NAME.get(s, s) for s in c["symbols"]]
                if any(s not in T.SYMBOL_IDS for s in syms):
                    return {}, parsed.with_errors("invalid_action")
                turn |= {"gesture_to": _role(c["to"]), "symbols": tuple(syms)}
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


def _role(name) -> int:
    name = str(name).lower()
    if name not in T.ROLE_NAMES:
        raise ValueError(name)
    return T.ROLE_NAMES.index(name)


#: What a refused agent is asked once in the same turn (GPTNT, "Guardrail violations": the
#: conversation continues with a request to rephrase).
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
        self.systems = [system_prompt(r, "none" if solo else hint, turn_order,
                                      int(env.variant.rounds), solo, tools)
                        for r in range(T.N_AGENTS)]
        self._noop = jax.tree.map(np.asarray, jax.device_get(env.noop()))

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
                continue  # refused exchanges leave the context (GPTNT, guardrail violations)
            messages += [{"role": "user", "content": h["seen"]},
                         {"role": "assistant", "content": clip(h["said"])}]
        messages.append({"role": "user", "content": user})
        req = Request(name, self.fit(ep, messages), nonce=f"{ep.index}:{step}",
                      tools=TOOLS if self.tools else ())
        (reply,) = yield [req]
        ep.history.setdefault(name, [])
        if reply.refused:  # GPTNT "guardrail violations": one "please rephrase" exchange
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
            parsed = parse_reply(reply.text, reply.finish_reason)
        turn, parsed = decode_calls(parsed)
        said = reply.text if not self.tools else (
            f"{reply.text or ''}<action>{json.dumps(parsed.action)}</action>")
        ep.history.setdefault(name, [])
        ep.record(name, step, req, reply, parsed, round=rnd, seen=user, said=said,
                  refused=reply.refused or bool(reply.failure))
        if not turn:
            return self._noop
        act = self.env.action(role, **turn)
        return jax.tree.map(np.asarray, jax.device_get(act))
