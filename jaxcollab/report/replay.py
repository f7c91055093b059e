"""The step-by-step replay section: each replayed episode as pictures, one step at a time.

The family replays its run's first episodes (:attr:`jaxcollab.core.family.Draw.reel`: scripted
and learned teams from their seeds, LLM teams from their transcripts) and draws each step
(:attr:`~jaxcollab.core.family.Draw.pictures`: the state, then each role's view with what it
does not perceive greyed; for an LLM team, :attr:`~jaxcollab.core.family.Draw.turns` may add
pictures of what it decided, the maze team's probability vectors by round). Each episode is a
closed ``<details>`` with a slider and step buttons; its steps are inert JSON (picture indices
and the turns' markup), and every picture of the page is stored once, as its distinct SVG
pieces (:class:`Pictures`): the page's script builds a step's pictures only when that step is
shown, so a page of many episodes parses no picture until one is asked for. Beside the
pictures: the turns of that step from the transcript (who acted, what it said, its action, the
bounce and rejection notices it got, parse errors; its prompt and reply), and the analysis
codes of the episode at the step they name (``step``), else at its last step.
"""

from __future__ import annotations

import json
import re
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


#: Where a picture splits into its pieces: between every ``>`` and the ``<`` after it (the SVG
#: head, each element, ``</svg>``); joining the pieces gives the picture back, byte for byte.
_PIECE = re.compile(r"(?<=>)(?=<)")


def _json(value) -> Html:
    """``value`` as JSON safe inside a ``<script>`` element (no ``</`` or ``<!--`` in it)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return Html(text.replace("</", "<\\/").replace("<!--", "\\u003c!--"))


class Pictures:
    """Every picture of a page's replays, each distinct SVG piece stored once: ``add`` returns
    a picture's index, :meth:`html` is the store (``{"parts": [piece, ...], "pics": [[part
    index, ...], ...]}``) the page's script joins a picture from when a step is shown. A
    1,000-episode page repeats the same grid cells, outlines and labels in every step; stored
    once, they cost their bytes once."""

    def __init__(self):
        self._parts: dict[str, int] = {}
        self._pics: dict[str, int] = {}

    def add(self, svg: str) -> int:
        """The index of ``svg`` in the store (added if new)."""
        if svg not in self._pics:
            self._pics[svg] = len(self._pics)
        return self._pics[svg]

    def html(self) -> Html:
        """The store as the page's inert ``script#replay-pictures`` (JSON, parsed when first
        needed)."""
        pics = [[self._parts.setdefault(p, len(self._parts)) for p in _PIECE.split(svg)]
                for svg in self._pics]
        return tag("script", _json({"parts": list(self._parts), "pics": pics}),
                   type="application/json", id="replay-pictures")


def episode_replay(reel: Reel, record: Mapping | None, codes: Mapping | None,
                   store: Pictures) -> Html:
    """One replayed episode: slider, step buttons, the view the script fills, and its steps
    as inert JSON (``{"views": [name, ...], "steps": [[[picture index per view], html of the
    turns and codes], ...]}``; pictures added to ``store``), drawn only when shown."""
    draw = family(reel.env_name.split("/")[0]).draw
    last = len(reel.states) - 1
    steps, views = [], None
    codes = codes or {}
    for t, s in enumerate(reel.states):
        pics = draw.pictures(reel.env, s, reel.params)
        if record and draw.turns is not None:
            pics |= draw.turns(record, t)
        views = views or list(pics)
        at_step = codes and int(codes.get("step", last)) == t
        steps.append([[store.add(pics[v]) for v in views],
                      h("").join([*_turns_at(record, t), _codes(codes) if at_step else ""])])
    ending = (record or {}).get("ending", "")
    controls = tag("div", [tag("button", "◀", type="button", data_go="-1"),
                           Html(f'<input type="range" class="step" min="0" max="{last}" '
                                'value="0">'),
                           tag("button", "▶", type="button", data_go="1"),
                           tag("span", f"step 0 / {last}", class_="at")], class_="controls")
    head = [f"{reel.env_name} · episode {reel.episode} · {last} steps ",
            tag("span", ending, class_="badge") if ending else ""]
    return tag("details", [tag("summary", head), controls, tag("div", "", class_="view"),
                           tag("script", _json({"views": views, "steps": steps}),
                               type="application/json", class_="replay-steps")],
               class_="replay",
               id="replay-" + episode_id(reel.env_name, reel.episode).removeprefix("ep-"),
               data_steps=last + 1)


def episodes_html(run: RunDir, shown: list[Reel]) -> Html:
    """The replays of ``shown`` (episodes of ``run``), with their transcript records and
    analysis codes where the run has them, then the one store of their pictures."""
    coded = analysis_by_episode(run.analysis)
    records = {(env, int(r["episode"])): r for env, rs in run.transcripts.items() for r in rs}
    store = Pictures()
    parts = [episode_replay(r, records.get((r.env_name, r.episode)),
                            coded.get((r.env_name, r.episode)), store) for r in shown]
    return Html(h("").join([*parts, store.html()]))


def replay_section(run: RunDir) -> Html:
    """Every replayed episode of the run (:func:`reels`; :func:`episodes_html`)."""
    note = tag("p", "Each step: the state, then each role's view (grey: what that role does "
               "not perceive); the turns played at that step below. Use the slider, the "
               "buttons or the arrow keys.", class_="note")
    shown = reels(run)
    if not shown:
        return tag("p", "This run cannot be replayed (not an eval/rollout.py run of a team its "
                   "family replays).", class_="note")
    return Html(h("").join([note, episodes_html(run, shown)]))


__all__ = ["Pictures", "episode_replay", "episodes_html", "reels", "replay_section", "replays"]
