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
#: Soft classes counted but never told to the agent: GPTNT F.2 applies "fuzzy JSON recovery"
#: before any feedback, and "minor deviations that can be resolved automatically produce no error
#: signal at all".
SILENT = ("repaired_json",)
#: Structural unsalvageable classes: no single coherent action (GPTNT F.2).
STRUCTURAL = ("no_action", "multiple_actions", "unparseable", "truncated_unrecoverable")
#: Semantic unsalvageable classes: well-formed but not executable (GPTNT F.2: an SoM label absent
#: from the current view, a position out of bounds; ours: a call outside the schema).
SEMANTIC = ("invalid_action", "invalid_label", "out_of_bounds")
#: A provider's content-policy refusal (GPTNT appendix "Guardrail violations").
REFUSAL = "refusal"
#: The server refused the prompt as longer than the model's context (ours: the turn is a wait,
#: and later prompts of the episode are kept shorter).
CONTEXT = "context_length"
ERROR_CLASSES = (*SOFT, *STRUCTURAL, *SEMANTIC, REFUSAL, CONTEXT)

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
    "context_length": "the conversation had grown longer than the model's context",
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
                                                                   REFUSAL, CONTEXT}

    def with_errors(self, *classes: str) -> Parsed:
        """A copy with ``classes`` added (kept unique, in :data:`ERROR_CLASSES` order)."""
        errs = set(self.errors) | set(classes)
        return dataclasses.replace(self, errors=tuple(c for c in ERROR_CLASSES if c in errs))

    def note(self) -> str:
        """The one-line feedback for the agent's next turn ("" when there is nothing to say:
        no error, or only :data:`SILENT` repairs)."""
        told = [c for c in self.errors if c not in SILENT]
        if not told:
            return ""
        reasons = "; ".join(_REASONS[c] for c in told)
        if self.ok:
            return (f"Your previous response was carried out, but {reasons}. Replies have the "
                    f"form <thoughts>...</thoughts><action>...</action>.")
        return (f"The response you generated caused you to skip your previous turn ({reasons}). "
                f"Make sure to include one valid action in your response.")


#: How far back a reply is searched for embedded JSON (candidate openers, from the end): bounds
#: the work on a pathological reply (a 100,000-character run of brackets).
_MAX_CANDIDATES = 256
_DECODER = json.JSONDecoder()


def _clean(value):
    """``value`` with every string made encodable (a lone surrogate from a ``\\ud800`` escape
    becomes ``?``), so transcripts and the environment's UTF-8 encoding never fail on it."""
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, dict):
        return {_clean(str(k)): _clean(v) for k, v in value.items()}
    return value


def is_action_shaped(value) -> bool:
    """Whether ``value`` can be an action: a non-empty object or a non-empty list of objects.

    Every action of every family is one of these (bomb: a list of call objects; Keep Talking:
    ``{"result": …}``), so a bracketed word of the game's own rendering (``[unreadable]``,
    ``[blue]``, a set-of-marks ``[A]``) is never mistaken for one.
    """
    if isinstance(value, dict):
        return bool(value)
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _embedded(text: str):
    """The last action-shaped JSON value written inside ``text`` (the reply's final action, not
    an example quoted earlier), or ``None``. Only well-formed JSON counts here."""
    starts = [m.start() for m in re.finditer(r"\{|\[\s*\{", text)][-_MAX_CANDIDATES:]
    found, end = None, -1
    for i in starts:
        if i < end:  # inside a value already found: its outermost value is the action
            continue
        try:
            value, stop = _DECODER.raw_decode(text, i)
        except (ValueError, RecursionError):
            continue
        if is_action_shaped(value):
            found, end = value, stop
    return found


def _repaired(text: str):
    """``json_repair``'s reading of ``text`` from its first object opener, if action-shaped."""
    m = re.search(r"\[\s*\{|\{", text)
    if m is None:
        return None
    try:
        value = json_repair.repair_json(text[m.start():], return_objects=True)
    except Exception:  # noqa: BLE001  (a third-party repairer must not end the run)
        return None
    return value if is_action_shaped(value) else None


def _loads(text: str, loose: bool = False) -> tuple[object | None, bool]:
    """JSON from ``text`` (code fences removed): ``(value, repaired)``; ``None`` if unreadable.

    Tried in order: the whole text as JSON; the last well-formed action-shaped JSON inside it;
    ``json_repair`` from the first object opener (a truncated or slightly broken action).
    ``loose`` (text outside any ``<action>`` tag) accepts only action-shaped values.
    """
    fenced = _FENCE.findall(text)
    text = (fenced[-1] if fenced else text).strip()
    if not text:
        return None, False
    try:
        value = json.loads(text)
        if not loose or is_action_shaped(value):
            return _clean(value), False
    except (ValueError, RecursionError):
        pass
    value = _embedded(text)
    if value is not None:
        return _clean(value), not loose
    value = _repaired(text)
    return (None, False) if value is None else (_clean(value), True)


def parse_reply(text: str, finish_reason: str = "stop") -> Parsed:
    """Parse one reply into its action JSON, thoughts and error classes.

    Args:
        text: the reply text.
        finish_reason: the API's finish reason; ``"length"`` marks a token-budget cut.

    Returns:
        a :class:`Parsed`; never raises on any input string.
    """
    text = text if isinstance(text, str) else "" if text is None else str(text)
    errors: list[str] = []
    thoughts_m = _THOUGHTS.search(text)
    thoughts = thoughts_m.group(1).strip() if thoughts_m else ""
    if not thoughts_m:
        errors.append("malformed_xml" if re.search(r"<thoughts?>", text, re.I) else
                      "missing_thoughts")
    blocks = list(_ACTION.finditer(text))
    # a block without any JSON object is the format's placeholder quoted back (``[CALLS]``,
    # ``JSON``), not a second action
    blocks = [m for m in blocks if "{" in m.group(1)] or blocks
    if len(blocks) > 1:
        return Parsed(None, thoughts).with_errors(*errors, "multiple_actions")
    loose = not blocks
    if blocks:
        m = blocks[0]
        payload = m.group(1)
        if re.sub(r"</thoughts?>", "", text[m.end():], flags=re.I).strip():
            errors.append("content_after_action")
        if thoughts_m and m.start() < thoughts_m.end():
            errors.append("action_before_thoughts")
    else:
        opened = _OPEN_ACTION.search(text)
        loose = opened is None
        payload = text[opened.end():] if opened else (
            text[thoughts_m.end():] if thoughts_m else text)
        if opened and payload.strip():
            errors.append("malformed_xml")
    value, repaired = _loads(payload, loose=loose)
    truncated = finish_reason == "length"
    if value is None:
        if truncated:
            cls = "truncated_unrecoverable"
        else:
            cls = "unparseable" if payload.strip() and not loose else "no_action"
        return Parsed(None, thoughts).with_errors(*errors, cls)
    if loose:
        errors.append("malformed_xml")  # salvaged from outside any <action> tag
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
    text = text if isinstance(text, str) else ""
    if not tool_calls or not isinstance(tool_calls, list | tuple):
        return parse_reply(text)
    calls, repaired = [], False
    for tc in tool_calls:
        fn = tc.get("function") if isinstance(tc, dict) else None
        name = fn.get("name") if isinstance(fn, dict) else None
        if not isinstance(name, str):
            return Parsed(None, text.strip()).with_errors("invalid_action")
        raw = fn.get("arguments")
        if isinstance(raw, dict):  # some servers send the arguments already decoded
            args, fixed = _clean(raw), False
        elif raw is None or (isinstance(raw, str) and raw.strip() in ("", "{}")):
            args, fixed = {}, False
        else:
            args, fixed = _loads(str(raw))
        if not isinstance(args, dict):
            return Parsed(None, text.strip()).with_errors("unparseable")
        repaired |= fixed
        calls.append({"call": _clean(name), **{k: v for k, v in args.items() if k != "call"}})
    parsed = Parsed(calls, text.strip())
    return parsed.with_errors("repaired_json") if repaired else parsed
