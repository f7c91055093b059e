"""A paper's tables assembled from finished runs (``eval/tables.py``), family-blind.

Each family's wing states the tables of the papers it reproduces (its ``paper.py``, reached
through :attr:`jaxcollab.core.family.Family.tables`): a :class:`PaperTable` builds its rows from
the runs given. Here they are written as Markdown, as CSV (one line per cell, with the 90 %
Wilson interval of every success rate, :mod:`jaxcollab.report.stats`) and as one report page
(:mod:`jaxcollab.report.html`). A cell no run can fill is a :class:`Cell` with ``missing``
saying which run would fill it.
"""

from __future__ import annotations

import csv
import dataclasses
import io
from collections.abc import Callable, Sequence
from pathlib import Path

from jaxcollab.report.html import Html, page, rate, table, tag
from jaxcollab.report.rundir import RunDir
from jaxcollab.report.stats import successes, wilson


@dataclasses.dataclass(frozen=True)
class Cell:
    """One cell: a success ``rate`` over ``episodes`` (shown with its interval: ``ci`` where
    the run stored one, else the 90 % Wilson interval), a difference in percentage
    ``points``, a plain ``text``, or ``missing``: the run that would fill it."""

    rate: float | None = None
    episodes: int = 0
    points: float | None = None
    text: str | None = None
    missing: str | None = None
    ci: tuple[float, float] | None = None

    def interval(self) -> tuple[float, float] | None:
        """The rate's interval (``ci``, or Wilson over ``episodes``), else None."""
        if self.ci is not None or self.rate is None or not self.episodes:
            return self.ci
        return wilson(successes(self.rate, self.episodes), self.episodes)

    def plain(self) -> str:
        """As a Markdown cell: ``74.1 [60.2, 85.0]``, ``+22.2``, the text, or ``missing: …``."""
        if self.missing is not None:
            return f"missing: {self.missing}"
        if self.rate is not None:
            ci = self.interval()
            return f"{100 * self.rate:.1f}" + (f" [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"
                                               if ci else "")
        if self.points is not None:
            return f"{self.points:+.1f}"
        return self.text or "–"


@dataclasses.dataclass(frozen=True)
class Built:
    """A table's content: ``header`` (column names) and ``rows`` (a row name, then one
    :class:`Cell` per further column)."""

    header: list[str]
    rows: list[list]


@dataclasses.dataclass(frozen=True)
class PaperTable:
    """One table of a paper: ``key`` (file stem, e.g. ``table3``), ``caption`` (the paper's
    table, its section, and what differs), and ``build(runs) -> Built``."""

    key: str
    caption: str
    build: Callable[[Sequence[RunDir]], Built]


def markdown(t: PaperTable, built: Built) -> str:
    """The table as Markdown, caption first."""
    lines = [f"### {t.caption}", "", "| " + " | ".join(built.header) + " |",
             "|" + "---|" * len(built.header)]
    lines += ["| " + " | ".join([str(r[0]), *(c.plain() for c in r[1:])]) + " |"
              for r in built.rows]
    return "\n".join(lines) + "\n"


def csv_text(t: PaperTable, built: Built) -> str:
    """One CSV line per cell: ``table, row, column, value, low, high, episodes, missing``
    (rates as fractions, points as percentage points)."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["table", "row", "column", "value", "low", "high", "episodes", "missing"])
    for r in built.rows:
        for col, c in zip(built.header[1:], r[1:], strict=True):
            ci = c.interval() or ("", "")
            value = c.rate if c.rate is not None else c.points if c.points is not None else (
                c.text or "")
            w.writerow([t.key, r[0], col, value, *ci, c.episodes or "", c.missing or ""])
    return out.getvalue()


def _html_cell(c: Cell) -> Html:
    if c.missing is not None:
        return tag("td", f"missing: {c.missing}", class_="missing")
    if c.rate is not None and c.ci is not None:
        return tag("td", [f"{100 * c.rate:.1f} %", tag("span", c.plain().split(" ", 1)[1],
                                                       class_="ci")],
                   class_="num rate", data_value=c.rate)
    if c.rate is not None:
        return rate(c.rate, c.episodes)
    if c.points is not None:
        return tag("td", f"{c.points:+.1f}", class_="num", data_value=c.points)
    return tag("td", c.text or "–")


def write(paper: str, tables: Sequence[PaperTable], runs: Sequence[RunDir], out: Path
          ) -> dict[str, Built]:
    """Build every table of ``paper`` from ``runs`` and write ``out/<key>.md``,
    ``out/<key>.csv`` each, ``out/<paper>.md`` (all of them) and ``out/<paper>.html`` (the
    report page); returns the built tables by key."""
    out.mkdir(parents=True, exist_ok=True)
    built = {t.key: t.build(runs) for t in tables}
    md = []
    for t in tables:
        text = markdown(t, built[t.key])
        (out / f"{t.key}.md").write_text(text, encoding="utf-8")
        (out / f"{t.key}.csv").write_text(csv_text(t, built[t.key]), encoding="utf-8")
        md.append(text)
    (out / f"{paper}.md").write_text("\n".join(md), encoding="utf-8")
    sections = [(t.key, t.caption, table(built[t.key].header,
                                         [[r[0], *map(_html_cell, r[1:])]
                                          for r in built[t.key].rows], id=t.key))
                for t in tables]
    (out / f"{paper}.html").write_text(
        page(f"{paper}: tables", " · ".join(str(r.path) for r in runs), sections),
        encoding="utf-8")
    return built


__all__ = ["Built", "Cell", "PaperTable", "csv_text", "markdown", "write"]
