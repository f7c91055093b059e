"""SANZARU's tables from finished bomb runs (``eval/tables.py paper=sanzaru``; the plug-in's
:attr:`~jaxcollab.core.family.Family.tables`), as "SaveSanzaru: Benchmarking Protocol Formation
under Epistemic & Communication Asymmetry" lays them out:

* Table 3: success by family (Core and Plus pooled), Core, Plus and All, one row per trio run
  (Tables 3, 4, 11 and 12 read the Weak-hint runs, as the paper's);
* Table 4: coordination cost, per family, a Core and a Plus block of Trio, Solo and Gap, one
  pair of blocks per trio run, its solo the run of the same model with ``bomb.solo_player=true``
  (a scripted trio's: the ``solo`` team);
* Table 10: by hint level (``bomb.hint``), Table 11: by thinking budget
  (``llm.thinking_budget``): Core, Plus, All with the difference from None / Off, and the lost
  episodes by ending;
* Table 12: success by variant, one column per trio run and their mean;
* ``protocols``: episodes per protocol family of Figs. 7-12, per model and per variant, from
  each run's ``analysis.json`` (``eval/analyze.py``).

Every cell is read from a run's ``results.json`` ``variants`` (pooled by summing successes), so
it is that run's number; a cell no run gives names the run that would fill it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

from jaxcollab.agents.bomb.config import BombBlock
from jaxcollab.agents.bomb.protocols import FAMILIES
from jaxcollab.envs.bomb import tables as T
from jaxcollab.report.assemble import Built, Cell, PaperTable
from jaxcollab.report.rundir import RunDir
from jaxcollab.report.stats import successes
from jaxcollab.report.tables import variant_rows

FAMILY_TITLES = {"base": "Base", "carving": "Carving", "flashing": "Flashing Light",
                 "flashback": "Flashback", "shuffle": "Shuffle Wires", "haystack": "Haystack",
                 "bait": "Bait"}  # SANZARU Table 2's names
HINTS = ("none", "weak", "strong", "playbook")  # Table 10's rows


def _cfg(run: RunDir) -> dict:
    return run.results.get("config") or {}


def who(run: RunDir) -> str:
    """The model of an LLM run (``llm.model``), else the scripted team (``agent``)."""
    cfg = _cfg(run)
    if cfg.get("agent") == "llm":
        return str(run.results.get("model") or (cfg.get("llm") or {}).get("model"))
    return str(cfg.get("agent") or run.results.get("agent") or run.path.name)


def is_solo(run: RunDir) -> bool:
    """One agent holding every view: the ``solo`` team or ``bomb.solo_player=true``."""
    cfg = _cfg(run)
    return cfg.get("agent") == "solo" or bool((cfg.get("bomb") or {}).get("solo_player"))


def hint(run: RunDir) -> str:
    """``bomb.hint`` of the run (its default for a run that records no ``bomb`` block)."""
    return str((_cfg(run).get("bomb") or {}).get("hint", BombBlock.hint))


def thinking(run: RunDir) -> str:
    """``llm.thinking_budget`` as a row name (``null``: not sent)."""
    budget = (_cfg(run).get("llm") or {}).get("thinking_budget")
    return "null" if budget is None else str(budget)


def _bank(runs: Sequence[RunDir]) -> list[RunDir]:
    return [r for r in runs if r.family == "bomb" and isinstance(r.results.get("variants"), dict)]


def pooled(run: RunDir, keep: Callable[[T.Variant], bool], what: str) -> Cell:
    """The run's success over its variants that ``keep`` selects (successes summed), or a
    missing cell naming the run and ``what`` it did not play."""
    k = n = 0
    for name, r, e in variant_rows(run.results):
        if keep(T.variant(name)):
            k, n = k + successes(r, e), n + e
    return Cell(k / n, n) if n else Cell(missing=f"{run.path} played no {what} variant")


def trios(runs: Sequence[RunDir], hints: Sequence[str] = ("weak",), llm: bool = False
          ) -> list[RunDir]:
    """The bank runs of three-agent teams under ``hints`` (Tables 3, 4, 11, 12: Weak), only
    LLM teams' with ``llm`` (Tables 10, 11: a scripted team has no hints or thinking)."""
    return [r for r in _bank(runs) if not is_solo(r) and hint(r) in hints
            and (not llm or _cfg(r).get("agent") == "llm")]


def _gap(trio: Cell, solo: Cell) -> Cell:
    if trio.rate is None or solo.rate is None:
        return Cell(missing=trio.missing or solo.missing)
    return Cell(points=100 * (solo.rate - trio.rate))


def _subsets(run: RunDir) -> list[Cell]:
    return [pooled(run, lambda v, s=s: v.subset == s, s) for s in ("Core", "Plus")] + [
        pooled(run, lambda v: True, "bomb")]


def table3(runs: Sequence[RunDir]) -> Built:
    """Table 3: a row per Weak trio run, each family (Core and Plus pooled), Core, Plus, All."""
    rows = [[who(r), Cell(text=thinking(r) if _cfg(r).get("agent") == "llm" else "–"),
             *(pooled(r, lambda v, f=f: v.family == f, f) for f in FAMILY_TITLES),
             *_subsets(r)] for r in trios(runs)]
    return Built(["Model", "llm.thinking_budget", *FAMILY_TITLES.values(), "Core", "Plus",
                  "All"], rows)


def _solo_of(run: RunDir, runs: Sequence[RunDir]) -> RunDir | None:
    llm = _cfg(run).get("agent") == "llm"
    return next((s for s in _bank(runs) if is_solo(s)
                 and (who(s) == who(run) if llm else _cfg(s).get("agent") == "solo")), None)


def _block(trio: RunDir, solo: RunDir | None, need: str, subset: str) -> list[list]:
    """Table 4's Trio, Solo and Gap rows of one subset (``need``: the missing solo run)."""
    def cell(run, f):
        if f is not None and not any(v.family == f and v.subset == subset for v in T.VARIANTS):
            return Cell(text="–")  # the family has no variant in this subset
        if run is None:
            return Cell(missing=need)
        return pooled(run, lambda v: v.subset == subset and f in (None, v.family),
                      f"{f or 'any'} {subset}")

    fams = [*FAMILY_TITLES, None]
    t, s = [cell(trio, f) for f in fams], [cell(solo, f) for f in fams]
    g = [x if x.text else _gap(x, y) for x, y in zip(t, s, strict=True)]
    return [[f"{who(trio)} {subset} {name}", *row]
            for name, row in (("Trio", t), ("Solo", s), ("Gap", g))]


def table4(runs: Sequence[RunDir]) -> Built:
    """Table 4: per Weak trio run, a Core and a Plus block of Trio, Solo and Gap rows."""
    rows = []
    for trio in trios(runs):
        need = (f"a solo run of {who(trio)} (bank=true bomb.solo_player=true)"
                if _cfg(trio).get("agent") == "llm" else "a run of agent=solo bank=true")
        rows += [row for subset in ("Core", "Plus")
                 for row in _block(trio, _solo_of(trio, runs), need, subset)]
    return Built(["", *FAMILY_TITLES.values(), "All"], rows)


def _levels(teams: Sequence[RunDir], level: Callable[[RunDir], str], base: str, key: str
            ) -> Built:
    """Rows per model and level of the trio runs ``teams``: Core, Plus, All, each with its
    difference from the model's ``base`` level (points), and the lost episodes by ending."""
    rows = []
    for r in sorted(teams, key=lambda r: (who(r), HINTS.index(level(r))
                                          if level(r) in HINTS else 9, level(r))):
        ref = next((b for b in teams if who(b) == who(r) and level(b) == base), None)
        mine = _subsets(r)
        refs = _subsets(ref) if ref else [Cell(missing=f"a run of {who(r)} with {key}={base}")
                                          ] * 3
        ends = {k: sum(v.get("endings", {}).get(k, 0) for v in r.results["variants"].values())
                for k in ("timed_out", "wrong_action")}
        rows.append([f"{who(r)} {key}={level(r)}",
                     *(x for c, b in zip(mine, refs, strict=True) for x in (c, _gap(b, c))),
                     Cell(text=str(ends["timed_out"])), Cell(text=str(ends["wrong_action"]))])
    return Built(["Setting", *(x for g in ("Core", "Plus", "All") for x in (g, f"{g} Δ vs {base}")),
                  "Timed out", "Wrong action"], rows)


def table12(runs: Sequence[RunDir]) -> Built:
    """Table 12: a row per variant, a column per Weak trio run, and their plain mean."""
    teams, rows = trios(runs), []
    for v in T.VARIANTS:
        cells = [pooled(r, lambda x, n=v.name: x.name == n, v.name) for r in teams]
        rates = [c.rate for c in cells if c.rate is not None]
        mean = Cell(sum(rates) / len(rates)) if rates else Cell(missing="no run played it")
        rows.append([v.name, *cells, mean])
    return Built(["Variant", *(who(r) for r in teams), "Mean"], rows)


def protocols(runs: Sequence[RunDir]) -> Built:
    """Episodes per protocol family (Figs. 7-12) of each analysed run (``analysis.json``
    ``protocol_families``, :mod:`jaxcollab.agents.bomb.protocols`): a row per model, then a row
    per model and variant; the last column counts the episodes of the row whose family the
    judge named (the rules left them undetermined)."""
    analysed = [r for r in runs if r.family == "bomb" and r.analysis
                and "protocol_families" in r.analysis]
    rows = []
    for r in analysed:
        p = r.analysis["protocol_families"]
        judged = Counter(j["env"] for j in p.get("judged", ()) if j["by"] == "judge")
        rows.append([who(r), *(Cell(text=str(p["counts"].get(f, 0))) for f in FAMILIES),
                     Cell(text=str(sum(judged.values())))])
        rows += [[f"{who(r)} {v.removeprefix('bomb/')}",
                  *(Cell(text=str(c.get(f, 0))) for f in FAMILIES), Cell(text=str(judged[v]))]
                 for v, c in p["variants"].items()]
    need = "a bomb run analysed by eval/analyze.py (analysis.json with protocol_families)"
    head = ["Model", *FAMILIES, "by judge"]
    return Built(head, rows or [[need, *[Cell(missing=need)] * (len(head) - 1)]])


TABLES = {"sanzaru": (
    PaperTable("table3", "SANZARU Table 3: success rate (%) by family, Core, Plus and All "
               "(90 % Wilson intervals in brackets)", table3),
    PaperTable("table4", "SANZARU Table 4: coordination cost by family, Core and Plus blocks "
               "(Trio, same-model Solo, Gap in points)", table4),
    PaperTable("table10", "SANZARU Table 10: success rate by hint level (differences from "
               "None in points; lost episodes by ending)",
               lambda runs: _levels(trios(runs, HINTS, llm=True), hint, "none", "bomb.hint")),
    PaperTable("table11", "SANZARU Table 11: success rate by thinking budget (differences "
               "from 0, thinking off, in points)",
               lambda runs: _levels(trios(runs, llm=True), thinking, "0", "llm.thinking_budget")),
    PaperTable("table12", "SANZARU Table 12: success rate by variant (%), one column per "
               "trio run, and their mean", table12),
    PaperTable("protocols", "SANZARU Figs. 7-12: episodes per protocol family, by model and "
               "by model and variant (families sorted by our rules on Mute's gestures, the "
               "episodes they leave undetermined by the judge where one ran)",
               protocols),
)}

__all__ = ["TABLES", "hint", "is_solo", "pooled", "thinking", "who"]
