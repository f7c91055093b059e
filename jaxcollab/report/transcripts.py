"""Every LLM episode, browsable by episode, step and role (from eval/llm.py transcripts).

Each turn shows what the agent saw, the feedback it was given (the parser's NOTICE on a skipped
or repaired turn, GPTNT §4), what it thought and said (its reply, verbatim), what it did (the
parsed action), its parse errors, and the prompt messages new since its previous turn (prompts
grow by appending, so earlier messages are not repeated). Anchors: an episode is
``ep-<env with / as ->-<episode>``, one agent's turn in it ``<episode anchor>-s<step>-<agent>``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from jaxcollab.report.html import Html, h, keyvalue, tag

THOUGHTS = re.compile(r"<thoughts?>(.*?)</thoughts?>", re.S)
_TURN_SHOWN = {"step", "prompt", "reply", "said", "seen", "action", "tool_calls", "errors",
               "ok", "refused"}


def episode_id(env: str, episode) -> str:
    return f"ep-{env.replace('/', '-')}-{episode}"


def analysis_by_episode(analysis: Mapping | None) -> dict[tuple[str, int], dict]:
    """``analysis.json``'s per-episode entries keyed ``(env, episode)``: its ``lost_episodes``
    (``eval/analyze.py``: objects with ``variant`` and ``episode``) or ``episodes`` as a list of
    objects with ``env`` and ``episode``, or an object keyed ``"<env>:<episode>"``; anything
    else (or no analysis) gives ``{}``."""
    analysis = analysis or {}
    eps = analysis.get("lost_episodes")
    if not isinstance(eps, list | Mapping):  # eval/analyze.py's list, else a count
        eps = analysis.get("episodes")
    out = {}
    if isinstance(eps, list):
        for e in eps:
            if isinstance(e, Mapping) and "episode" in e:
                out[(str(e.get("env", e.get("variant", ""))), int(e["episode"]))] = dict(e)
    elif isinstance(eps, Mapping):
        for key, e in eps.items():
            env, _, ep = str(key).rpartition(":")
            if ep.isdigit() and isinstance(e, Mapping):
                out[(env, int(ep))] = dict(e)
    return out


def badges(codes: Mapping) -> Html:
    """An episode's analysis codes as warning badges (each with its ``data-flag``); its
    ``env``, ``episode`` and prose (``*_rationale``, ``*_reason``) are left out."""
    out = []
    for k, v in codes.items():
        if k in ("env", "episode") or k.endswith(("_rationale", "_reason")):
            continue  # prose: in the episode's "analysis codes" table, not a badge
        if v is True:
            out.append(tag("span", k, class_="badge warn", data_flag=k))
        elif isinstance(v, str | int | float) and v is not False:
            out.append(tag("span", f"{k}: {v}", class_="badge warn", data_flag=k))
        elif isinstance(v, list) and v and all(isinstance(x, str) for x in v):
            out += [tag("span", x, class_="badge warn", data_flag=x) for x in v]
    return Html("".join(out))


def _field(label: str, body, cls: str | None = None) -> Html:
    return tag("div", [tag("div", label, class_="label"), tag("pre", body, class_=cls)],
               class_="field")


def _last_user(prompt: list) -> str:
    users = [m.get("content", "") for m in prompt if m.get("role") == "user"]
    return str(users[-1]) if users else ""


def _new_messages(prompt: list, previous: list) -> tuple[int, list]:
    """``(shared, new)``: how many leading messages equal the previous prompt's, and the rest."""
    shared = 0
    while shared < min(len(prompt), len(previous)) and prompt[shared] == previous[shared]:
        shared += 1
    return shared, prompt[shared:]


def _prompt(prompt: list, previous: list) -> Html:
    shared, new = _new_messages(prompt, previous)
    msgs = [tag("div", [tag("div", m.get("role", "?"), class_="msg-role"),
                        tag("pre", m.get("content", ""))]) for m in new]
    note = (tag("p", f"+ {shared} earlier messages, as in this agent's previous turn",
                class_="note") if shared else "")
    return tag("details", [tag("summary", f"prompt: {len(prompt)} messages, {len(new)} new"),
                           note, *msgs], class_="prompt")


def _turn(agent: str, turn: Mapping, previous: list, anchor: str) -> Html:
    prompt = turn.get("prompt") or []
    seen = turn.get("seen") or _last_user(prompt)
    feedback = "\n".join(line for line in str(seen).splitlines() if line.startswith("NOTICE"))
    reply = str(turn.get("reply") or "")
    thought = "\n\n".join(t.strip() for t in THOUGHTS.findall(reply))
    errors = list(turn.get("errors") or [])
    failed = turn.get("ok") is False or turn.get("refused")
    action = turn.get("action")
    did = "no action (turn skipped)" if action is None else json.dumps(action,
                                                                        ensure_ascii=False)
    head = [tag("span", agent, class_="who"), f" · step {turn.get('step', '?')} · ",
            tag("code", did if len(did) <= 90 else did[:89] + "…", class_="did"),
            *(tag("span", e, class_="badge bad") for e in errors),
            tag("span", "refused", class_="badge bad") if turn.get("refused") else ""]
    body = [_field("saw", seen)]
    if feedback:
        body.append(_field("feedback", feedback, "feedback"))
    if thought:
        body.append(_field("thought", thought, "thought"))
    body.append(_field("reply (said)", reply))
    if turn.get("said") not in (None, reply):
        body.append(_field("said", turn["said"]))
    body.append(_field("did", did))
    if turn.get("tool_calls"):
        body.append(_field("tool calls", json.dumps(turn["tool_calls"], ensure_ascii=False,
                                                    indent=1)))
    rest = {k: v for k, v in turn.items() if k not in _TURN_SHOWN}
    if rest:
        body.append(tag("p", " · ".join(f"{k} {v}" for k, v in sorted(rest.items())),
                        class_="note"))
    body.append(_prompt(prompt, previous))
    return tag("details", [tag("summary", head), *body], open=True, data_agent=agent,
               data_step=turn.get("step"), id=anchor, class_="turn failed" if failed else "turn")


def episode(record: Mapping, codes: Mapping | None) -> Html:
    """One episode as a closed ``<details>`` (anchor :func:`episode_id`)."""
    env, ep = str(record.get("env", "")), record.get("episode")
    agents = list(record.get("agents", {}))
    turns = sorted(((t.get("step", 0), agents.index(a), a, t)
                    for a, ts in record.get("agents", {}).items() for t in ts),
                   key=lambda x: (x[0], x[1]))
    won = bool(record.get("success"))
    n_err = sum((record.get("parse_errors") or {}).values())
    head = [f"episode {ep} ", tag("span", record.get("ending", "won" if won else "lost"),
                                  class_="badge good" if won else "badge bad"),
            f" · {record.get('steps', len(turns))} steps",
            f" · {n_err} parse errors" if n_err else "", badges(codes or {})]
    roles = tag("select", [tag("option", "all roles", value="all"),
                           *(tag("option", a, value=a) for a in agents)], class_="role-filter")
    body, last, seen = [], {}, set()
    for step, _, agent, turn in turns:
        anchor = f"{episode_id(env, ep)}-s{step}-{agent}"
        while anchor in seen:  # a retried turn (a refusal asks again) at the same step
            anchor += "-again"
        seen.add(anchor)
        body.append(_turn(agent, turn, last.get(agent, []), anchor))
        last[agent] = turn.get("prompt") or []
    facts = {k: v for k, v in record.items() if k not in ("agents", "data", "env", "episode")}
    extras = [keyvalue(facts, caption="episode")]
    if record.get("data"):
        extras.append(keyvalue(record["data"], caption="game data"))
    if codes:
        extras.append(keyvalue({k: v for k, v in codes.items() if k not in ("env", "episode")},
                               caption="analysis codes"))
    return tag("details", [tag("summary", head), tag("div", ["show ", roles], class_="controls"),
                           *body, *extras], id=episode_id(env, ep), class_="episode",
               data_success="true" if won else "false")


def episodes_section(run) -> Html:
    """Every transcript of the run, one list per environment, filterable by outcome."""
    coded = analysis_by_episode(run.analysis)
    parts = []
    for env, records in run.transcripts.items():
        won = sum(bool(r.get("success")) for r in records)
        pick = tag("select", [tag("option", "all", value="all"), tag("option", "lost",
                                                                     value="false"),
                              tag("option", "won", value="true")], class_="episode-filter")
        parts.append(tag("div", [
            tag("h3", f"{env}: {len(records)} episodes, {won} won"),
            tag("div", ["show ", pick], class_="controls"),
            *(episode(r, coded.get((env, int(r["episode"])))) for r in records)],
            class_="episodes", data_env=env))
    return Html(h("").join(parts) if parts else "")
