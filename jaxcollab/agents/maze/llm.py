"""Split-mask mazes for LLM agents: the LLM protocol of "Narrowing the Collaboration Gap, Probably"
(§6, LLM setup; appendix "Experimental details").

Per maze step the two agents alternate for K rounds (default 4), agent 0 first. Each prompt holds
(i) the round number, (ii) the agent's legend-annotated masked maze (the environment's
observation row), (iii) the moves taken so far and (iv) the partner's most recent message; the
agent answers a move after ``~`` and, in the probability settings and ``full``, a probability
vector over ``d r u l`` after ``%``. Communication settings (what of the partner's response is
passed on): ``full`` (the whole response, with the reasoning text when the server returns it
apart: R7), ``action`` (the move), ``verbalized`` (the reported vector), ``verbalized_calibrated``
(the reported vector after per-round conversation calibrators fitted on the transcripts of a
held-out ``verbalized`` run, paper Algorithm 1 / R3: inputs ``log r_k`` and ``log r_{k−1}``),
``verbalized_naive`` (R4's naive rare-action correction: a vector whose highest probability is
on up or left becomes 0.5 down / 0.5 right, in context), ``sampled`` (M independent responses
per round, their empirical move distribution) and ``solo`` (one agent sees the full maze, one
query per step). A round's move is the one given the highest probability (paper §6: "the answer
assigned the highest probability value"; ties go to the first of ``d r u l``), the ``~`` move
when no vector was read.

How the team advances (``advance``): ``team`` (the last speaker's move is applied; one wrong
move ends the maze) or ``path`` (the team is walked along the maze's unique path whatever it
decides, so every round of every step is scored, as the trained transformers are scored on
every path step, paper App. E). Along the path the prompts of a step depend only on the
position, the moves so far and the earlier rounds of that step, so a ``path`` run's round-k
maze success is that of a team committing round k's move (the first wrong one would end its
maze), for every round from one run (:mod:`jaxcollab.agents.maze.llm_results`); its last round
is the ``team`` game itself.
Episode ``i`` plays maze instance ``i`` of the run's seed, as every other team does (with
``maze.rollouts=R``, episode ``e`` is rollout ``e % R`` of maze ``e // R``: the paper's 30 mazes x
10 rollouts). Defaults follow the paper: temperature 1.0.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.collab.calibration import (
    CONVERSATION,
    Calibrator,
    fit_rounds,
)
from jaxcollab.envs.maze.generator import MOVE_CHARS, MOVE_DELTAS
from jaxcollab.envs.maze.text import UNSEEN, WALL
from jaxcollab.llm.bridge import Episode, Game, Turn, clip
from jaxcollab.llm.client import Reply, Request
from jaxcollab.llm.parse import Parsed

#: Communication settings (module docstring).
SETTINGS = ("full", "action", "verbalized", "verbalized_calibrated", "verbalized_naive",
            "sampled", "solo")
#: Settings whose round result is the reported probability vector.
VERBALIZED = ("verbalized", "verbalized_calibrated", "verbalized_naive")
#: How the team advances (module docstring).
ADVANCE = ("team", "path")
_MOVE = re.compile(r"~[ \t]*(down|right|up|left|[drul])(?![a-z])", re.I)
_NUM = r"(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][+-]?\d+)?"
_SEP = r"[ \t]*[,;]?[ \t]*"
_PCT = rf"{_NUM}(?:[ \t]*%)?"  # a number, or a percentage written with its sign (``70%``)
#: ``%`` then exactly four numbers on one line (``[`` ``]`` optional, each may carry a ``%``); a
#: fifth number on the line means a row of numbers (the maze's column header), not a vector.
_PROBS = re.compile(rf"%[ \t]*\[?[ \t]*({_PCT}(?:{_SEP}{_PCT}){{3}})(?![ \t]*%?{_SEP}(?:\d|\.\d))")
#: Words that introduce an example (``e.g. ~d``): what follows is quoted, not answered.
_EXAMPLE = re.compile(r"(?:e\.\s?g\.|for example|for instance|such as|example)[:,]?[ \t]*$", re.I)
_NAMES = {"d": "down", "r": "right", "u": "up", "l": "left"}


def annotated(grid: str) -> str:
    """A grid (one line per row) with column numbers on top and row numbers on the left: the
    paper's legend-annotated rendering."""
    lines = grid.splitlines()
    head = "    " + " ".join(str(c + 1) for c in range(len(lines[0])))
    return "\n".join([head] + [f"{r + 1:>3} " + " ".join(line) for r, line in enumerate(lines)])


def merge_views(rows: np.ndarray) -> np.ndarray:
    """The full maze from the two complementary masked rows (solo, paper §6: "given the full
    maze directly"): each cell from the agent that sees it (``?`` is where a mask hides it)."""
    return np.where(rows[0] == UNSEEN, rows[1], rows[0])


def system_prompt(setting: str, rounds: int, tell_partner: bool = False) -> str:
    """The instructions for ``setting`` (paper §6 LLM setup; the wording is ours). With
    ``tell_partner`` (``full`` only) the agent is also asked to write its partner a message,
    as R7 modifies the prompt for models whose reasoning the API keeps hidden.

    Raises:
        ValueError: unknown setting, or ``tell_partner`` with another setting than ``full``.
    """
    if setting not in SETTINGS:
        raise ValueError(f"unknown communication setting {setting!r}; valid: {SETTINGS}")
    if tell_partner and setting != "full":
        raise ValueError(f"maze.tell_partner=true asks for a message to pass on whole: setting "
                         f"'full' only, got {setting!r}")
    legend = ("Legend: # wall, . open cell, ? cell you cannot see, @ the team's current "
              "position. Rows are numbered from the top, columns from the left. The path starts "
              "at row 1, column 1 and ends at the bottom-right cell; exactly one path of open "
              "cells leads there. Moves: d (down), r (right), u (up), l (left).")
    # R7: "full" keeps the prompt of the probability settings ("asks the model for its
    # uncertainty"), so the passed-on response holds the reasoning and the vector.
    probs = (" Then give your probability for each move, in the order d, r, u, l, after the "
             "delimiter %, e.g. % 0.6, 0.3, 0.05, 0.05." if setting in (*VERBALIZED, "full")
             else "")
    passed = {"full": " Your whole response, reasoning included, is passed to your partner.",
              "action": " Your partner receives only your move.",
              "sampled": " Your partner receives the distribution of several answers like "
                         "yours."}.get(setting, " Your partner receives only your probabilities."
                                       if setting in VERBALIZED else "")
    if setting == "solo":
        task = "You see the whole maze. Choose the team's next move along the path."
    else:
        task = (f"You and a partner each see a different half of the maze. You talk for "
                f"{rounds} rounds before each move, taking turns; the last speaker's move is the "
                f"team's. A single wrong move ends the maze.{passed}")
    think = ("Think briefly, then write your partner a message: what you see that it may not "
             "and what you conclude. Then give your move" if tell_partner else
             "Think briefly, then give your move")
    return f"{task}\n\n{legend}\n\n{think} after the delimiter ~, e.g. ~d.{probs}"


def _answers(pattern: re.Pattern, text: str) -> list[re.Match]:
    """Matches of ``pattern`` in ``text`` that are not examples (``e.g. ~d`` copied from the
    prompt's instructions)."""
    return [m for m in pattern.finditer(text)
            if not _EXAMPLE.search(text[max(0, m.start() - 20): m.start()])]


def _probabilities(numbers: str) -> np.ndarray | None:
    """A normalised vector from four reported numbers, or ``None`` when they are not
    probabilities: fractions in [0, 1] summing to at most 1.1, or percentages summing to
    90..110 (row or column numbers such as ``1 2 3 4`` are neither)."""
    vals = np.array([float(x) for x in re.findall(_NUM, numbers)], np.float64)
    if vals.shape != (4,) or not np.all(np.isfinite(vals)) or np.any(vals < 0):
        return None
    total = vals.sum()
    fractions = np.all(vals <= 1.0) and 0 < total <= 1.1
    if not (fractions or (np.all(vals <= 100) and 90 <= total <= 110)):
        return None
    return vals / total


def parse_move(text: str, verbalized: bool) -> tuple[int | None, np.ndarray | None, Parsed]:
    """``(move id or None, probability vector or None, parsed)`` from a reply: its last ``~``
    move and last ``%`` vector (normalised), examples introduced by "e.g." or "for example"
    skipped. Never raises. Classes: ``no_action`` (no ``~`` move), ``unparseable`` (verbalized
    setting without a readable 4-vector)."""
    text = text if isinstance(text, str) else ""
    moves = _answers(_MOVE, text)
    move = MOVE_CHARS.index(moves[-1].group(1)[0].lower()) if moves else None
    found = [p for p in (_probabilities(m.group(1)) for m in _answers(_PROBS, text))
             if p is not None]
    probs = found[-1] if found else None
    parsed = Parsed(None if move is None else MOVE_CHARS[move], text)
    if move is None:
        parsed = parsed.with_errors("no_action")
    if verbalized and probs is None:
        parsed = parsed.with_errors("unparseable")
    return move, probs, parsed


def _describe(probs: np.ndarray) -> str:
    return ", ".join(f"{_NAMES[c]} {p:.2f}" for c, p in zip(MOVE_CHARS, probs))


def naive_rare_action(probs: np.ndarray) -> np.ndarray:
    """R4's naive rare-action correction (paper §6): a vector whose highest probability is on
    up or left becomes 0.5 down / 0.5 right; any other vector is kept. float ``[4]``."""
    if int(np.argmax(probs)) >= 2:  # u or l (move order d r u l)
        return np.array([0.5, 0.5, 0.0, 0.0])
    return probs


def solve_path(grid: np.ndarray, shape: tuple[int, int]) -> list[int]:
    """The move ids of the path from the top-left to the bottom-right cell of a full maze
    (tokens ``[H·W]``, any non-wall cell open), by breadth-first search: the maze's unique
    path (the generator keeps only mazes with one simple path).

    Raises:
        ValueError: no path (not a generated maze).
    """
    h, w = shape
    open_ = np.asarray(grid).reshape(h, w) != WALL
    came: dict[tuple[int, int], tuple[tuple[int, int], int]] = {(0, 0): ((0, 0), -1)}
    frontier = [(0, 0)]
    while frontier and (h - 1, w - 1) not in came:
        nxt = []
        for r, c in frontier:
            for m, (dr, dc) in enumerate(MOVE_DELTAS):
                cell = (r + int(dr), c + int(dc))
                if 0 <= cell[0] < h and 0 <= cell[1] < w and open_[cell] and cell not in came:
                    came[cell] = ((r, c), m)
                    nxt.append(cell)
        frontier = nxt
    if (h - 1, w - 1) not in came:
        raise ValueError("no path from the top-left to the bottom-right cell")
    moves, cell = [], (h - 1, w - 1)
    while cell != (0, 0):
        cell, m = came[cell]
        moves.append(m)
    return moves[::-1]


class MazeGame(Game):
    """Host side of the maze protocol.

    Args:
        env: a :class:`~jaxcollab.envs.maze.MazeEnv`.
        setting: a communication setting (:data:`SETTINGS`).
        rounds: K rounds of conversation per maze step (paper: 4).
        samples: M responses per round in the ``sampled`` setting.
        calibrator: the per-round conversation calibrators of ``verbalized_calibrated``
            (:func:`fit_conversation_calibrator`); ``None`` there passes the reported vectors
            on raw (the held-out run gave nothing to fit).
        advance: ``team`` or ``path`` (module docstring).
        tell_partner: ask for a message to the partner (``full`` only; :func:`system_prompt`).

    Raises:
        ValueError: bad setting or advance, ``rounds < 1`` or ``samples < 1``, a calibrator
            given to another setting than ``verbalized_calibrated``,
            ``tell_partner`` outside ``full``.
    """

    roles = ("agent0", "agent1", "solo")

    def __init__(self, env, setting: str = "action", rounds: int = 4, samples: int = 5,
                 calibrator: Calibrator | None = None, advance: str = "team",
                 tell_partner: bool = False):
        if int(rounds) < 1 or int(samples) < 1:
            raise ValueError(f"need rounds >= 1 and samples >= 1, got {rounds!r}, {samples!r}")
        if advance not in ADVANCE:
            raise ValueError(f"maze.advance must be one of {ADVANCE}, got {advance!r}")
        self.system = system_prompt(setting, int(rounds), bool(tell_partner))
        if calibrator is not None and setting != "verbalized_calibrated":
            raise ValueError("only setting 'verbalized_calibrated' takes a calibrator; got "
                             f"setting {setting!r}")
        self.env, self.setting, self.calibrator, self.advance = env, setting, calibrator, advance
        if calibrator is not None:  # host copies, float64 [K, F] and [K, C]
            self._cal_weights, self._cal_bias = (np.asarray(calibrator.weights, np.float64),
                                                 np.asarray(calibrator.bias, np.float64))
        self.rounds = 1 if setting == "solo" else int(rounds)
        self.samples = int(samples) if setting == "sampled" else 1

    def action_struct(self):
        return jax.ShapeDtypeStruct((2,), np.int32)

    def noop(self):
        return np.zeros(2, np.int32)

    def _message(self, reply: Reply, move, probs) -> str:
        """What the partner receives of a response in this setting (``full``: the reasoning
        text the server returned apart, then the reply; R7)."""
        if self.setting == "full":
            return clip("\n\n".join(t for t in (reply.reasoning, reply.text) if t))
        if move is None:
            return "(no answer)"
        if self.setting == "action":
            return MOVE_CHARS[move]
        return _describe(probs)

    def _prompt(self, ep: Episode, k: int, speaker: str, obs: np.ndarray, taken: str,
                last_msg: str) -> tuple[dict, ...]:
        row = merge_views(obs) if speaker == "solo" else obs[k % 2]
        parts = [] if speaker == "solo" else [f"Round {k + 1} of {self.rounds}."]
        parts += [annotated(self.env.render_observation(row, k % 2)),
                  f"Moves so far: {' '.join(taken) if taken else '(none)'}"]
        if k > 0:
            parts.append(f"Your partner's latest message: {last_msg}")
        note = ep.take_note(speaker)
        if note:
            parts.append(note)
        return ({"role": "system", "content": self.system},
                {"role": "user", "content": "\n\n".join(parts)})

    def turn(self, ep: Episode, step: int, obs: np.ndarray) -> Turn:
        taken = ep.data.setdefault("moves", "")
        last_msg, team_move, prev_raw = "", None, None
        for k in range(self.rounds):
            speaker = "solo" if self.setting == "solo" else f"agent{k % 2}"
            messages = self._prompt(ep, k, speaker, obs, taken, last_msg)
            reqs = [Request(speaker, messages, nonce=f"{ep.index}:{step}:{k}:{m}")
                    for m in range(self.samples)]
            replies = yield reqs
            parsed_all = [parse_move(r.text, self.setting in VERBALIZED) for r in replies]
            for req, reply, (_, _, parsed) in zip(reqs, replies, parsed_all):
                parsed = self.refusal(reply) if reply.refused or reply.failure else parsed
                ep.record(speaker, step, req, reply, parsed, round=k)
            move, probs = self._round_result(parsed_all)
            raw = probs
            if probs is not None and self.calibrator is not None:
                probs = self._calibrate(k, probs, prev_raw)
            elif probs is not None and self.setting == "verbalized_naive":
                probs = naive_rare_action(probs)
            if probs is not None and self.setting in VERBALIZED:
                move = int(np.argmax(probs))
            prev_raw = raw
            team_move = move if move is not None else team_move
            ep.data.setdefault("rounds", []).append(
                {"step": step, "round": k, "move": move,
                 "probs": None if probs is None else probs.tolist(),
                 "raw": None if raw is None else raw.tolist()})
            last_msg = self._message(replies[0], move, probs)
        move = 0 if team_move is None else team_move  # no valid move at all: "d" (documented)
        if self.advance == "path":  # walked along the path: the true move, whatever was decided
            if "path" not in ep.data:  # solved once, from the two views at the start
                ep.data["path"] = solve_path(merge_views(obs), self.env.shape)
            move = ep.data["path"][step]
        ep.data["moves"] = taken + MOVE_CHARS[move]
        return np.full(2, move, np.int32)

    def _calibrate(self, k: int, probs: np.ndarray, prev: np.ndarray | None) -> np.ndarray:
        """Round ``k``'s conversation calibrator applied to ``(r_k, r_{k−1})`` (uniform
        ``r_0``; probabilities floored at 1e-6 before the log)."""
        prev = np.full(4, 0.25) if prev is None else prev
        feats = np.log(np.maximum(np.stack([probs, prev]), 1e-6))  # [F=2, C] (features())
        # apply_calibrator in NumPy: this runs in the host callback (jaxcollab.llm.hostonly)
        logits = feats.T @ self._cal_weights[k] + self._cal_bias[k]
        z = np.exp(logits - logits.max())
        return z / z.sum()

    def _round_result(self, parsed_all) -> tuple[int | None, np.ndarray | None]:
        """The round's move and communicated distribution (one-hot for a bare move; the
        reported vector in the probability settings and ``full``)."""
        moves = [m for m, _, p in parsed_all if m is not None]
        if self.setting == "sampled":
            if not moves:
                return None, None
            probs = np.bincount(moves, minlength=4) / len(moves)
            return int(np.argmax(probs)), probs
        move, probs, _ = parsed_all[0]
        if probs is not None and self.setting in (*VERBALIZED, "full"):
            return int(np.argmax(probs)), probs
        if move is not None:
            probs = np.eye(4)[move]
        return move, probs


def fit_conversation_calibrator(records: list[dict], rounds: int) -> tuple[Calibrator | None,
                                                                          dict]:
    """Per-round conversation calibrators fitted on the transcript records of a held-out
    ``verbalized`` run (paper §6, R3): every maze step where all ``rounds`` rounds reported a
    vector gives one example per round, labelled with the true move.

    Returns:
        ``(calibrator, fit)``: a :class:`~jaxcollab.collab.calibration.Calibrator` with a
        leading round axis, or ``None`` when no step had all ``rounds`` vectors (a model that
        never wrote one: nothing to fit); ``fit`` counts what was read: ``fitted`` (bool),
        ``records``, ``vectors`` (rounds with a vector, a bare move counting as its one-hot)
        and ``steps`` (steps used).
    """
    log_r, labels, vectors = [], [], 0
    for r in records:
        steps: dict[int, dict[int, list]] = {}
        for x in r["data"].get("rounds", []):
            vec = x.get("raw") or x["probs"]
            vectors += vec is not None
            steps.setdefault(x["step"], {})[x["round"]] = vec
        for s, by_round in steps.items():
            vecs = [by_round.get(k) for k in range(rounds)]
            if s < len(r["data"]["labels"]) and all(v is not None for v in vecs):
                log_r.append(np.log(np.maximum(np.asarray(vecs, float), 1e-6)))
                labels.append(r["data"]["labels"][s])
    fit = {"fitted": bool(log_r), "records": len(records), "vectors": vectors,
           "steps": len(labels)}
    if not log_r:
        return None, fit
    log_r = jnp.asarray(np.stack(log_r, axis=1), jnp.float32)  # [K, N, 4]
    targets = jax.nn.one_hot(jnp.asarray(labels), 4)
    return fit_rounds(CONVERSATION, log_r, targets), fit
