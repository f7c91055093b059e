"""SANZARU's failure modes (Table 5) and judged perspective flags (Table 6) as a judge
:class:`~jaxcollab.analysis.judge.Rubric`, its protocol families (Figs. 7-12) as a second
rubric (:data:`PROTOCOL_RUBRIC`), and a bomb episode's transcript in compact form.

The rubric text is ours, written from the paper's definitions ("SaveSanzaru: Benchmarking
Protocol Formation under Epistemic & Communication Asymmetry", Table 5: one failure mode per
lost episode, grouped by the stage that broke, with the ending each can have; Table 6:
``assumed_meaning`` and ``ungrounded_ref``, the two perspective failures a judge must read the
messages for). The paper's text of Table 5 that we hold lists six modes in two stages
(communication: no shared code, misalignment, omission, slow protocol; reasoning: wrong answer,
wrong round); its caption and Fig. 13 count eight modes in three stages. The third stage,
``action`` (the answer reached the actor, who acted otherwise, or never acted), and its two
modes are our reconstruction, marked so in :data:`RUBRIC`'s source.

The protocol families are the six of the paper's Figs. 7-12 (one bit, one symbol per wire,
counting, Morse code, letter grid, the whole table at once), their definitions ours from the
figures' captions, and ``none`` (Mute never gestured) as our rules
(:mod:`jaxcollab.agents.bomb.protocols`) have it; the judge gets them for the episodes those
rules leave ``undetermined``.
"""

from __future__ import annotations

import json

from jaxcollab.analysis.judge import Mode, Rubric

WRONG, TIMED_OUT = "wrong_action", "timed_out"
BOTH = (WRONG, TIMED_OUT)

MODES = (
    Mode("no_shared_code", "communication", "No shared code",
         "Nobody ever gave the symbols of a channel a meaning the others took up, so nothing "
         "could carry the answer even once someone held it.", BOTH),
    Mode("misalignment", "communication", "Misalignment",
         "A code existed, and a message still arrived meaning something other than what its "
         "sender meant (the receiver decoded it differently).", BOTH),
    Mode("omission", "communication", "Omission",
         "An agent told the fact to a teammate who did not need it and never to the one who "
         "did, or left a teammate on an old state after the bomb changed.", BOTH),
    Mode("slow_protocol", "communication", "Slow protocol",
         "Every channel worked, but the protocol spent more rounds per answer than the bomb "
         "allowed.", (TIMED_OUT,)),
    Mode("wrong_answer", "reasoning", "Wrong answer",
         "The teammate holding the manual had the facts and named the wrong wire or key.",
         (WRONG,)),
    Mode("wrong_round", "reasoning", "Wrong round",
         "The answer was right for the round it was worked out in and wrong for the round the "
         "cut or press landed in.", (WRONG,)),
    Mode("wrong_execution", "action", "Wrong execution",
         "The actor received the right answer in a form it understood and acted on another "
         "part (another position, a decoy, an extra cut).", (WRONG,)),
    Mode("no_action", "action", "No action",
         "The right answer reached the actor, who did not act on it before the rounds ran out "
         "(kept waiting or asking).", (TIMED_OUT,)),
)

JUDGED_FLAGS = {
    "assumed_meaning": "some agent acted on a guessed reading of a teammate's symbol or "
                       "message, or passed the guess on as fact (proposing a code and waiting "
                       "for agreement is not this).",
    "ungrounded_ref": "some agent treated a teammate as able to perceive or do what it cannot "
                      "(named a colour to Blind, asked Mute to read the rule aloud, waited for "
                      "a reply Mute cannot send, spoke to Deaf).",
}

TASK = (
    "You code why a three-agent bomb-defusal team lost an episode (SANZARU). Deaf sees the "
    "board (light, display, wire colours) but cannot hear; Mute holds the manual, never sees "
    "the board, and can only gesture; Blind feels the board (positions, plate glyph; colours "
    "unreadable), receives gestures as blanks, and alone can cut or press. Speech to Deaf "
    "bounces. Each round every agent takes one turn. You get the episode's transcript: for each "
    "turn, what that agent newly saw, its private thoughts and the calls it made.")

THOUGHT_CHARS = 400  # private reasoning shown per turn


def _calls(action) -> str:
    if not isinstance(action, list):
        return json.dumps(action)
    return "; ".join(" ".join(f"{k}={json.dumps(v, ensure_ascii=False)}"
                              for k, v in c.items()) if isinstance(c, dict) else str(c)
                     for c in action) or "nothing"


def _thoughts(reply: str) -> str:
    start, end = reply.find("<thoughts>"), reply.find("</thoughts>")
    text = reply[start + 10:end] if 0 <= start < end else ""
    text = " ".join(text.split())
    return text[:THOUGHT_CHARS] + ("…" if len(text) > THOUGHT_CHARS else "")


def render(record: dict, entry: dict) -> str:
    """One bomb episode's transcript in compact form: a header (variant, turn order, ending,
    rounds), then per turn in step order the agent, the lines of its view that changed since
    its previous turn (its first turn in full), its thoughts (at most :data:`THOUGHT_CHARS`
    characters), its calls, and its parse errors."""
    env = entry["env"] if "env" in entry else record["env"]
    head = (f"Variant {env}, turn order {entry.get('turn_order')}, "
            f"ended: {record['ending']} after {entry.get('rounds', '?')} rounds.")
    lines, last = [head, ""], {}
    turns = sorted(((int(t["step"]), name, t) for name, ts in record["agents"].items()
                    for t in ts), key=lambda x: x[0])
    for step, name, t in turns:
        seen = [x for x in str(t.get("seen", "")).splitlines() if x.strip()]
        before = last.get(name, set())
        new = [x for x in seen if x not in before]
        last[name] = set(seen)
        lines.append(f"[step {step}] {name.upper()}")
        lines += [f"  sees {x}" for x in new]
        if thought := _thoughts(str(t.get("reply", ""))):
            lines.append(f"  thinks {thought}")
        lines.append(f"  calls {_calls(t.get('action'))}")
        if t.get("errors"):
            lines.append(f"  errors {', '.join(t['errors'])}")
    return "\n".join(lines)


RUBRIC = Rubric(
    source="SANZARU Table 5 (modes, stages communication and reasoning) and Table 6 "
           "(assumed_meaning, ungrounded_ref); rubric wording ours; stage 'action' ours",
    task=TASK, modes=MODES, flags=JUDGED_FLAGS, render=render,
    checks=(("wrong_round", "mode:wrong_round"), ("omission", "mode:omission"),
            ("dead_channel", "flag:ungrounded_ref")),
)

#: SANZARU Figs. 7-12, in figure order, then ``none``: code (as
#: :data:`jaxcollab.agents.bomb.protocols.FAMILIES`) → printed name and definition
FAMILY_DEFINITIONS = {
    "one_bit": ("One bit", "Mute answers one yes/no question per round with a single gesture "
                "from two symbols (Fig. 7)."),
    "symbol_per_wire": ("Symbol per wire", "A symbol stands for one value (a wire position, a "
                        "colour): the team assigns symbols to values and Mute returns the "
                        "answer as one symbol per value (Fig. 8)."),
    "counting": ("Counting", "A value is the number of marks in a run (blanks, claps), so the "
                 "receiver needs only how many, not which symbols (Fig. 9)."),
    "morse": ("Morse code", "Two marks (dots and dashes) in groups split by a separator spell "
              "letters or digits in Morse code (Fig. 10)."),
    "letter_grid": ("Letter grid", "Each letter is a row-column pair of counts from 1 to 5 (I "
                    "and J sharing one cell), so long messages spell words (Fig. 11)."),
    "whole_table": ("Whole table", "Mute sends the manual's whole table (every row) at once, "
                    "before or without anyone asking for one answer, and the others decode the "
                    "answer from it (Fig. 12)."),
    "none": ("None", "No protocol: Mute never gestured anything meaningful, or the gestures "
             "follow no code that carries a value."),
}
FAMILY_MODES = tuple(Mode(code, "", name, text)
                     for code, (name, text) in FAMILY_DEFINITIONS.items())

PROTOCOL_TASK = (
    "You read how a three-agent bomb-defusal team (SANZARU) communicated in one episode and "
    "name the protocol that carried the answer. Deaf sees the board but cannot hear; Mute "
    "holds the manual, never sees the board, and can only gesture (symbol names such as "
    "clap, fist, thumbs_up); Blind feels the board, receives gestures as blanks, and alone "
    "can cut or press. Mute's gestures are the code that carries the manual's answer. You get "
    "the episode's transcript: per turn the agent and the calls it made (speech, gestures "
    "with their symbols, actions), with its view and thoughts where they were recorded.")

PROTOCOL_RUBRIC = Rubric(
    source="SANZARU Figs. 7-12 (protocol families); definitions ours from the captions; "
           "'none' ours",
    task=PROTOCOL_TASK, modes=FAMILY_MODES, flags={}, render=render,
    heading="Protocol families (choose exactly one, the code Mute's gestures follow):",
    key="family",
)

__all__ = ["FAMILY_DEFINITIONS", "FAMILY_MODES", "JUDGED_FLAGS", "MODES", "PROTOCOL_RUBRIC",
           "RUBRIC", "render"]
