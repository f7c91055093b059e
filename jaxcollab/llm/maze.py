"""Split-mask mazes for LLM agents: the LLM protocol of "Narrowing the Collaboration Gap, Probably"
(§6, LLM setup; appendix "Experimental details").

Per maze step the two agents alternate for K rounds (default 4), agent 0 first. Each prompt holds
(i) the agent's legend-annotated masked maze (the environment's observation row), (ii) the moves
taken so far and (iii) the partner's most recent message; the agent answers a move after ``~`` and,
in the verbalized settings, a probability vector over ``d r u l`` after ``%``. The team's move is
the last speaker's; one wrong move ends the maze. Communication settings (what of the partner's
response is passed on): ``full`` (the whole response), ``action`` (the move), ``verbalized`` (the
reported vector), ``verbalized_calibrated`` (the reported vector after per-round conversation
calibrators fitted on the transcripts of a held-out ``verbalized`` run, paper Algorithm 1 / R3:
inputs ``log r_k`` and ``log r_{k−1}``), ``sampled`` (M independent responses per round, their
empirical move distribution) and ``solo`` (one agent sees the full maze, one query per step). In
the probability settings a round's move is the one given the highest probability (paper §6: "the
answer assigned the highest probability value"), the ``~`` move when no vector was read. Defaults
follow the paper: temperature 1.0, maze success with a 90 % bootstrap interval, and per-round
(conversation) calibration loss of the communicated vectors. Episode ``i`` plays maze instance
``i`` of the run's seed, as every other team does (the paper's 30 mazes x 10 rollouts is not
expressed: each episode is its own maze).
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.collab.calibration import (
    CONVERSATION,
    Calibrator,
    apply_calibrator,
    features,
    fit_rounds,
)
from jaxcollab.collab.metrics import (
    conversation_calibration_error,
    event_probs,
    self_calibration_error,
)
from jaxcollab.envs.maze.generator import MOVE_CHARS
from jaxcollab.llm.bridge import Episode, Game, Turn, clip
from jaxcollab.llm.client import Request
from jaxcollab.llm.parse import Parsed

#: Communication settings (module docstring).
SETTINGS = ("full", "action", "verbalized", "verbalized_calibrated", "sampled", "solo")
_MOVE = re.compile(r"~[ \t]*(down|right|up|left|[drul])(?![a-z])", re.I)
_NUM = r"(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][+-]?\d+)?"
_SEP = r"[ \t]*[,;]?[ \t]*"
#: ``%`` then exactly four numbers on one line (``[`` ``]`` optional); a fifth number on the line
#: means a row of numbers (the maze's column header), not a probability vector.
_PROBS = re.compile(rf"%[ \t]*\[?[ \t]*({_NUM}(?:{_SEP}{_NUM}){{3}})(?!{_SEP}(?:\d|\.\d))")
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
    from jaxcollab.envs.maze.text import UNSEEN

    return np.where(rows[0] == UNSEEN, rows[1], rows[0])


def system_prompt(setting: str, rounds: int) -> str:
    """The instructions for ``setting`` (paper §6 LLM setup).

    Raises:
        ValueError: unknown setting, or ``verbalized_calibrated`` (needs a fitted calibrator).
    """
    if setting not in SETTINGS:
        raise ValueError(f"unknown communication setting {setting!r}; valid: {SETTINGS}")
    legend = ("Legend: # wall, . open cell, ? cell you cannot see, @ the team's current "
              "position. Rows are numbered from the top, columns from the left. The path starts "
              "at row 1, column 1 and ends at the bottom-right cell; exactly one path of open "
              "cells leads there. Moves: d (down), r (right), u (up), l (left).")
    probs = (" Then give your probability for each move, in the order d, r, u, l, after the "
             "delimiter %, e.g. % 0.6, 0.3, 0.05, 0.05." if setting.startswith("verbalized")
             else "")
    if setting == "solo":
        task = "You see the whole maze. Choose the team's next move along the path."
    else:
        task = (f"You and a partner each see a different half of the maze. You talk for "
                f"{rounds} rounds before each move, taking turns; the last speaker's move is the "
                f"team's. A single wrong move ends the maze.")
    return (f"{task}\n\n{legend}\n\nThink briefly, then give your move after the delimiter ~, "
            f"e.g. ~d.{probs}")


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


class MazeGame(Game):
    """Host side of the maze protocol.

    Args:
        env: a :class:`~jaxcollab.envs.maze.MazeEnv`.
        setting: a communication setting (:data:`SETTINGS`).
        rounds: K rounds of conversation per maze step (paper: 4).
        samples: M responses per round in the ``sampled`` setting.

    Raises:
        ValueError: bad setting, ``rounds < 1`` or ``samples < 1``.
    """

    roles = ("agent0", "agent1", "solo")

    def __init__(self, env, setting: str = "action", rounds: int = 4, samples: int = 5,
                 calibrator: Calibrator | None = None):
        if int(rounds) < 1 or int(samples) < 1:
            raise ValueError(f"need rounds >= 1 and samples >= 1, got {rounds!r}, {samples!r}")
        self.system = system_prompt(setting, int(rounds))
        if (setting == "verbalized_calibrated") != (calibrator is not None):
            raise ValueError("setting 'verbalized_calibrated' needs a calibrator (fit_calibrator "
                             "on a held-out 'verbalized' run: maze.calibration_dir=DIR), and only "
                             f"it takes one; got setting {setting!r}")
        self.env, self.setting, self.calibrator = env, setting, calibrator
        self.rounds = 1 if setting == "solo" else int(rounds)
        self.samples = int(samples) if setting == "sampled" else 1

    def action_struct(self):
        return jax.ShapeDtypeStruct((2,), np.int32)

    def noop(self):
        return np.zeros(2, np.int32)

    def _message(self, reply: str, move, probs) -> str:
        """What the partner receives of a response in this setting."""
        if self.setting == "full":
            return reply
        if move is None:
            return "(no answer)"
        if self.setting == "action":
            return MOVE_CHARS[move]
        return _describe(probs)

    def turn(self, ep: Episode, step: int, obs: np.ndarray) -> Turn:
        taken = ep.data.setdefault("moves", "")
        last_msg, team_move, prev_raw = "", None, None
        for k in range(self.rounds):
            speaker = "solo" if self.setting == "solo" else f"agent{k % 2}"
            row = merge_views(obs) if speaker == "solo" else obs[k % 2]
            parts = [annotated(self.env.render_observation(row, k % 2)),
                     f"Moves so far: {' '.join(taken) if taken else '(none)'}"]
            if k > 0:
                parts.append(f"Your partner's latest message: {last_msg}")
            note = ep.take_note(speaker)
            if note:
                parts.append(note)
            req_msgs = ({"role": "system", "content": self.system},
                        {"role": "user", "content": "\n\n".join(parts)})
            reqs = [Request(speaker, req_msgs, nonce=f"{ep.index}:{step}:{k}:{m}")
                    for m in range(self.samples)]
            replies = yield reqs
            parsed_all = [parse_move(r.text, self.setting.startswith("verbalized"))
                          for r in replies]
            for req, reply, (_, _, parsed) in zip(reqs, replies, parsed_all):
                parsed = self.refusal(reply) if reply.refused or reply.failure else parsed
                ep.record(speaker, step, req, reply, parsed, round=k)
            move, probs = self._round_result(parsed_all)
            raw = probs
            if self.calibrator is not None and probs is not None:
                probs = self._calibrate(k, probs, prev_raw)
                move = int(np.argmax(probs))
            prev_raw = raw
            team_move = move if move is not None else team_move
            ep.data.setdefault("rounds", []).append(
                {"step": step, "round": k, "probs": None if probs is None else probs.tolist(),
                 "raw": None if raw is None else raw.tolist()})
            last_msg = self._message(clip(replies[0].text), move, probs)
        move = 0 if team_move is None else team_move  # no valid move at all: "d" (documented)
        ep.data["moves"] = taken + MOVE_CHARS[move]
        return np.full(2, move, np.int32)

    def _calibrate(self, k: int, probs: np.ndarray, prev: np.ndarray | None) -> np.ndarray:
        """Round ``k``'s conversation calibrator applied to ``(r_k, r_{k−1})`` (uniform
        ``r_0``; probabilities floored at 1e-6 before the log)."""
        prev = np.full(4, 0.25) if prev is None else prev
        logs = [np.log(np.maximum(p, 1e-6)) for p in (probs, prev)]
        feats = features(CONVERSATION, *(jnp.asarray(x, jnp.float32) for x in logs))
        cal = jax.tree.map(lambda x: x[k], self.calibrator)
        return np.asarray(jnp.exp(apply_calibrator(cal, feats)), np.float64)

    def _round_result(self, parsed_all) -> tuple[int | None, np.ndarray | None]:
        """The round's move and communicated distribution (one-hot for a bare move)."""
        moves = [m for m, _, p in parsed_all if m is not None]
        if self.setting == "sampled":
            if not moves:
                return None, None
            probs = np.bincount(moves, minlength=4) / len(moves)
            return int(np.argmax(probs)), probs
        move, probs, _ = parsed_all[0]
        if probs is not None and self.setting.startswith("verbalized"):
            return int(np.argmax(probs)), probs
        if move is not None and probs is None:
            probs = np.eye(4)[move]
        return move, probs


def bootstrap_success(success: np.ndarray, n_boot: int = 2000, level: float = 0.9,
                      seed: int = 0) -> dict:
    """Mean maze success and its bootstrap interval pooled across mazes.

    Args:
        success: bool/float ``[n_mazes, n_rollouts]``.

    Returns:
        ``{"mean", "ci_low", "ci_high", "level"}``: rollouts are resampled within each maze
        (pooled variance across mazes, paper §6) and the percentile interval of the mean taken.
    """
    success = np.asarray(success, float)
    rng = np.random.default_rng(seed)
    m, r = success.shape
    idx = rng.integers(0, r, (n_boot, m, r))
    means = success[np.arange(m)[None, :, None], idx].mean(axis=(1, 2))
    lo, hi = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return {"mean": float(success.mean()), "ci_low": float(lo), "ci_high": float(hi),
            "level": level}


def calibration_by_round(rounds: list[dict], labels: dict[int, int], n_rounds: int,
                         n_bins: int = 10) -> list[float | None]:
    """Calibration loss of the communicated vectors per round: self-calibration error in round
    1, conversation-calibration error against the previous round's vector after (paper §6,
    Fig. 7b). ``rounds``: records ``{"step", "round", "probs"}`` of one rollout in order;
    ``labels``: true move per step. Rounds without vectors give ``None``."""
    out = []
    by_step: dict[int, dict[int, list]] = {}
    for r in rounds:
        by_step.setdefault(r["step"], {})[r["round"]] = r["probs"]
    for k in range(n_rounds):
        rows = [(v[k], v.get(k - 1), labels[s]) for s, v in by_step.items()
                if s in labels and v.get(k) is not None and (k == 0 or v.get(k - 1) is not None)]
        if not rows:
            out.append(None)
            continue
        p = np.array([a for a, _, _ in rows], np.float32)
        y = np.array([c for _, _, c in rows], np.int32)
        if k == 0:
            pe, ye, _ = event_probs(p, y)
            out.append(float(self_calibration_error(pe, ye, n_bins=n_bins)))
        else:
            prev = np.array([b for _, b, _ in rows], np.float32)
            pe, ye, pp = event_probs(p, y, prev)
            out.append(float(conversation_calibration_error(pe, pp, ye, n_bins=n_bins)))
    return out


def fit_conversation_calibrator(records: list[dict], rounds: int) -> Calibrator:
    """Per-round conversation calibrators fitted on the transcript records of a held-out
    ``verbalized`` run (paper §6, R3): every maze step where all ``rounds`` rounds reported a
    vector gives one example per round, labelled with the true move.

    Returns:
        A :class:`~jaxcollab.collab.calibration.Calibrator` with a leading round axis.

    Raises:
        ValueError: no usable step (names the number of records read).
    """
    log_r, labels = [], []
    for r in records:
        steps: dict[int, dict[int, list]] = {}
        for x in r["data"].get("rounds", []):
            steps.setdefault(x["step"], {})[x["round"]] = x.get("raw") or x["probs"]
        for s, by_round in steps.items():
            vecs = [by_round.get(k) for k in range(rounds)]
            if s < len(r["data"]["labels"]) and all(v is not None for v in vecs):
                log_r.append(np.log(np.maximum(np.asarray(vecs, float), 1e-6)))
                labels.append(r["data"]["labels"][s])
    if not log_r:
        raise ValueError(f"no maze step with {rounds} reported vectors in {len(records)} "
                         f"calibration records (need a finished 'verbalized' run)")
    log_r = jnp.asarray(np.stack(log_r, axis=1), jnp.float32)  # [K, N, 4]
    targets = jax.nn.one_hot(jnp.asarray(labels), 4)
    return fit_rounds(CONVERSATION, log_r, targets)
