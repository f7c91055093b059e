"""The run report: one self-contained HTML page for any run directory (issue 26 items 4-5).

:func:`write_report` reads one run directory (:class:`~jaxcollab.report.rundir.RunDir`) or
several, renders the sections that apply (:data:`~jaxcollab.report.sections.SECTIONS`, plus a
side-by-side comparison for several runs) and writes one HTML file: inline style sheet and
script, plots embedded as PNG data URLs, no network needed to open it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from jaxcollab.report.compare import compare_section, labels
from jaxcollab.report.html import Html, page, tag
from jaxcollab.report.rundir import NotARunError, RunDir
from jaxcollab.report.sections import run_sections

__all__ = ["NotARunError", "RunDir", "render", "write_report"]


def render(runs: Sequence[RunDir]) -> str:
    """The page for one run (its sections) or several (the comparison, then each run's
    sections, section anchors prefixed ``run<i>-``)."""
    if len(runs) == 1:
        run = runs[0]
        return page(f"{run.env or run.path.name} — {run.label}", str(run.path),
                    run_sections(run))
    sections = [("compare", "Side by side", compare_section(list(runs)))]
    for i, (name, run) in enumerate(zip(labels(list(runs)), runs, strict=True)):
        body = Html("".join(tag("div", [tag("h3", title), html], id=f"run{i}-{sid}")
                            for sid, title, html in run_sections(run)))
        sections.append((f"run{i}", name, body))
    return page("Comparison: " + ", ".join(labels(list(runs))),
                " · ".join(str(r.path) for r in runs), sections)


def write_report(paths: Sequence[str | Path], out: str | Path | None = None,
                 replay: int = 0) -> Path:
    """Write the report of the run directories ``paths``; returns the file written.

    Args:
        paths: one or more run directories, each holding ``results.json``.
        out: the HTML file; default ``<run>/report.html`` for one run and
            ``<first run>/compare.html`` for several.
        replay: episodes per environment replayed step by step (:mod:`.replay`), 0: none.

    Raises:
        NotARunError: a path that is not a run directory (named).
    """
    runs = [RunDir.load(p, replay) for p in paths]
    if not runs:
        raise NotARunError("[]", "the list is empty")
    target = Path(out) if out is not None else runs[0].path / (
        "report.html" if len(runs) == 1 else "compare.html")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render(runs), encoding="utf-8")
    return target
