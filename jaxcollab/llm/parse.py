"""Reply parser: ``<thoughts>…</thoughts><action>JSON</action>`` with salvage and error classes.

The format and the error taxonomy follow GPTNT (appendix F.1 "XML-delimited ReAct", F.2 "Handling
Parser Errors"). Salvage comes first: a missing or unclosed tag, fenced or loose JSON, and broken
JSON (repaired with the ``json_repair`` library) still yield an action, with a *soft* class
recorded and reported on the agent's next turn. When nothing can be recovered the class is
*unsalvageable*: the turn becomes a wait / no-op and the next prompt carries a one-line,
past-tense note (GPTNT F.2: descriptive rather than directive feedback). ``<thought>`` is accepted
as well as ``<thoughts>`` (GPTNT's released code uses the singular).
"""

from __future__ import annotations

import dataclasses
import json
import re

import json_repair

#: Soft classes: the action was recovered and carried out (GPTNT F.2 "soft warnings").
SOFT = ("missing_thoughts", "action_before_thoughts", "content_after_action", "malformed_xml",
        "repaired_json", "truncated")
#: Structural unsalvageable classes: no single coherent action (GPTNT F.2).
STRUCTURAL = ("no_action", "multiple_actions", "unparseable", "truncated_unrecoverable")
#: Semantic unsalvageable classes: well-formed but not executable (GPTNT F.2: an SoM label absent
#: from the current view, a position out of bounds; ours: a call outside the schema).
SEMANTIC = ("invalid_action", "invalid_label", "out_of_bounds")
#: A provider's content-policy refusal (GPTNT appendix "Guardrail violations").
REFUSAL = "refusal"
ERROR_CLASSES = (*SOFT, *STRUCTURAL, *SEMANTIC, REFUSAL)

_REASONS = {
    "missing_thoughts": "it had no <thoughts> block",
    "action_before_thoughts": "the action appeared before </thoughts>",
    "content_after_action": "there was text after </action>",
    "malformed_xml": "its <thoughts>/<action> tags were malformed",
    "repaired_json": "its action JSON was malformed and had to be repaired",
    "truncated": "it was cut off at the token limit",
    "no_action": "it contained no action",
    "multiple_actions": "it contained more than one action",
    "unparseable": "its action could not be read as JSON",
    "truncated_unrecoverable": "it was cut off at the token limit before a complete action",
    "invalid_action": "its action did not follow the action schema",
    "invalid_label": "its action named a label that was not in view",
    "out_of_bounds": "its action named a position that does not exist",
    "refusal": "the request was refused by the provider",
}

_THOUGHTS = re.compile(r"<thoughts?>(.*?)</thoughts?>", re.S | re.I)
_ACTION = re.compile(r"<action>(.*?)</action>", re.S | re.I)
_OPEN_ACTION = re.compile(r"<action>", re.I)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S | re.I)


@dataclasses.dataclass(frozen=True)
class Parsed:
    """A parsed reply.

    Attributes:
        action: the decoded action JSON (a list or dict), ``None`` when unsalvageable.
        thoughts: the ``<thoughts>`` text ("" if absent).
        errors: error classes found, in :data:`ERROR_CLASSES` order.
    """

    action: object | None
    thoughts: str = ""
    errors: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """Whether an action is carried out (no unsalvageable class)."""
        return self.action is not None and not set(self.errors) & {*STRUCTURAL, *SEMANTIC,
                                                                   REFUSAL}

    def with_errors(self, *classes: str) -> Parsed:
        """A copy with ``classes`` added (kept unique, in :data:`ERROR_CLASSES` order)."""
        errs = set(self.errors) | set(classes)
        return dataclasses.replace(self, errors=tuple(c for c in ERROR_CLASSES if c in errs))

    def note(self) -> str:
        """The one-line feedback for the agent's next turn ("" when there is nothing to say)."""
        if not self.errors:
            return ""
        reasons = "; ".join(_REASONS[c] for c in self.errors)
        if self.ok:
            return (f"Your previous response was carried out, but {reasons}. Replies have the "
                    f"form <thoughts>...</thoughts><action>...</action>.")
        return (f"The response you generated caused you to skip your previous turn ({reasons}). "
                f"Make sure to include one valid action in your response.")


def _loads(text: str) -> tuple[object | None, bool]:
    """JSON from ``text`` (code fences removed): ``(value, repaired)``; ``None`` if unreadable."""
    fenced = _FENCE.search(text)
    text = (fenced.group(1) if fenced else text).strip()
    if not text:
        return None, False
    try:
        return json.loads(text), False
    except json.JSONDecodeError:
        pass
    value = json_repair.repair_json(text, return_objects=True)
    return (value, True) if isinstance(value, (list, dict)) and value else (None, False)


def _loose_json(text: str) -> str:
    """The span from the first ``[`` or ``{`` to the last matching closer (or the end)."""
    starts = [i for i in (text.find("["), text.find("{")) if i >= 0]
    if not starts:
        return ""
    start = min(starts)
    end = text.rfind("]" if text[start] == "[" else "}")
    return text[start: end + 1 if end > start else len(text)]


def parse_reply(text: str, finish_reason: str = "stop") -> Parsed:
    """Parse one reply into its action JSON, thoughts and error classes.

    Args:
        text: the reply text.
        finish_reason: the API's finish reason; ``"length"`` marks a token-budget cut.

    Returns:
        a :class:`Parsed`; never raises on any input string.
    """
    errors: list[str] = []
    thoughts_m = _THOUGHTS.search(text)
    thoughts = thoughts_m.group(1).strip() if thoughts_m else ""
    if not thoughts_m:
        errors.append("malformed_xml" if re.search(r"<thoughts?>", text, re.I) else
                      "missing_thoughts")
    blocks = _ACTION.findall(text)
    if len(blocks) > 1:
        return Parsed(None, thoughts).with_errors(*errors, "multiple_actions")
    if blocks:
        m = _ACTION.search(text)
        payload = blocks[0]
        if re.sub(r"</thoughts?>", "", text[m.end():], flags=re.I).strip():
            errors.append("content_after_action")
        if thoughts_m and m.start() < thoughts_m.end():
            errors.append("action_before_thoughts")
    else:
        opened = _OPEN_ACTION.search(text)
        rest = text[thoughts_m.end():] if thoughts_m else text
        fenced = _FENCE.search(rest)
        payload = (text[opened.end():] if opened else
                   fenced.group(1) if fenced else _loose_json(rest))
        if payload.strip():
            errors.append("malformed_xml")
    value, repaired = _loads(payload)
    truncated = finish_reason == "length"
    if value is None:
        if truncated:
            cls = "truncated_unrecoverable"
        else:
            cls = "unparseable" if payload.strip() else "no_action"
        return Parsed(None, thoughts).with_errors(*errors, cls)
    if repaired:
        errors.append("repaired_json")
    if truncated:
        errors.append("truncated")
    return Parsed(value, thoughts).with_errors(*errors)


def parse_tool_calls(tool_calls, text: str = "") -> Parsed:
    """Parse native OpenAI tool calls into a list of ``{"call": name, **arguments}``.

    Used with ``llm.tools=native`` (the same calls offered as tool definitions). Arguments that
    are not valid JSON are repaired; a reply without tool calls falls back to
    :func:`parse_reply` on ``text``.
    """
    if not tool_calls:
        return parse_reply(text)
    calls, repaired = [], False
    for tc in tool_calls:
        fn = tc.get("function") or {}
        args, fixed = _loads(fn.get("arguments") or "{}")
        if not isinstance(args, dict):
            args = {} if (fn.get("arguments") or "{}").strip() in ("", "{}") else None
        if args is None:
            return Parsed(None, text).with_errors("unparseable")
        repaired |= fixed
        calls.append({"call": fn.get("name", ""), **args})
    parsed = Parsed(calls, text.strip())
    return parsed.with_errors("repaired_json") if repaired else parsed
