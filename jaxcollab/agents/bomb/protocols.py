"""Which of SANZARU's protocol families a bomb episode's team used, read from its messages.

SANZARU ("SaveSanzaru: Benchmarking Protocol Formation under Epistemic & Communication
Asymmetry", Figs. 7-12) shows the protocols its teams formed: one bit per round (Fig. 7), one
symbol per wire (Fig. 8), counting (Fig. 9), Morse code (Fig. 10), a letter grid (Fig. 11) and
the whole table at once (Fig. 12). The paper names them from traces; the rules that sort an
episode into one here are ours, and read only the gestures Mute sends (Mute alone holds the
manual and can only gesture, so its gestures are the code that carries the answer):

* ``none``: Mute never gestured.
* ``whole_table``: Mute sent a message of at least :data:`WHOLE_TABLE_SYMBOLS` symbols before
  any teammate had addressed it (it could only encode the manual itself, not an answer).
* ``one_bit``: every message is one symbol, from at most two symbols in all (yes / no).
* ``counting`` / ``letter_grid``: every message is runs of one mark closed or split by a
  separator symbol (values as counts, Fig. 9; the separator: of the symbols that split every
  message so, the one closing the most messages); ``letter_grid`` when some message holds at
  least :data:`GRID_RUNS` runs, an even number, each of 1-5 marks (row-column pairs, Fig. 11).
* ``morse``: groups of two marks split by a separator, each group at most five marks long,
  some group mixing both (dots and dashes) and some message spelling at least
  :data:`MORSE_CHARS` characters (Fig. 10 relays three colours; a shorter message of three
  symbols is as likely one symbol per value).
* ``symbol_per_wire``: otherwise, at least three distinct symbols (one symbol per value,
  Fig. 8).

An episode that fits none (at most two symbols in messages that are neither bits nor runs) is
``undetermined``: the messages alone do not tell, and a reader must. With a judge configured
(``eval/analyze.py judge.model=...``) the judge reads its transcript (an LLM run's own, a
scripted team's rebuilt from the replay by :func:`episode_records`) and names its family by
:data:`jaxcollab.agents.bomb.sanzaru.PROTOCOL_RUBRIC`; :func:`summary` counts each family by
rule and by judge.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from jaxcollab.envs.bomb import tables as T

#: the families, in SANZARU's figure order (Figs. 7-12), then the two outcomes of no rule
FAMILIES = ("one_bit", "symbol_per_wire", "counting", "morse", "letter_grid", "whole_table",
            "none", "undetermined")
WHOLE_TABLE_SYMBOLS = 8  # ours: longer than any answer the scripted relays send (5 values)
GRID_RUNS = 8  # ours: four letters' row-column pairs
MORSE_GROUP = 5  # the longest Morse character (digits), International Morse Code
MORSE_CHARS = 3  # ours
SYMBOL_NAMES = tuple(T.SYMBOL_IDS)  # symbol id - 1 -> its gesture name


def _split(msg: Sequence[int], sep: int) -> list[list[int]]:
    """``msg``'s groups between separators (an empty one where two meet or it opens)."""
    groups, cur = [], []
    for s in msg:
        if s == sep:
            groups.append(cur)
            cur = []
        else:
            cur.append(s)
    if cur:
        groups.append(cur)
    return groups


def _separator(messages: list[list[int]], alphabet: set[int]) -> int | None:
    """The symbol that splits every message into non-empty groups of the one or two other
    symbols (marks), preferring the one closing the most messages; None if none does."""
    if not 2 <= len(alphabet) <= 3:
        return None
    closing = sorted(alphabet, key=lambda s: (-sum(m[-1] == s for m in messages), s))
    return next((sep for sep in closing
                 if all(sep in m and all(_split(m, sep)) for m in messages)), None)


def classify(messages: list[list[int]], unprompted: list[bool]) -> str:
    """The family (one of :data:`FAMILIES`) of one episode from Mute's gestures.

    Args:
        messages: Mute's non-empty gestures in order, each its symbol ids (1..42).
        unprompted: per message, whether no teammate had addressed Mute before it.
    """
    if not messages:
        return "none"
    if any(u and len(m) >= WHOLE_TABLE_SYMBOLS for m, u in zip(messages, unprompted)):
        return "whole_table"
    alphabet = set().union(*map(set, messages))
    if all(len(m) == 1 for m in messages) and len(alphabet) <= 2:
        return "one_bit"
    sep = _separator(messages, alphabet)
    groups = [] if sep is None else [_split(m, sep) for m in messages]
    if groups and len(alphabet) == 2:
        grid = any(len(g) >= GRID_RUNS and len(g) % 2 == 0 and all(len(x) <= 5 for x in g)
                   for g in groups)
        return "letter_grid" if grid else "counting"
    flat = [x for g in groups for x in g]
    if (groups and all(len(x) <= MORSE_GROUP for x in flat)
            and any(len(set(x)) == 2 for x in flat) and any(len(g) >= MORSE_CHARS for g in groups)):
        return "morse"
    return "symbol_per_wire" if len(alphabet) >= 3 else "undetermined"


def episode_families(traj_state, traj_actions, turn_order) -> np.ndarray:
    """The family index (into :data:`FAMILIES`) of each episode of a trajectory.

    Args:
        traj_state / traj_actions: a rollout's trajectory (leading axes ``[T, B]``, host or
            device arrays; the state each step acted on, as ``rollout(..., trajectory=True)``
            records it, or :func:`jaxcollab.analysis.replay.replay`'s).
        turn_order: int ``[B, 3]`` each episode's turn order.

    Returns:
        int32 ``[B]``.
    """
    turn = np.asarray(traj_state.turn)
    active = np.asarray(traj_state.ending) == T.RUNNING  # [T, B]
    actor = np.take_along_axis(np.asarray(turn_order)[None], turn[..., None], -1)[..., 0]
    gesture_to = np.take_along_axis(np.asarray(traj_actions.gesture_to), actor[..., None],
                                    -1)[..., 0]
    speak_to = np.take_along_axis(np.asarray(traj_actions.speak_to), actor[..., None],
                                  -1)[..., 0]
    body = np.take_along_axis(np.asarray(traj_actions.gesture), actor[..., None, None],
                              -2)[..., 0, :]  # [T, B, G]
    is_mute = active & (actor == T.MUTE)
    sent = is_mute & (gesture_to != T.NO_TARGET) & (body != 0).any(-1)
    addressed = active & ~is_mute & ((gesture_to == T.MUTE) | (speak_to == T.MUTE))
    before = np.cumsum(addressed, 0) - addressed  # calls to Mute at earlier steps
    out = np.empty(turn.shape[1], np.int32)
    for b in range(turn.shape[1]):
        steps = np.flatnonzero(sent[:, b])
        msgs = [[int(s) for s in body[t, b] if s] for t in steps]
        out[b] = FAMILIES.index(classify(msgs, [bool(before[t, b] == 0) for t in steps]))
    return out


def _call(act: int, arg: int, speak_to: int, speech, gesture_to: int, gesture) -> list[dict]:
    """One turn's calls in an LLM transcript's form (``speak``, ``gesture``, ``act``; positions
    1-based), from its action's fields."""
    to = lambda r: "everyone" if r == T.EVERYONE else T.ROLE_NAMES[int(r)]  # noqa: E731
    calls = []
    if speak_to != T.NO_TARGET:
        text = bytes(int(b) for b in speech if b).decode("utf-8", "replace")
        calls.append({"call": "speak", "to": to(speak_to), "text": text})
    if gesture_to != T.NO_TARGET and any(gesture):
        calls.append({"call": "gesture", "to": to(gesture_to),
                      "symbols": [SYMBOL_NAMES[int(s) - 1] for s in gesture if s]})
    if T.ACT_NAMES[act] != "wait":
        calls.append({"call": "act", "op": T.ACT_NAMES[act], "position": int(arg) + 1})
    return calls or [{"call": "wait"}]


def episode_records(traj_state, traj_actions, turn_order, ending, rows: Sequence[int]
                    ) -> list[dict]:
    """A scripted team's episodes ``rows`` as transcript records (what a judge reads, in the
    form of an LLM run's, :func:`jaxcollab.agents.bomb.sanzaru.render`): ``ending`` and
    ``agents.<role>``, each turn's ``step`` and ``action`` (its calls: ``speak`` with the text,
    ``gesture`` with the symbol names, ``act``, or ``wait``); no views or thoughts.

    Args:
        traj_state / traj_actions / turn_order: as :func:`episode_families`.
        ending: int ``[B]`` each episode's final ending. rows: the episodes to rebuild.
    """
    turn = np.asarray(traj_state.turn)
    active = np.asarray(traj_state.ending) == T.RUNNING  # [T, B]
    actor = np.take_along_axis(np.asarray(turn_order)[None], turn[..., None], -1)[..., 0]
    a = {k: np.asarray(getattr(traj_actions, k))
         for k in ("act", "arg", "speak_to", "speech", "gesture_to", "gesture")}
    out = []
    for b in rows:
        agents: dict[str, list] = {}
        for t in np.flatnonzero(active[:, b]):
            r = int(actor[t, b])
            agents.setdefault(T.ROLE_NAMES[r], []).append({"step": int(t), "action": _call(
                *(a[k][t, b, r] for k in ("act", "arg", "speak_to", "speech", "gesture_to",
                                          "gesture")))})
        out.append({"ending": T.ENDING_NAMES[int(ending[b])], "agents": agents})
    return out


def summary(codes: np.ndarray, variant: np.ndarray, names: Sequence[str], model: str | None,
            episodes: Sequence[dict], judged: Sequence[dict] | None = None) -> dict:
    """The ``protocol_families`` block of a bomb analysis.

    Args:
        codes: int ``[N]`` each episode's family index, the judge's family where it coded one.
        variant: int ``[N]`` its variant's index into ``names``. model: the run's model
            (``None`` for a scripted team).
        episodes: per episode its ``env`` and ``episode`` (the undetermined are listed).
        judged: the episodes the rules left undetermined as the judge answered them (``env``,
            ``episode``, ``protocol``: the family, or ``"undetermined"`` where the judge coded
            none, and the verdict's ``judge_*`` keys); None: no judge ran.

    Returns:
        ``model``, ``source``, ``counts`` (family → episodes), ``variants.<name>`` (family →
        episodes of that variant; families with none left out), ``by`` (``rule``: episodes the
        rules sorted, ``judge``: episodes the judge coded), ``judged`` (each judged episode
        with ``by: "judge"`` where coded, ``"rule"`` where it stays undetermined; empty without
        a judge), ``judge_ran`` (whether a judge was configured) and ``undetermined``
        (``env``, ``episode`` of each episode left without a family: all the rules'
        undetermined when no judge ran).
    """
    count = lambda c: {FAMILIES[k]: n for k, n in sorted(Counter(c.tolist()).items())}  # noqa: E731
    ran = judged is not None
    judged = [{**j, "by": "rule" if j["protocol"] == "undetermined" else "judge"}
              for j in judged or ()]
    by_judge = sum(j["by"] == "judge" for j in judged)
    return {"model": model, "source": "SANZARU Figs. 7-12 (families); rules ours; the "
            "undetermined episodes coded by the judge where one ran",
            "counts": count(codes),
            "variants": {n: count(codes[variant == i]) for i, n in enumerate(names)},
            "by": {"rule": int(len(codes)) - by_judge, "judge": by_judge},
            "judge_ran": ran,
            "judged": judged,
            "undetermined": [{"env": e["env"], "episode": e["episode"]}
                             for e, c in zip(episodes, codes.tolist())
                             if FAMILIES[c] == "undetermined"]}


__all__ = ["FAMILIES", "SYMBOL_NAMES", "classify", "episode_families", "episode_records",
           "summary"]
