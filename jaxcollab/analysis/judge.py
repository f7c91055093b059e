"""Questions a judge model answers about an episode from its transcript: one code path, a
rubric per question.

A :class:`Rubric` (a family's) names the codes an episode can receive, the yes/no flags the
judge also answers, how one episode's transcript is shown to the judge, the key its reply names
the code by, and which deterministic flags check which judged code. Two bomb rubrics use it
(:mod:`jaxcollab.agents.bomb.sanzaru`): SANZARU Table 5's eight failure modes in three stages
for lost episodes (:func:`code_lost`, :func:`summary`), and the protocol family of Figs. 7-12
for the episodes its rules leave undetermined (:mod:`jaxcollab.agents.bomb.analysis`).
:func:`ask` sends one request per episode through :class:`jaxcollab.llm.client.ChatClient`
(any OpenAI-compatible endpoint; every request cached by content, so a rerun replays the
verdicts and sends nothing) and returns one :class:`Verdict` each; :func:`code_lost` stores
the failure verdicts, rationale beside the code, in the lost episodes' entries, and
:func:`summary` counts modes, stages and outcomes and reports the agreement of the judge with
the deterministic flags.

Every reply is an outcome, never a crash (:func:`parse_verdict`): ``coded`` (a valid code),
``unparsed`` (no valid code in the reply; the reason is kept), ``refused`` (a content-policy
refusal) or ``context_length`` (the transcript did not fit the judge's context).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from rich.progress import track

from jaxcollab.llm.client import ChatClient, Request

OUTCOMES = ("coded", "unparsed", "refused", "context_length")
RATIONALE_CHARS = 2000  # longest rationale kept per episode


@dataclasses.dataclass(frozen=True)
class Mode:
    """One code a rubric offers (a failure mode, a protocol family): its ``code`` (snake case),
    ``stage`` ("" for a rubric without stages), ``name`` as printed, ``definition`` (rubric
    text) and the endings it can have (``ends_by``; empty: any, not told to the judge)."""

    code: str
    stage: str
    name: str
    definition: str
    ends_by: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Rubric:
    """What the judge is asked and how its answers are checked.

    Attributes:
        source: where the modes come from (printed in ``analysis.json``).
        task: the game and the question, as the judge is told them.
        modes: the codes to choose from, in stage order.
        flags: judged yes/no flags → definition (may be empty).
        render: ``render(record, entry) -> str``, one episode's transcript (``record``, its
            transcript record) in compact form (``entry``: its deterministic analysis).
        checks: ``(deterministic flag, judged)`` pairs, ``judged`` ``mode:<code>`` or
            ``flag:<name>``: the flag should mark the episodes the judge codes so.
        heading: the line above the codes in the judge's instructions.
        key: the key of the reply's JSON object that names the code.
    """

    source: str
    task: str
    modes: tuple[Mode, ...]
    flags: Mapping[str, str]
    render: Callable[[dict, dict], str]
    checks: tuple[tuple[str, str], ...] = ()
    heading: str = "Failure modes (choose exactly one, the first thing that broke):"
    key: str = "mode"

    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(m.code for m in self.modes)

    @property
    def stages(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(m.stage for m in self.modes))

    def mode(self, code: str) -> Mode:
        return next(m for m in self.modes if m.code == code)


def system_prompt(rubric: Rubric) -> str:
    """The judge's instructions: the task, the heading and one line per code (by stage where
    the rubric has stages, with the endings where it names them), the flags (if any) and the
    reply format (one JSON object naming the code by :attr:`Rubric.key`)."""
    lines = [rubric.task, "", rubric.heading]
    for stage in rubric.stages:
        if stage:
            lines.append(f"Stage {stage}:")
        lines += [f"- {m.code}: {m.definition}"
                  + (f" (the episode ends by {' or '.join(m.ends_by)})" if m.ends_by else "")
                  for m in rubric.modes if m.stage == stage]
    if rubric.flags:
        lines += ["", "Also answer, for the whole episode, yes (true) or no (false):"]
        lines += [f"- {f}: {d}" for f, d in rubric.flags.items()]
    example = {"rationale": "two or three sentences citing steps", rubric.key: rubric.codes[0],
               **{f: False for f in rubric.flags}}
    lines += ["", "Reply with one JSON object and nothing else, e.g. " + json.dumps(example)
              + f". \"{rubric.key}\" is one of: {', '.join(rubric.codes)}."]
    return "\n".join(lines)


@dataclasses.dataclass(frozen=True)
class Verdict:
    """The judge's answer on one episode: ``outcome`` (one of :data:`OUTCOMES`), ``mode`` (a
    rubric code when coded, else None), ``rationale``, ``flags`` (name → bool, or None where
    the reply gave no yes/no) and ``reason`` (why it is not coded; "" when it is)."""

    outcome: str
    mode: str | None = None
    rationale: str = ""
    flags: Mapping[str, bool | None] = dataclasses.field(default_factory=dict)
    reason: str = ""


def _objects(text: str) -> list[dict]:
    """Every JSON object embedded in ``text`` (code fences, prose around it), in order."""
    decoder, out, i = json.JSONDecoder(), [], text.find("{")
    while i >= 0:
        try:
            obj, end = decoder.raw_decode(text, i)
        except (ValueError, RecursionError):
            end = i + 1
        else:
            if isinstance(obj, dict):
                out.append(obj)
        i = text.find("{", max(end, i + 1))
    return out


def _norm(value) -> str:
    return re.sub(r"[\s\-]+", "_", str(value).strip().strip("`'\".").lower())


def _yes_no(value) -> bool | None:
    if isinstance(value, bool):
        return value
    word = _norm(value)
    return {"true": True, "yes": True, "1": True, "false": False, "no": False,
            "0": False}.get(word)


def parse_verdict(text: str, rubric: Rubric) -> Verdict:
    """The verdict in a judge's reply ``text`` (never raises).

    Accepted: a JSON object with the rubric's :attr:`~Rubric.key` (a code, or a code's printed
    name, any case, spaces or hyphens for underscores) anywhere in the reply, the last such
    object winning; or a reply that is one code alone. Anything else is ``unparsed`` with the
    reason.
    """
    text = text if isinstance(text, str) else ""
    key = rubric.key
    names = {_norm(m.name): m.code for m in rubric.modes} | {m.code: m.code for m in rubric.modes}
    found = [o for o in _objects(text) if key in o]
    if not found:
        bare = names.get(_norm(text)) if len(text) < 80 else None
        if bare:
            return Verdict("coded", bare, flags={f: None for f in rubric.flags})
        return Verdict("unparsed", reason=f"no JSON object with a {key!r} key"
                       if text.strip() else "empty reply")
    obj = found[-1]
    rationale = str(obj.get("rationale", ""))[:RATIONALE_CHARS]
    flags = {f: _yes_no(obj.get(f)) for f in rubric.flags}
    code = names.get(_norm(obj[key])) if isinstance(obj[key], str) else None
    if code is None:
        return Verdict("unparsed", rationale=rationale, flags=flags,
                       reason=f"{key} {str(obj[key])[:60]!r} is not one of the rubric's codes")
    return Verdict("coded", code, rationale, flags)


def request(rubric: Rubric, transcript: str, nonce: str) -> Request:
    """The judge's request for one episode (``nonce``: the episode, ``env:episode``)."""
    return Request("judge", ({"role": "system", "content": system_prompt(rubric)},
                             {"role": "user", "content": transcript}), nonce=nonce)


def ask(client: ChatClient, rubric: Rubric, episodes: Sequence[tuple[str, str]],
        label: str = "judging episodes") -> list[Verdict]:
    """The judge's verdict on each episode, in order (never raises on a reply).

    Args:
        episodes: per episode ``(nonce, transcript)``: ``nonce`` names it (``env:episode``),
            ``transcript`` is its :attr:`Rubric.render` text.
        label: the progress bar's title (shown only past one batch).

    Raises:
        LLMError: the judge endpoint cannot serve (unreachable, unknown model).
    """
    reqs = [request(rubric, text, nonce) for nonce, text in episodes]
    size = 4 * client.cfg.concurrency  # batches keep the client's window full between bars
    replies = []
    for lo in track(range(0, len(reqs), size), label, disable=len(reqs) <= size):
        replies += client.complete_many(reqs[lo: lo + size])
    out = []
    for reply in replies:
        if reply.refused:
            out.append(Verdict("refused", reason=reply.text[:200]))
        elif reply.failure == "context_length":
            out.append(Verdict("context_length",
                               reason="the transcript exceeds the judge's context"))
        else:
            out.append(parse_verdict(reply.text, rubric))
    return out


def asker(client: ChatClient, rubrics: Mapping[str, Rubric]):
    """``ask(question, episodes) -> [Verdict]`` over the named ``rubrics`` (a family's
    :attr:`~jaxcollab.core.family.Analysis.questions`): each episode ``(nonce, record, entry)``
    rendered by the question's rubric and judged by :func:`ask` through ``client``."""
    def ask_question(question: str, episodes: Sequence[tuple[str, dict, dict]]) -> list[Verdict]:
        rubric = rubrics[question]
        return ask(client, rubric, [(n, rubric.render(r, e)) for n, r, e in episodes],
                   f"judging {question}")
    return ask_question


def code_lost(client: ChatClient, rubric: Rubric, lost: Sequence[dict],
              records: Mapping[tuple[str, int], dict]) -> list[dict]:
    """Each lost episode's entry with the judge's failure verdict (:func:`ask`) added:
    ``failure_mode`` and ``failure_stage`` (None unless coded), ``judge_outcome``,
    ``judge_rationale``, ``judge_reason`` (why not coded, else "") and the rubric's flags
    (bool or None).

    Args:
        lost: the deterministic entries of the lost episodes (``env``, ``episode``, ...).
        records: ``(env, episode)`` → the episode's transcript record.

    Raises:
        KeyError: a lost episode without a transcript record.
        LLMError: the judge endpoint cannot serve (unreachable, unknown model).
    """
    verdicts = ask(client, rubric, [
        (f"{e['env']}:{e['episode']}", rubric.render(records[(e["env"], int(e["episode"]))], e))
        for e in lost], "judging lost episodes")
    return [{**entry, "failure_mode": v.mode,
             "failure_stage": rubric.mode(v.mode).stage if v.mode else None,
             **fields(v), **{f: v.flags.get(f) for f in rubric.flags}}
            for entry, v in zip(lost, verdicts)]


def fields(v: Verdict) -> dict:
    """A verdict's ``judge_outcome``, ``judge_rationale`` and ``judge_reason`` entry keys."""
    return {"judge_outcome": v.outcome, "judge_rationale": v.rationale,
            "judge_reason": v.reason}


def _share(n: int, total: int) -> float | None:
    return n / total if total else None


def agreement(flag: Sequence[bool], judged: Sequence[bool]) -> dict:
    """Agreement of a deterministic flag with a judged code over the same episodes: counts
    ``both`` / ``flag_only`` / ``judge_only`` / ``neither``, ``agreement`` (share of episodes
    where they agree) and Cohen's ``kappa`` (None where undefined: fewer than one episode, or
    both raters constant and equal)."""
    pairs = Counter(zip(map(bool, flag), map(bool, judged)))
    n = sum(pairs.values())
    both, neither = pairs[(True, True)], pairs[(False, False)]
    p_o = _share(both + neither, n)
    kappa = None
    if n:
        pf, pj = (both + pairs[(True, False)]) / n, (both + pairs[(False, True)]) / n
        p_e = pf * pj + (1 - pf) * (1 - pj)
        kappa = None if p_e == 1 else (p_o - p_e) / (1 - p_e)
    return {"n": n, "both": both, "flag_only": pairs[(True, False)],
            "judge_only": pairs[(False, True)], "neither": neither, "agreement": p_o,
            "kappa": kappa}


def summary(rubric: Rubric, coded: Sequence[dict]) -> dict:
    """The judge's keys of ``analysis.json`` over the judged lost episodes ``coded``
    (:func:`code_lost` entries).

    Returns:
        ``source``, ``lost``, ``outcomes`` (count per :data:`OUTCOMES`), ``modes`` and
        ``stages`` (counts over coded episodes, every mode and stage listed), ``mode_stages``
        (mode → its stage), ``shares`` and
        ``stage_shares`` (shares of coded episodes; None with none coded), ``flags`` (share of
        the episodes with a yes/no answer that say yes, and how many answered),
        ``ending_consistent`` (share of coded episodes whose ending is one the mode can end by)
        and ``agreement`` (``<flag> vs <judged>`` → :func:`agreement` over coded episodes).
    """
    ok = [e for e in coded if e["judge_outcome"] == "coded"]
    modes = Counter(e["failure_mode"] for e in ok)
    stages = Counter(e["failure_stage"] for e in ok)
    checks = {}
    for flag, judged in rubric.checks:
        kind, _, name = judged.partition(":")
        have = [e for e in ok if flag in e and (kind == "mode" or e.get(name) is not None)]
        hit = [e["failure_mode"] == name if kind == "mode" else bool(e[name]) for e in have]
        checks[f"{flag} vs {judged}"] = agreement([e[flag] for e in have], hit)
    flags = {}
    for f in rubric.flags:
        said = [e[f] for e in coded if e.get(f) is not None]
        flags[f] = {"share": _share(sum(said), len(said)), "answered": len(said)}
    consistent = sum(e.get("ending") in rubric.mode(e["failure_mode"]).ends_by for e in ok)
    return {"source": rubric.source, "lost": len(coded),
            "outcomes": {o: sum(e["judge_outcome"] == o for e in coded) for o in OUTCOMES},
            "modes": {m: modes[m] for m in rubric.codes},
            "mode_stages": {m.code: m.stage for m in rubric.modes},
            "stages": {s: stages[s] for s in rubric.stages},
            "shares": {m: _share(modes[m], len(ok)) for m in rubric.codes},
            "stage_shares": {s: _share(stages[s], len(ok)) for s in rubric.stages},
            "flags": flags, "ending_consistent": _share(consistent, len(ok)),
            "agreement": checks}


__all__ = ["OUTCOMES", "Mode", "Rubric", "Verdict", "agreement", "ask", "asker", "code_lost",
           "fields", "parse_verdict", "request", "summary", "system_prompt"]
