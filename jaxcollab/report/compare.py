"""Several runs side by side: success by family, variant and module with 90 % Wilson intervals
(e.g. an LLM team, a scripted team and the oracle on the same environments)."""

from __future__ import annotations

from collections import Counter

from jaxcollab.io import plots as figures
from jaxcollab.report.html import Html, png, rate, table, tag
from jaxcollab.report.rundir import RunDir
from jaxcollab.report.sections import INTERVAL_NOTE
from jaxcollab.report.stats import with_intervals
from jaxcollab.report.tables import Row, family_rows, overall_row, variant_rows
from jaxcollab.report.transcripts import analysis_by_episode


def labels(runs: list[RunDir]) -> list[str]:
    """Column labels: each run's :attr:`RunDir.label`, the directory name added where two
    runs share one."""
    base = [r.label for r in runs]
    dup = {k for k, v in Counter(base).items() if v > 1}
    return [f"{b} ({r.path.name})" if b in dup else b for b, r in zip(base, runs, strict=True)]


def _level(runs, names, rows_of, title, tid) -> Html:
    per_run = [{n: (r, k) for n, r, k in rows_of(run.results)} for run in runs]
    order = list(dict.fromkeys(n for rows in per_run for n in rows))
    if not order:
        return Html("")
    body = [[n, *(rate(*rows[n]) if n in rows else rate(None, None) for rows in per_run)]
            for n in order]
    plot = figures.success_bars(order, {lab: with_intervals([rows.get(n, (None, 0)) for n in order])
                                        for lab, rows in zip(names, per_run, strict=True)},
                                title)
    return Html(table(["", *names], body, caption=title, id=tid)
                + tag("figure", png(plot, title)))


def _overall(results) -> list[Row]:
    row = overall_row(results)
    return [row] if row else []


def _page_link(run: RunDir) -> Html:
    """A cell linking the run's own page (``<run>/report.html``), or ``–`` when it has none
    yet (``eval/report.py runs=DIR`` writes it)."""
    page = run.path.resolve() / "report.html"
    return tag("td", tag("a", "report.html", href=page.as_uri()) if page.is_file() else "–")


def compare_section(runs: list[RunDir]) -> Html:
    names = labels(runs)
    parts = [table(["run", "directory", "env", "its page"],
                   [[n, str(r.path), r.env, _page_link(r)]
                    for n, r in zip(names, runs, strict=True)],
                   caption="Runs compared", id="runs")]
    parts.append(_level(runs, names, _overall, "Success rate, all episodes", "compare-all"))
    parts.append(_level(runs, names, family_rows, "Success rate by family", "compare-families"))
    parts.append(_level(runs, names, variant_rows, "Success rate by variant or module",
                        "compare-variants"))
    modes = [Counter(str(e["failure_mode"]) for e in analysis_by_episode(r.analysis).values()
                     if e.get("failure_mode")) for r in runs]
    if any(modes):
        kinds = sorted(set().union(*modes))
        parts.append(tag("figure", png(figures.stacked_counts(
            names, {k: [m[k] for m in modes] for k in kinds},
            "Failure modes of lost episodes (as SANZARU Fig. 4)"), "failure modes")))
    return Html("".join(parts) + INTERVAL_NOTE)
