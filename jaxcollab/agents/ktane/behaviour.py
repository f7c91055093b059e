"""Keep-Talking behaviour of a run (GPTNT §8 "Analysing How Models Fail" and Table 7), from
per-step arrays of its episodes.

* **Defuser steps** fall in four kinds (GPTNT §4 and appendix E.3): *navigating* (``select`` /
  ``back``: zoom in and out, ``rotate``, ``flip``), *interacting* (``press`` / ``cut`` /
  ``hold`` / ``release`` on a module), *messaging* and *waiting*; Expert steps are messaging
  or waiting. Shares are pooled over the steps of each group of episodes, by outcome (solved,
  strikeout, timeout) as GPTNT §8 compares them.
* **Game phases** are thirds of each episode's own steps by that role (early, middle, late).
  GPTNT §8 speaks of "game phases" without defining them; the thirds are our choice.
* **Message rates** (GPTNT Table 7, "% game steps with messages"): the share of each role's
  steps that send a message, and of game steps (a Defuser turn and the Expert turn after it)
  with a message from either.
* **After a strike** (GPTNT §8 "Recovery is possible, but rare"): for each strike, the next
  event (another strike, a module solved, or neither before the episode ended), how the
  Defuser's next :data:`AFTER` steps divide into the four kinds, the share of strikes the
  Expert answered with a message within its next :data:`AFTER` steps, and how the episodes
  with a strike ended.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from jaxcollab.envs.ktane import tables as KT
from jaxcollab.envs.ktane.modules.base import (
    BACK,
    FLIP,
    MESSAGE,
    MODULE_VERBS,
    ROTATE,
    SELECT,
    WAIT,
)

KINDS = ("navigating", "interacting", "messaging", "waiting")
EXPERT_KINDS = ("messaging", "waiting")
PHASES = ("early", "middle", "late")
GROUPS = ("all", "solved", "strikeout", "timeout")
AFTER = 3  # steps looked at after a strike, per role


def kind_of(verb: np.ndarray) -> np.ndarray:
    """Index into :data:`KINDS` of each Defuser verb (int ``[...]``; see the module docstring)."""
    kind = np.full(np.shape(verb), KINDS.index("waiting"))
    kind[np.isin(verb, (SELECT, BACK, ROTATE, FLIP))] = KINDS.index("navigating")
    kind[np.isin(verb, MODULE_VERBS)] = KINDS.index("interacting")
    kind[verb == MESSAGE] = KINDS.index("messaging")
    kind[verb == WAIT] = KINDS.index("waiting")
    return kind


def episode_steps(turn, outcome_now, verbs, strikes, solved, final_strikes, final_solved,
                  final_outcome) -> list[dict]:
    """Per episode, its steps: ``role`` (0 Defuser, 1 Expert), ``verb``, ``strike`` and
    ``solved`` (the step gave a strike / solved a module), and its ``outcome`` name.

    Args:
        turn / outcome_now: int ``[T, B]`` the state's turn and outcome at each step (the state
            acted on). verbs: int ``[T, B, 2]`` each role's verb. strikes / solved: int
            ``[T, B]`` strikes and modules solved before each step; final_strikes,
            final_solved, final_outcome: ``[B]`` at the end.
    """
    after_s = np.concatenate([strikes[1:], final_strikes[None]], 0)
    after_m = np.concatenate([solved[1:], final_solved[None]], 0)
    out = []
    for b in range(turn.shape[1]):
        live = np.flatnonzero(outcome_now[:, b] == KT.RUNNING)
        role = turn[live, b] % 2
        out.append({"role": role, "verb": verbs[live, b, role],
                    "strike": after_s[live, b] > strikes[live, b],
                    "solved": after_m[live, b] > solved[live, b],
                    "outcome": KT.OUTCOMES[int(final_outcome[b])]})
    return out


def _phases(n: int) -> np.ndarray:
    return np.minimum(3 * np.arange(n) // max(n, 1), 2)


def _shares(counts: np.ndarray, names: Sequence[str]) -> dict:
    total = int(counts.sum())
    return {**{k: (float(c) / total if total else None) for k, c in zip(names, counts)},
            "steps": total}


def _role_table(episodes: list[dict], role: int, names: Sequence[str], kinds) -> dict:
    """outcome group → phase (and ``all``) → shares of the role's steps in ``names``."""
    counts = {(g, p): np.zeros(len(names), int) for g in GROUPS for p in ("all", *PHASES)}
    for ep in episodes:
        mine = ep["role"] == role
        k = kinds(ep["verb"][mine])
        for g in ("all", ep["outcome"]):
            if g not in GROUPS:
                continue
            for p, ph in enumerate(_phases(int(mine.sum()))):
                counts[(g, PHASES[ph])][k[p]] += 1
                counts[(g, "all")][k[p]] += 1
    return {g: {p: _shares(counts[(g, p)], names) for p in ("all", *PHASES)} for g in GROUPS}


def _expert_kind(verb: np.ndarray) -> np.ndarray:
    return np.where(verb == MESSAGE, 0, 1)


def message_rates(episodes: list[dict]) -> dict:
    """GPTNT Table 7: ``defuser`` / ``expert`` (share of the role's steps with a message) and
    ``either`` (share of game steps, a Defuser turn and the Expert turn after it, with one)."""
    sent = {0: [0, 0], 1: [0, 0]}
    cycles = [0, 0]
    for ep in episodes:
        msg = ep["verb"] == MESSAGE
        for r in (0, 1):
            sent[r][0] += int(msg[ep["role"] == r].sum())
            sent[r][1] += int((ep["role"] == r).sum())
        n = len(msg)
        per = np.add.reduceat(msg.astype(int), np.arange(0, n, 2)) if n else np.zeros(0)
        cycles[0] += int((per > 0).sum())
        cycles[1] += len(per)
    rate = lambda a: a[0] / a[1] if a[1] else None  # noqa: E731
    return {"defuser": rate(sent[0]), "expert": rate(sent[1]), "either": rate(cycles)}


def after_strikes(episodes: list[dict]) -> dict:
    """What followed each strike (module docstring): ``strikes``, ``next_event`` counts
    (``strike`` / ``solved_module`` / ``none``), ``defuser_next`` (shares of :data:`KINDS`
    over the Defuser's next :data:`AFTER` steps), ``expert_messaged`` (share of strikes),
    ``episodes_with_strike`` and their ``outcomes``."""
    nxt = {"strike": 0, "solved_module": 0, "none": 0}
    kinds = np.zeros(len(KINDS), int)
    answered, n, outcomes = 0, 0, {}
    for ep in episodes:
        hits = np.flatnonzero(ep["strike"])
        if len(hits):
            outcomes[ep["outcome"]] = outcomes.get(ep["outcome"], 0) + 1
        for t in hits:
            n += 1
            later_s = np.flatnonzero(ep["strike"][t + 1:])
            later_m = np.flatnonzero(ep["solved"][t + 1:])
            first_s = later_s[0] if len(later_s) else np.inf
            first_m = later_m[0] if len(later_m) else np.inf
            nxt["none" if first_s == first_m == np.inf else
                "strike" if first_s < first_m else "solved_module"] += 1
            role, verb = ep["role"][t + 1:], ep["verb"][t + 1:]
            for k in kind_of(verb[role == 0][:AFTER]):
                kinds[k] += 1
            answered += bool((verb[role == 1][:AFTER] == MESSAGE).any())
    return {"strikes": n, "next_event": nxt, "defuser_next": _shares(kinds, KINDS),
            "expert_messaged": answered / n if n else None,
            "episodes_with_strike": sum(outcomes.values()), "outcomes": outcomes}


def behaviour(episodes: list[dict]) -> dict:
    """The ``behaviour`` keys of a Keep-Talking ``analysis.json`` over :func:`episode_steps`
    episodes: ``phases`` (the definition used), ``defuser`` and ``expert`` (outcome group →
    phase → shares and ``steps``), ``message_rate`` and ``after_strike``."""
    return {"phases": "thirds of each episode's steps by the role (ours: GPTNT §8 does not "
                      "define game phases)",
            "episodes": {g: sum(g in ("all", e["outcome"]) for e in episodes) for g in GROUPS},
            "defuser": _role_table(episodes, 0, KINDS, kind_of),
            "expert": _role_table(episodes, 1, EXPERT_KINDS, _expert_kind),
            "message_rate": message_rates(episodes),
            "after_strike": after_strikes(episodes)}


__all__ = ["AFTER", "KINDS", "PHASES", "after_strikes", "behaviour", "episode_steps", "kind_of",
           "message_rates"]
