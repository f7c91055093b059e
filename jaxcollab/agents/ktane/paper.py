"""GPTNT's tables from finished Keep-Talking runs (``eval/tables.py paper=gptnt``; the plug-in's
:attr:`~jaxcollab.core.family.Family.tables`):

* Tables 2 and 3: per multi-module mission, the outcome and the modules solved, one row per
  model's self-play run, async (Table 2) and sync (Table 3);
* Tables 4 and 5: pass@1 (%) on single-module missions by module type, one row per model's
  self-play run, in async (Table 4) and sync (Table 5) mode (``ktane.mode``);
* Table 6: success (%) of every (Defuser, Expert) pairing, from an ``eval/otherplay.py`` run;
* Table 7: communication rates (% game steps with a message), self-play and other-play as each
  role, from the same run;
* Table 11: single-module pass@1 (sync) of pairs against single agents with and without the
  manual (``ktane.solo``), one row per model and setting.

Pass@1 cells are the runs' ``pass_at_1_by_module`` (a mean over missions, so without a binomial
interval); pairing cells carry the 90 % Wilson interval over the pairing's episodes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from jaxcollab.agents.ktane.config import KtaneBlock
from jaxcollab.report.assemble import Built, Cell, PaperTable
from jaxcollab.report.rundir import RunDir

SOLO_ROWS = {None: "pair", "with_manual": "single, manual", "no_manual": "single, no manual"}


def _cfg(run: RunDir) -> dict:
    return run.results.get("config") or {}


def _block(run: RunDir, key: str):
    return (_cfg(run).get("ktane") or {}).get(key, getattr(KtaneBlock, key))


def model(run: RunDir) -> str:
    """The run's model (``llm.model``)."""
    return str(run.results.get("model") or (_cfg(run).get("llm") or {}).get("model"))


def _missions(runs: Sequence[RunDir], single: bool) -> list[RunDir]:
    """Keep-Talking LLM runs of fixed missions: single-module ones (``pass_at_1_by_module``
    filled), or else multi-module ones."""
    return [r for r in runs if r.family == "ktane" and _cfg(r).get("agent") == "llm"
            and "pass_at_1" in r.results
            and bool(r.results.get("pass_at_1_by_module")) == single]


def _by_module(chosen: Sequence[RunDir], label: Callable[[RunDir], str], need: str) -> Built:
    modules = sorted({m for r in chosen for m in r.results["pass_at_1_by_module"]})
    rows = [[label(r), *(Cell(r.results["pass_at_1_by_module"][m])
                         if m in r.results["pass_at_1_by_module"]
                         else Cell(missing=f"{r.path} played no single {m} mission")
                         for m in modules), Cell(r.results["pass_at_1"])] for r in chosen]
    if not rows:
        rows = [[need, Cell(missing=need)]]
    return Built(["Model", *modules, "All"], rows)


def by_mode(mode: str) -> Callable[[Sequence[RunDir]], Built]:
    """Table 4 (``async``) or 5 (``sync``): pairs' pass@1 by module type."""
    def build(runs: Sequence[RunDir]) -> Built:
        chosen = [r for r in _missions(runs, single=True) if _block(r, "solo") is None
                  and _block(r, "mode") == mode]
        return _by_module(chosen, model, f"a self-play run with ktane.mode={mode} on "
                          "ktane/missions/single")
    return build


def table11(runs: Sequence[RunDir]) -> Built:
    """Table 11: sync single-module pass@1 by module, a row per model and ``ktane.solo``."""
    chosen = sorted((r for r in _missions(runs, single=True) if _block(r, "mode") == "sync"),
                    key=lambda r: (model(r), list(SOLO_ROWS).index(_block(r, "solo"))))
    return _by_module(chosen, lambda r: f"{model(r)} ({SOLO_ROWS[_block(r, 'solo')]})",
                      "a sync run on ktane/missions/single (ktane.solo null, with_manual or "
                      "no_manual)")


def multi(mode: str) -> Callable[[Sequence[RunDir]], Built]:
    """Table 2 (``async``) or 3 (``sync``): each multi-module mission's outcome and modules
    solved (the run's ``per_module`` entry; with several episodes, the outcome counts and the
    mean), then pass@1."""
    def outcome(entry: dict) -> Cell:
        counts = {k: v for k, v in entry.get("outcomes", {}).items() if v}
        return Cell(text=", ".join(f"{k} {v}" if entry["episodes"] > 1 else k
                                   for k, v in counts.items())
                    + f" ({entry['mean_modules_solved']:g} solved)")

    def build(runs: Sequence[RunDir]) -> Built:
        chosen = [r for r in _missions(runs, single=False) if _block(r, "solo") is None
                  and _block(r, "mode") == mode]
        missions = sorted({m for r in chosen for m in r.results.get("per_module", {})})
        rows = [[model(r), *(outcome(r.results["per_module"][m]) if m in r.results.get(
                    "per_module", {}) else Cell(missing=f"{r.path} did not play {m}")
                    for m in missions), Cell(r.results["pass_at_1"])] for r in chosen]
        need = f"a self-play run with ktane.mode={mode} on ktane/missions/multi"
        return Built(["Model", *missions, "pass@1"], rows or [[need, Cell(missing=need)]])
    return build


def _otherplay(runs: Sequence[RunDir]) -> list[RunDir]:
    return [r for r in runs if r.family == "ktane"
            and isinstance(r.results.get("success_matrix"), dict)]


def table6(runs: Sequence[RunDir]) -> Built:
    """Table 6: the other-play run's ``success_matrix`` (Defuser rows, Expert columns)."""
    rows, header = [], ["Defuser \\ Expert"]
    for run in _otherplay(runs):
        matrix = run.results["success_matrix"]
        header = ["Defuser \\ Expert", *next(iter(matrix.values()))]
        for a, row in matrix.items():
            cells = []
            for b, rate in row.items():
                n = next((r.get("episodes", 0) for r in run.results.get("runs", [])
                          if r.get("roles") == {"defuser": a, "expert": b}), 0)
                cells.append(Cell(rate, n))
            rows.append([a, *cells])
    if not rows:
        rows = [["–", Cell(missing="an eval/otherplay.py run on ktane")]]
        header.append("–")
    return Built(header, rows)


def table7(runs: Sequence[RunDir]) -> Built:
    """Table 7: the other-play run's ``communication`` rates per model (percent)."""
    cols = ("self", "other_as_defuser", "other_as_expert")
    rows = [[m, *(Cell(text=f"{100 * c[k]:.1f}") if c.get(k) is not None
                  else Cell(missing=f"{run.path} has no {k} assignment") for k in cols)]
            for run in _otherplay(runs) for m, c in run.results.get("communication", {}).items()]
    return Built(["Model", "Self-play", "Other-play as Defuser", "Other-play as Expert"],
                 rows or [["–", *[Cell(missing="an eval/otherplay.py run on ktane")] * 3]])


TABLES = {"gptnt": (
    PaperTable("table2", "GPTNT Table 2: outcome and modules solved per multi-module mission, "
               "async mode, and pass@1", multi("async")),
    PaperTable("table3", "GPTNT Table 3: outcome and modules solved per multi-module mission, "
               "sync mode, and pass@1", multi("sync")),
    PaperTable("table4", "GPTNT Table 4: pass@1 (%) on single-module missions, async mode",
               by_mode("async")),
    PaperTable("table5", "GPTNT Table 5: pass@1 (%) on single-module missions, sync mode",
               by_mode("sync")),
    PaperTable("table6", "GPTNT Table 6: success rate (%) of every model pairing, "
               "single-module missions (90 % Wilson intervals over each pairing's episodes)",
               table6),
    PaperTable("table7", "GPTNT Table 7: communication rates (% game steps with messages), "
               "self- vs other-play", table7),
    PaperTable("table11", "GPTNT Table 11: pass@1 (%) on single-module missions, sync mode, "
               "pairs vs single agents with and without the manual", table11),
)}

__all__ = ["TABLES", "by_mode", "model", "multi", "table11", "table6", "table7"]
