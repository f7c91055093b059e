"""The collaboration-gap paper's panels from finished ``eval/collabgap.py`` runs
(``eval/tables.py paper=collabgap``; the plug-in's
:attr:`~jaxcollab.core.family.Family.tables`): for each of Figs. 7-11 (Narrowing the
Collaboration Gap, Probably, §6, R3-R7: ``experiment=r3`` … ``r7``), maze success and
calibration loss by round, one row per model and step, so the four models' panels read side by
side. Cells are the runs' ``protocols.<step>`` lists with the intervals they store (90 %,
bootstrap over mazes, :func:`jaxcollab.agents.maze.llm_results.by_round`).
"""

from __future__ import annotations

from collections.abc import Sequence

from jaxcollab.report.assemble import Built, Cell, PaperTable
from jaxcollab.report.rundir import RunDir

FIGURES = {"r3": "Fig. 7", "r4": "Fig. 8", "r5": "Fig. 9", "r6": "Fig. 10", "r7": "Fig. 11"}
SERIES = (("maze_success", "maze success"), ("calibration_loss", "calibration loss"))


def _value(run: RunDir, step: str, key: str, k: int) -> Cell:
    p = run.results["protocols"][step]
    values, ci = p.get(key) or [], p.get(f"{key}_interval") or []
    if k >= len(values) or values[k] is None:
        return Cell(missing=f"{run.path} step {step} has no round {k + 1} {key}")
    interval = ci[k] if k < len(ci) and ci[k] is not None else None
    if key == "maze_success":
        return Cell(values[k], ci=tuple(interval) if interval else None)
    return Cell(text=f"{values[k]:.4g}" + (f" [{interval[0]:.4g}, {interval[1]:.4g}]"
                                           if interval else ""))


def figure(experiment: str):
    """The panel table of ``experiment`` (one of :data:`FIGURES`)."""
    def build(runs: Sequence[RunDir]) -> Built:
        chosen = [r for r in runs if r.results.get("experiment") == experiment
                  and isinstance(r.results.get("protocols"), dict)]
        steps = [(r, s) for r in chosen for s in r.results["protocols"]]
        n = max((len(r.results["protocols"][s].get("rounds") or []) for r, s in steps),
                default=0)
        header = ["Model / step", *(f"round {k + 1} {name}" for key, name in SERIES
                                    for k in range(n))]
        rows = [[f"{r.results.get('model')} {s}",
                 *(_value(r, s, key, k) for key, _ in SERIES for k in range(n))]
                for r, s in steps]
        if not rows:
            need = f"an eval/collabgap.py run with experiment={experiment}"
            return Built(["Model / step", "–"], [[need, Cell(missing=need)]])
        return Built(header, rows)
    return build


TABLES = {"collabgap": tuple(
    PaperTable(f"fig{fig.split()[1]}", f"Narrowing the Collaboration Gap, Probably, {fig} "
               f"({exp.upper()}): maze success (%) and calibration loss by round, per model "
               "and step (90 % intervals as the runs store them)", figure(exp))
    for exp, fig in FIGURES.items())}

__all__ = ["FIGURES", "TABLES", "figure"]
