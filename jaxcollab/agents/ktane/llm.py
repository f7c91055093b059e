"""Keep Talking (GPTNT) for LLM teams: Defuser and Expert prompts, action schema, sync/async play.

GPTNT appendices: the Defuser sees the bomb, the Expert gets the manual and never the bomb. Both
answer ``<thoughts>…</thoughts><action>{"result": {"kind": "do_nothing" | "send_message" |
"interact_game", "data": {…}}}</action>`` (GPTNT E, F.1). Messages travel through per-player
queues, each message stamped with the game time it was dispatched and delivered, all together, at
the start of the recipient's next decision cycle after that time (GPTNT C.1.2, C.4.2).

Views (``ktane.view``):

* ``gptnt`` (the default for LLM play): GPTNT's Defuser channel
  (:mod:`jaxcollab.envs.ktane.channel`: no outcome field, no partner phrase, the Morse light and
  Simon's buttons as 16 timed frames, the Maze as a grid, set-of-marks letters ``[A]``, …). Each
  Defuser prompt holds its current view and, in the previous turn, that turn's view as one
  unlabelled frame; older turns keep their messages and feedback but not their view
  (:data:`OMITTED`; GPTNT App. D.4). Messages reach the partner only through the queue. A
  six-part system prompt (GPTNT App. T: scenario, role, reasoning, game mechanics, action
  commands, requirements) and the manual in the Expert's first message, kept when older turns
  are dropped for the context (GPTNT App. D.5).
* ``full``: the environment's text of the observation row (what scripted teams read: the
  ``last strike|ok|…`` field, the partner's last phrase of vocabulary words), the earlier
  short system prompts with the manual in the Expert's system prompt.

In both views the environment also gets each message as the phrase of its first
``MESSAGE_WORDS`` vocabulary words (:func:`message_phrase`: it counts messages; only the
``full`` view shows the phrase).

Modes (GPTNT C.4.2–C.4.3): ``sync`` — players alternate and game time advances Δ = 3 s after each
Defuser cycle (the environment's own turn cost); Expert cycles are free. ``async`` — the two
loops run in simulated continuous game time, and each reply takes its measured latency ``L``
(in centiseconds, the environment's unit; replayed from the cache on reruns), so slow models
lose time. The Expert's loop starts a cycle, flushes its queue, dispatches its message ``L``
seconds later and starts its next cycle :data:`POLL_S` after that (GPTNT C.4.2's 0.5 s sleep),
so during a 10 s Defuser reply a 1 s Expert takes seven turns, and its messages reach the
Defuser's queue only at their dispatch time. The Defuser's loop does the same on the bomb's own
clock: a cycle starting at game time ``t`` is a wait of ``L`` in the environment (a timed
action, :class:`~jaxcollab.envs.ktane.rules.TimedAction`: the timer runs, the flashing lights
move on, the bomb may time out while it thinks), then its action lands at ``t + L`` and
:data:`POLL_S` passes; its next cycle starts at ``t + L + POLL_S`` (a reply with ``L`` = 0 is
one step: the action, then the sleep). The Expert's cycles that start during a Defuser step
are played on the Expert step after it. Simon Says' loop follows the Defuser's actions where
they land (:func:`~jaxcollab.envs.ktane.channel.simon_schedule`: at once after a zoom, 5 s
after a press, 1 s after a completed stage; GPTNT App. C.2.3).

Solo ablations (``ktane.solo``, GPTNT §10): ``with_manual`` — one agent holds the Defuser's
view and the manual (in its first message); ``no_manual`` — the bomb only, so it can only play
from what it remembers of the game. No partner, no messages (``send_message`` is an
``invalid_action``); the Expert's turns are no-ops that send nothing.

With ``ktane.reflection=true`` (off by default), each player is asked at the end for a
reflection on the game (ours, not GPTNT's). A parser note is prepended to the player's next
turn as ``<execution-feedback>`` (GPTNT F.2). ``ktane.glyphs`` and ``ktane.hud`` put back two
perceptual difficulties (:mod:`~jaxcollab.agents.ktane.perception`).

The host counts every message queued (``messages_sent``) and each Defuser decision
cycle, for the results' ``messages_per_defuser_cycle`` (the environment records at most one
message per step).

The prompt texts are ours: GPTNT names the six parts of its system prompts and what each holds
(App. T) but its copy does not print them, so the wording here is the project's own.
"""

from __future__ import annotations

import math
import re

import jax
import numpy as np

from jaxcollab.agents.ktane.perception import (
    GLYPHS,
    HUDS,
    describe_manual,
    describe_view,
    glyph_words,
    gptnt_hud,
)
from jaxcollab.envs.ktane import tables as KT
from jaxcollab.envs.ktane import vocab as V
from jaxcollab.envs.ktane.channel import FRAME_S, FRAMES, defuser_text, simon_schedule
from jaxcollab.envs.ktane.mission import DEFUSER, EXPERT, ROLE_NAMES
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
from jaxcollab.envs.ktane.rules import TimedAction, timed_action
from jaxcollab.envs.ktane.ruleset import Ruleset, vanilla_ruleset
from jaxcollab.llm.bridge import Episode, Game, Turn, clip
from jaxcollab.llm.client import Request
from jaxcollab.llm.parse import Parsed, parse_reply

MODES = ("sync", "async")
VIEWS = ("gptnt", "full")
SOLO = ("with_manual", "no_manual")
#: Seconds a player's async loop sleeps between decision cycles (GPTNT C.4.2).
POLL_S = 0.5
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
#: What heads the previous turn's view in the Defuser's history (``gptnt``: one unlabelled frame).
PREVIOUS = "(Your previous view of the bomb, without labels.)"
#: What heads the manual in the first message of the Expert (or of a solo player with it).
MANUAL_HEADER = "The bomb defusal manual:"
_DO_NOTHING = '{"result": {"kind": "do_nothing", "data": {}}}'
_SEND = '{"result": {"kind": "send_message", "data": {"message": "free text to your partner"}}}'
_SCHEMA = ("Reply format: <thoughts>free text</thoughts><action>JSON</action> with exactly one "
           "action, one of:\n" + _DO_NOTHING + "\n" + _SEND)
_INTERACT_DOC = (
    '{"result": {"kind": "interact_game", "data": {"action": "ACTION", "location": "A"}}}\n'
    "ACTION is select (zoom into the module labelled LOCATION), zoom_out, rotate_up, "
    "rotate_down, rotate_left, rotate_right, flip (navigation, no location), or press, cut, "
    "hold, release (on the element labelled LOCATION of the module you are zoomed into). "
    "Locations are the set-of-marks letters shown in brackets in your current view.")


def marks(text: str) -> str:
    """The Defuser's text with label tokens ``[k]`` shown as set-of-marks letters (GPTNT D.2)."""
    return _LABEL.sub(lambda m: f"[{chr(64 + int(m.group(1)))}]", text)


def _check(mode: str, view: str, solo: str | None, glyphs: str = GLYPHS[0],
           hud: str = HUDS[0]) -> None:
    if glyphs not in GLYPHS:
        raise ValueError(f"unknown ktane glyphs {glyphs!r}; valid: {', '.join(GLYPHS)}")
    if hud not in HUDS:
        raise ValueError(f"unknown ktane hud {hud!r}; valid: {', '.join(HUDS)}")
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; valid: {', '.join(MODES)}")
    if view not in VIEWS:
        raise ValueError(f"unknown ktane view {view!r}; valid: {', '.join(VIEWS)}")
    if solo is not None and solo not in SOLO:
        raise ValueError(f"unknown ktane solo {solo!r}; valid: null, {', '.join(SOLO)}")


def system_prompt(role: int, mode: str, rules: Ruleset | None = None, *, view: str = "gptnt",
                  solo: str | None = None) -> str:
    """The system prompt of the Defuser (0) or the Expert (1) in ``mode``; ``solo`` (a
    :data:`SOLO` name) gives the single player's, which holds the Defuser's role.

    ``view=gptnt`` or any ``solo``: GPTNT's six parts (:func:`gptnt_system_prompt`; the manual
    comes in the first message). ``view=full`` (two players): the short prompts, the Expert's
    ending with the manual of ``rules`` (default: vanilla).

    Raises:
        ValueError: unknown mode, view or solo setting.
    """
    _check(mode, view, solo)
    if view == "gptnt" or solo is not None:
        return gptnt_system_prompt(role, mode, solo)
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


def gptnt_system_prompt(role: int, mode: str, solo: str | None = None) -> str:
    """GPTNT's six-part system prompt (App. T: scenario, role description, reasoning, game
    mechanics, action commands, requirements), each a ``# Heading`` section, for the Defuser
    (0), the Expert (1) or a ``solo`` player (:data:`SOLO`; Defuser role). Our wording: the
    paper lists each part's content but does not print the text.

    Raises:
        ValueError: unknown mode or solo setting, or an Expert with ``solo``.
    """
    _check(mode, "gptnt", solo)
    if solo is not None and role != DEFUSER:
        raise ValueError("a solo player holds the Defuser's role (role 0)")
    expert, pair = role == EXPERT, solo is None
    manual = solo != "no_manual"
    sections = {
        "Scenario": (
            "You are playing Keep Talking and Nobody Explodes, a cooperative game for two "
            "players: the Defuser is alone with a bomb that has a countdown timer, and the "
            "Expert, who cannot see the bomb, holds the bomb defusal manual. The bomb has one or "
            "more modules; the team wins when every module is defused before the timer runs "
            "out and before the third strike. Your partner is another AI model; you talk only "
            "through text messages." if pair else
            "You are playing a single-player version of Keep Talking and Nobody Explodes: you "
            "are alone with a bomb that has a countdown timer. The bomb has one or more "
            "modules; you win when every module is defused before the timer runs out and "
            "before the third strike. There is no partner to talk to."),
        "Role": (
            "You are the Expert. You have the bomb defusal manual but you cannot see the bomb or "
            "touch it. The Defuser describes the bomb to you; ask for the details you need, find "
            "the rules that apply in the manual and tell the Defuser exactly what to do. The "
            "manual is in the first message of this conversation. That message reaches you as "
            "if it came from the Defuser, but the Defuser cannot see or read the manual: only "
            "you can." if expert else
            "You are the Defuser. You see the bomb and you are the only one who can act on it, "
            "but you do not have the manual. The Expert has the manual but cannot see the bomb: "
            "describe what you see accurately and completely, answer the Expert's questions and "
            "carry out its instructions." if pair else
            "You see the bomb and act on it yourself. The bomb defusal manual is in the first "
            "message of this conversation; use it to work out what to do." if manual else
            "You see the bomb and act on it yourself. You have no manual: work out what to do "
            "from what you see."),
        "Reasoning": (
            "Before every action, think inside <thoughts>…</thoughts>: what you know now, what "
            "has changed since your previous turn, and what to do next. "
            + ("The game is paused while you think, so thinking costs no game time, but keep "
               "your thoughts to the point." if mode == "sync" else
               "The game clock keeps running while you think: every word you generate costs "
               "game time, so think briefly and act.")),
        "Game mechanics": _mechanics(expert, pair, mode),
        "Action commands": (
            _SCHEMA + ("" if expert else "\n" + _INTERACT_DOC) if pair else
            "Reply format: <thoughts>free text</thoughts><action>JSON</action> with exactly one "
            "action, one of:\n" + _DO_NOTHING + "\n" + _INTERACT_DOC),
        "Requirements": "\n".join(_requirements(expert, pair, manual)),
    }
    return "\n\n".join(f"# {title}\n{body}" for title, body in sections.items())


def _mechanics(expert: bool, pair: bool, mode: str) -> str:
    """The game-mechanics part of :func:`gptnt_system_prompt`."""
    if not pair:
        clock = ("Time: the game is paused while you think. Each of your turns, whatever you do, "
                 "takes 3 seconds of game time." if mode == "sync" else
                 "Time: the game clock runs continuously, also while you think: the longer a "
                 "reply takes, the more game time passes.")
    else:
        clock = ("Time: the game is paused while either player thinks. Each of the Defuser's "
                 "turns, whatever it does, takes 3 seconds of game time; the Expert's turns "
                 "take none." if mode == "sync" else
                 "Time: the game clock runs continuously, also while the players think, and "
                 "both players act at the same time: the longer a reply takes, the more game "
                 "time passes.")
    clock += " After each strike the timer runs faster."
    queue = ("Messages: each message you send is delivered at the start of your partner's next "
             "turn after you send it; several messages may arrive together.")
    if expert:
        return "\n".join([clock, queue])
    seeing = [
        "What you see: each turn you get the current view of the bomb as text: the timer, "
        "the strike counter, the face of the bomb you are looking at (front, back, or one of "
        "the four sides, where the serial number, batteries, indicators and ports are), "
        "whether you are zoomed into a module, and each module with its status light (solved "
        "or unsolved). Zoomed into a module, you see its parts. Your previous turn shows the "
        "view you had then, as one frame without labels.",
        "You are never told what your actions did: compare the current view with the previous "
        "one (the strike counter, the status lights, the module itself) to find out.",
        "Flashing lights (Morse Code, Simon Says) are shown as 16 frames taken 0.25 seconds "
        "apart, oldest first; if a window misses part of a sequence, do nothing and look again "
        "on your next turn. The Maze is drawn as a 6 x 6 grid.",
        "Interacting: interactable elements are labelled with letters in brackets, e.g. [A]. "
        "A label is valid only in the view in which it is shown.",
    ]
    return "\n".join([clock, *([queue] if pair else []), *seeing])


def _requirements(expert: bool, pair: bool, manual: bool) -> list[str]:
    """The requirements part of :func:`gptnt_system_prompt`, one line each."""
    sources = ("the manual and the Defuser's messages" if expert else
               "your observations and the Expert's messages" if pair else
               "your observations and the manual")
    # no manual: GPTNT §10.2 measures play "solely by relying on their parametric knowledge",
    # so that prompt must not forbid it
    rely = (f"- Rely only on the information provided to you in this conversation ({sources}),"
            " not on anything you may remember about the game." if expert or pair or manual else
            "- There is no manual: use your observations and anything you know about the game.")
    lines = ["- Reply with exactly one action per turn, in the format above.", rely]
    if not expert:
        lines += ["- Use only labels shown in your current view.",
                  "- Do nothing when waiting is right (e.g. watching a light, or holding a "
                  "button until the timer shows the right digit)."]
    if pair:
        lines += ["- Messages are free text to your partner: be precise and complete, and say "
                  "when you are unsure.",
                  "- Your partner's messages may be mistaken: check them against what you know."]
    lines.append("- Keep guiding the Defuser until every module is defused." if expert else
                 "- Keep going until every module is defused; the game ends by itself.")
    return lines


def decode_action(parsed: Parsed, role: int, view: str, messaging: bool = True,
                  ) -> tuple[tuple[int, int, str], Parsed]:
    """``((verb, target, message), parsed)`` from a parsed ``{"result": …}`` action.

    Classes: schema violations ``invalid_action``; a location letter that is not a mark in the
    current ``view`` ``invalid_label`` (GPTNT F.2 semantic failure); an Expert trying to
    interact with the game, or a message when ``messaging`` is off (a solo player),
    ``invalid_action``. Any of them makes the turn a wait.
    """
    wait = (WAIT, 0, "")
    if not parsed.ok:
        return wait, parsed
    try:
        result = parsed.action["result"]
        kind, data = result["kind"], result.get("data") or {}
        if kind == "do_nothing":
            return wait, parsed
        if kind == "send_message" and messaging:
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


def async_max_steps(env) -> int:
    """A bound on the steps of an async episode on ``env`` (its default time limit): each
    Defuser cycle takes at least :data:`POLL_S` of bomb time and at most four steps
    (:meth:`KtaneGame.max_steps`)."""
    return 4 * math.ceil(env.mission.time_limit_s / POLL_S) + 2


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
            vanilla); the manual is written from it. Play with ``env.ruleset_params(rules)``
            so the bomb follows the same rules.
        view: ``gptnt`` or ``full`` (module docstring).
        solo: None (Defuser and Expert), ``with_manual`` or ``no_manual`` (one player).
        glyphs: ``names`` (keypad glyphs under the manual's names) or ``described`` (each
            role its own verbal description, :mod:`~jaxcollab.agents.ktane.perception`).
        hud: ``always`` (timer and strikes in every view) or ``gptnt`` (only on the timer's
            face, not zoomed in: :func:`~jaxcollab.agents.ktane.perception.gptnt_hud`).

    Raises:
        ValueError: unknown mode, view, solo, glyphs or hud setting.
    """

    roles = ROLE_NAMES

    def __init__(self, env, mode: str = "sync", reflection: bool = False,
                 rules: Ruleset | None = None, view: str = "gptnt", solo: str | None = None,
                 glyphs: str = "names", hud: str = "always"):
        _check(mode, view, solo, glyphs, hud)
        self.env, self.mode, self.reflection = env, mode, bool(reflection)
        self.view, self.solo, self.glyphs, self.hud = view, solo, glyphs, hud
        self.rules = vanilla_ruleset() if rules is None else rules
        self.manual = manual_text(self.rules)
        players = (DEFUSER,) if solo else (DEFUSER, EXPERT)
        self.systems = [system_prompt(r, mode, self.rules, view=view, solo=solo)
                        if r in players else "" for r in range(2)]
        #: who gets the manual in the first message (GPTNT D.5), rather than in the system
        self.reads_manual = {r for r in players if (r == EXPERT and view == "gptnt")
                             or (solo == "with_manual")}

    def action_struct(self):
        """int32 ``[2, ACTION_LEN]``; in async mode a timed action (its Defuser turn's game
        time: :func:`~jaxcollab.envs.ktane.rules.timed_action`)."""
        joint = jax.ShapeDtypeStruct((2, ACTION_LEN), np.int32)
        if self.mode == "sync":
            return joint
        return TimedAction(joint, jax.ShapeDtypeStruct((), np.int32))

    def noop(self):
        return np.zeros((2, ACTION_LEN), np.int32)

    def max_steps(self, env) -> int:
        """Sync: ``env.max_episode_steps``. Async: :func:`async_max_steps` (a Defuser cycle
        is its wait while it thinks, its action, and an Expert step after each)."""
        return env.max_episode_steps if self.mode == "sync" else async_max_steps(env)

    def _state(self, ep: Episode) -> dict:
        return ep.scratch.setdefault("ktane", {
            "clock_s": 0.0, "queue": {r: [] for r in ROLE_NAMES}, "pending": None,
            "expert_next_s": 0.0, "simon": (), "last": None})

    def _messages(self, ep: Episode, name: str, user: str) -> tuple[dict, ...]:
        """The request of ``name``: system prompt, past exchanges and the current ``user``
        message, kept within the context (:meth:`~.bridge.Game.fit`).

        The previous exchange shows that turn's ``prev`` view (``gptnt``: one unlabelled
        frame) or its whole view, older ones their ``brief`` (:data:`OMITTED` for the view:
        GPTNT App. D.4); refused exchanges leave the context; replies are fed back clipped
        (:func:`~jaxcollab.llm.bridge.clip`). A player who reads the manual gets it at the
        head of the first user message, which is never dropped (GPTNT App. D.5)."""
        role = ROLE_NAMES.index(name)
        turns = [h for h in ep.history[name] if not h["refused"]]
        messages = [{"role": "system", "content": self._manual_words(ep, self.systems[role])}]
        for j, h in enumerate(turns):
            seen = h.get("prev", h["seen"]) if j == len(turns) - 1 else h.get("brief", h["seen"])
            messages += [{"role": "user", "content": seen},
                         {"role": "assistant", "content": clip(h["said"])}]
        messages.append({"role": "user", "content": user})
        if role not in self.reads_manual:
            return self.fit(ep, messages)
        first = (f"{MANUAL_HEADER}\n\n{self._manual_words(ep, self.manual)}\n\n"
                 f"{messages[1]['content']}")
        messages[1] = {"role": "user", "content": first}
        return self.fit(ep, messages, keep=3)

    def turn(self, ep: Episode, step: int, obs: np.ndarray) -> Turn:
        s = self._state(ep)
        if step % 2 == DEFUSER:  # the environment's alternation: even steps
            now = s["clock_s"]
            action, elapsed_s = yield from self._defuser_turn(ep, step, obs, now)
            s["clock_s"] = now + elapsed_s
        elif self.solo:
            action, elapsed_s = self.noop(), 0.0
        else:
            action, elapsed_s = (yield from self._expert_turn(ep, step, obs, s["clock_s"])), 0.0
        return action if self.mode == "sync" else timed_action(action, elapsed_s)

    def _defuser_view(self, ep: Episode, row: np.ndarray, now: float) -> tuple[str, str | None]:
        """The Defuser's current view at game time ``now``, and what stands for it once it is
        the previous one (``gptnt``: one unlabelled frame; ``full``: None, the view itself)."""
        if self.view == "full":
            return self._perceived(ep, marks(self.env.render_observation(row, DEFUSER))), None
        simon = self._state(ep)["simon"]
        prev = defuser_text(row, now, labels=False, frames=1, simon=simon)
        return (self._perceived(ep, marks(defuser_text(row, now, frames=FRAMES, simon=simon))),
                f"{PREVIOUS}\n{self._perceived(ep, prev)}")

    def _perceived(self, ep: Episode, text: str) -> str:
        """A Defuser view under ``glyphs`` and ``hud`` (:mod:`.perception`)."""
        if self.glyphs == "described":
            text = describe_view(text, glyph_words(ep.index)[0])
        return gptnt_hud(text) if self.hud == "gptnt" else text

    def _manual_words(self, ep: Episode, text: str) -> str:
        """Manual text (or a system prompt holding it) under ``glyphs`` (:mod:`.perception`)."""
        return describe_manual(text, glyph_words(ep.index)[1]) if self.glyphs == "described" \
            else text

    def _defuser_turn(self, ep: Episode, step: int, obs: np.ndarray, now: float) -> Turn:
        """The Defuser's step at game time ``now``: ``(action, game seconds it lasts)``.

        Sync: a decision cycle, its action landing at once, then Δ. Async: a cycle whose reply
        took ``L`` seconds is a wait of ``L`` (centiseconds, the environment's unit) while it
        thinks, then its action, landing on the next Defuser step, followed by the
        :data:`POLL_S` sleep (one step of :data:`POLL_S` when ``L`` rounds to 0). Either way
        every Defuser step's action lands at the step's start, so Simon's schedule is updated
        from the rows around the previous step's action, at that step's start."""
        s, row = self._state(ep), obs[DEFUSER]
        if s["last"] is not None:
            before, at = s["last"]
            s["simon"] = simon_schedule(s["simon"], before, row, at, now - FRAMES * FRAME_S)
        s["last"] = (row, now)
        if s["pending"] is not None:  # async: the reply of the previous step lands now
            action, s["pending"] = s["pending"], None
            return action, POLL_S
        view, prev = self._defuser_view(ep, row, now)
        verb, target, text, lag = yield from self._cycle(ep, DEFUSER, f"{ep.index}:{step}",
                                                         step, now, view, prev)
        action = self._action(DEFUSER, verb, target, text)
        if self.mode == "sync":
            return action, float(KT.TURN_S)
        if lag > 0:
            s["pending"] = action
            return self.noop(), lag
        return action, POLL_S

    def _expert_turn(self, ep: Episode, step: int, obs: np.ndarray, end: float) -> Turn:
        """The Expert's cycles up to game time ``end`` (the next Defuser step's start): one
        cycle at ``end`` in sync mode; in async mode every cycle its loop starts before ``end``,
        each :data:`POLL_S` after the previous one's dispatch. The environment records the last
        message sent (it counts messages; ``full`` shows its phrase)."""
        s = self._state(ep)
        # the full view's Expert row: the manual (in its system prompt) + the Defuser's phrase
        view = ("" if self.view == "gptnt" else
                self.env.render_observation(obs[EXPERT], EXPERT, self.rules)
                .removeprefix(self.manual + "\n\n"))
        sync, sent, j = self.mode == "sync", None, 0
        while (j == 0) if sync else s["expert_next_s"] < end:
            now = end if sync else s["expert_next_s"]
            nonce = f"{ep.index}:{step}" + (f".{j}" if j else "")
            verb, _, text, lag = yield from self._cycle(ep, EXPERT, nonce, step, now, view, None)
            sent = text if verb == MESSAGE else sent
            s["expert_next_s"] = now + lag + POLL_S
            j += 1
        return self._action(EXPERT, WAIT, 0, "") if sent is None else self._action(
            EXPERT, MESSAGE, 0, sent)

    def _action(self, role: int, verb: int, target: int, text: str) -> np.ndarray:
        action = self.noop()
        action[role, :2] = (verb, target)
        if verb == MESSAGE:
            action[role, 2:] = message_phrase(text)
        return action

    def _cycle(self, ep: Episode, role: int, nonce: str, step: int, now: float, view: str,
               prev: str | None) -> Turn:
        """One decision cycle of ``role`` starting at game time ``now``: flush its queue, show
        ``view`` and the messages, ask, parse. Returns ``(verb, target, message, lag)``,
        ``lag`` the seconds until dispatch (the reply's latency in async mode, in whole
        centiseconds, the environment's unit; else 0); a message enters the partner's queue
        stamped ``now + lag``. The history records ``clock_s`` (``now``) and ``dispatch_s``."""
        name, s = ROLE_NAMES[role], self._state(ep)
        partner = ROLE_NAMES[1 - role]
        inbox = [m for t, m in s["queue"][name] if t <= now]
        s["queue"][name] = [(t, m) for t, m in s["queue"][name] if t > now]
        note = ep.take_note(name)  # prepended to the turn's input (GPTNT F.2)
        feedback = [f"<execution-feedback>{note}</execution-feedback>"] if note else []
        rest = [] if self.solo else [
            f"Messages from the {partner.capitalize()}:\n" + "\n".join(inbox) if inbox
            else f"No new messages from the {partner.capitalize()}."]
        user = "\n\n".join([*feedback, *([view] if view else []), *rest])
        brief = "\n\n".join([*feedback, OMITTED, *rest]) if role == DEFUSER else user
        req = Request(name, self._messages(ep, name, user), nonce=nonce)
        (reply,) = yield [req]
        self.overflowed(ep, req, reply)
        failed = reply.refused or bool(reply.failure)
        parsed = self.refusal(reply) if failed else parse_reply(reply.text, reply.finish_reason)
        (verb, target, text), parsed = decode_action(parsed, role,
                                                     view if role == DEFUSER else "",
                                                     messaging=not self.solo)
        text = clip(text)
        extra = {} if prev is None else {"prev": "\n\n".join([*feedback, prev, *rest])}
        lag = round(reply.latency_s, 2) if self.mode == "async" else 0.0  # centiseconds
        ep.record(name, step, req, reply, parsed, seen=user, brief=brief, said=reply.text,
                  refused=failed, clock_s=now, dispatch_s=now + lag, **extra)
        if reply.refused and not self.solo:  # GPTNT: the partner is asked to rephrase
            s["queue"][partner].append((now, "Can you rephrase that please?"))
        if verb == MESSAGE:
            s["queue"][partner].append((now + lag, text))
            sent = ep.data.setdefault("messages_sent", {r: 0 for r in ROLE_NAMES})
            sent[name] += 1
        return verb, target, text, lag

    def finish(self, ep: Episode, outcome: str) -> Turn:
        """End-of-game reflection: each player is told the outcome and asked to reflect."""
        if not self.reflection:
            return
        players = ROLE_NAMES[:1] if self.solo else ROLE_NAMES
        ask = (f"The game is over: {outcome}. Reflect on the game: what went well, what went "
               "wrong" + ("" if self.solo else " in your collaboration")
               + ", and what you would do differently.")
        reqs = [Request(name, self._messages(ep, name, ask), nonce=f"{ep.index}:reflection")
                for name in players]
        replies = yield reqs
        ep.data["reflection"] = {r.agent: rep.text for r, rep in zip(reqs, replies)}
