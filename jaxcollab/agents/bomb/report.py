"""The bomb family's sections of a run's report (``eval/report.py``; the plug-in's
:attr:`~jaxcollab.core.family.Family.report`): the instance bank's tables (SANZARU Tables 3
and 4)."""

from __future__ import annotations

from collections.abc import Mapping

from jaxcollab.report.html import Html, keyvalue, rate, table, tag
from jaxcollab.report.rundir import RunDir
from jaxcollab.report.sections import INTERVAL_NOTE, Section


def bank(run: RunDir) -> Html:
    """The bank protocol's ``summary``: by family and subset (Table 3's columns) and, with a
    solo team, trio / solo / gap rows (Table 4)."""
    s = run.results["summary"]
    fams = list(s.get("families", {}))
    groups = [g for g in ("core", "plus", "all") if g in s]
    header = ["", *fams, *(g.capitalize() for g in groups)]

    def line(name: str, summary: Mapping) -> list:
        cells = [summary.get("families", {}).get(f) for f in fams] + [summary.get(g)
                                                                      for g in groups]
        return [name, *(rate(c["success_rate"], c["episodes"]) if c else rate(None, None)
                        for c in cells)]

    parts = [table(header, [line(run.label, s)], id="bank-table3",
                   caption="Success rate by family and subset (layout of SANZARU Table 3)",
                   class_="wide")]
    if "solo" in s:
        gap = s.get("gap", {})
        gaps = [gap.get("families", {}).get(f) for f in fams] + [gap.get(g) for g in groups]
        gap_row = ["Gap (solo − trio, points)",
                   *(tag("td", "–" if g is None else f"{100 * g:+.1f}", class_="num",
                         data_value=g) for g in gaps)]
        parts.append(table(header, [line("Trio", s), line("Solo", s["solo"]), gap_row],
                           id="bank-table4", class_="wide",
                           caption="Coordination cost (layout of SANZARU Table 4)"))
    if "protocol" in run.results:
        parts.append(keyvalue({k: v for k, v in run.results["protocol"].items() if k != "envs"},
                              caption="Bank protocol"))
    return Html("".join(parts) + INTERVAL_NOTE)


#: The bomb family's report sections.
SECTIONS = (
    Section("bank", "Instance bank (SANZARU Tables 3, 4)", ("summary", "protocol"), bank,
            lambda run: isinstance(run.results.get("summary"), Mapping)
            and "all" in run.results["summary"], after="overview"),
)
