"""The step-by-step replay section: each replayed episode as pictures, one step at a time.

The family replays its run's first episodes (:attr:`jaxcollab.core.family.Draw.reel`: scripted
and learned teams from their seeds, LLM teams from their transcripts) and draws each step
(:attr:`~jaxcollab.core.family.Draw.pictures`: the state, then each role's view with what it
does not perceive greyed). Each episode is a closed ``<details>`` with a slider and step
buttons; each step is an inert ``<template>`` (the page's script clones the one chosen into
view), so a page of many episodes parses its pictures but lays none out until asked. Beside
the pictures: the turns of that step from the transcript (who acted, what it said, its action,
the bounce and rejection notices it got, parse errors; its prompt and reply), and the analysis
codes of the episode at the step they name (``step``), else at its last step.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from jaxcollab.core.family import Reel
from jaxcollab.core.registry import family
from jaxcollab.report.html import Html, h, tag
from jaxcollab.report.rundir import RunDir
from jaxcollab.report.transcripts import analysis_by_episode, badges, episode_id


def replays(run: RunDir) -> bool:
    """Whether the report replays ``run``: ``run.replay > 0`` and its family draws runs."""
    try:
        plugin = family(run.family)
    except KeyError:
        return False
    return run.replay > 0 and plugin.draw is not None and plugin.draw.reel is not None


def reels(run: RunDir) -> list[Reel]:
    """The run's replayed episodes (``run.replay`` per environment), ``[]`` when its family
    draws no runs or cannot replay this one."""
    if not replays(run):
        return []
    return family(run.family).draw.reel(run.results, run.path, run.replay)


def _turns_at(record: Mapping | None, step: int) -> list[Html]:
    """The transcript turns of ``step``: agent, said, action, notices and errors, prompt and
    reply."""
    out = []
    for agent, turns in ((record or {}).get("agents") or {}).items():
        for t in turns:
            if int(t.get("step", -1)) != step:
                continue
            seen = str(t.get("seen") or "")
            notices = [x for x in seen.splitlines() if x.startswith("NOTICE")]
            action = t.get("action")
            head = [tag("span", agent, class_="who"), " · ",
                    tag("code", "no action" if action is None else json.dumps(
                        action, ensure_ascii=False)),
                    *(tag("span", e, class_="badge bad") for e in t.get("errors") or []),
                    *(tag("span", n.removeprefix("NOTICE "), class_="badge warn bounce")
                      for n in notices)]
            said = t.get("said")
            body = [tag("div", ["said: ", tag("q", said)], class_="said") if said else "",
                    tag("details", [tag("summary", "prompt (what it saw) and reply"),
                                    tag("pre", seen), tag("pre", t.get("reply") or "")])]
            out.append(tag("div", [tag("div", head), *body], class_="replay-turn",
                           data_agent=agent))
    return out


def _codes(codes: Mapping) -> Html:
    return tag("div", badges({k: v for k, v in codes.items() if k != "step"}),
               class_="replay-codes")


def _frame(pictures: dict[str, str], step: int, last: int, record, codes) -> Html:
    figs = [tag("figure", [Html(svg), tag("figcaption", name)], class_="pic",
                data_view=name) for name, svg in pictures.items()]
    at_step = codes and int(codes.get("step", last)) == step
    return tag("template", [tag("div", figs, class_="pics"), *_turns_at(record, step),
                            _codes(codes) if at_step else ""], data_step=step)


def episode_replay(reel: Reel, record: Mapping | None, codes: Mapping | None) -> Html:
    """One replayed episode: slider, step buttons, the view the script fills, and one
    ``<template>`` per step (module docstring)."""
    draw = family(reel.env_name.split("/")[0]).draw
    last = len(reel.states) - 1
    frames = [_frame(draw.pictures(reel.env, s, reel.params), t, last, record, codes or {})
              for t, s in enumerate(reel.states)]
    ending = (record or {}).get("ending", "")
    controls = tag("div", [tag("button", "◀", type="button", data_go="-1"),
                           Html(f'<input type="range" class="step" min="0" max="{last}" '
                                'value="0">'),
                           tag("button", "▶", type="button", data_go="1"),
                           tag("span", f"step 0 / {last}", class_="at")], class_="controls")
    head = [f"{reel.env_name} · episode {reel.episode} · {last} steps ",
            tag("span", ending, class_="badge") if ending else ""]
    return tag("details", [tag("summary", head), controls, tag("div", "", class_="view"),
                           *frames], class_="replay",
               id="replay-" + episode_id(reel.env_name, reel.episode).removeprefix("ep-"),
               data_steps=last + 1)


def replay_section(run: RunDir) -> Html:
    """Every replayed episode of the run (:func:`reels`), with its transcript record and
    analysis codes where the run has them."""
    coded = analysis_by_episode(run.analysis)
    records = {(env, int(r["episode"])): r for env, rs in run.transcripts.items() for r in rs}
    parts = [tag("p", "Each step: the state, then each role's view (grey: what that role does "
                 "not perceive); the turns played at that step below. Use the slider, the "
                 "buttons or the arrow keys.", class_="note")]
    shown = reels(run)
    if not shown:
        return tag("p", "This run cannot be replayed (not an eval/rollout.py run of a team its "
                   "family replays).", class_="note")
    parts += [episode_replay(r, records.get((r.env_name, r.episode)),
                             coded.get((r.env_name, r.episode))) for r in shown]
    return Html(h("").join(parts))


__all__ = ["episode_replay", "reels", "replay_section", "replays"]
