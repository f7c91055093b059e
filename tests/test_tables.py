"""A paper's tables from finished runs (``eval/tables.py``): SANZARU's Tables 3, 4, 10, 11 and
12, every cell checked against the runs' ``results.json``, missing runs named in their cells."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_entry

from jaxcollab.report.stats import successes, wilson

ROOT = Path(__file__).resolve().parent.parent


def bank_run(path: Path, won: dict[str, tuple[int, int]], **config) -> Path:
    """A finished bank run's ``results.json``: ``won`` variant -> (defused, episodes), the rest
    timed out."""
    path.mkdir()
    variants = {v: {"episodes": n, "success_rate": k / n,
                    "endings": {"defused": k, "wrong_action": 0, "timed_out": n - k}}
                for v, (k, n) in won.items()}
    (path / "results.json").write_text(json.dumps(
        {"env": "bomb/all", "config": {"env": "bomb/all", "bank": True, **config},
         "variants": variants}))
    return path


def cells(out: Path, key: str) -> dict[tuple[str, str], dict]:
    with open(out / f"{key}.csv") as f:
        return {(r["row"], r["column"]): r for r in csv.DictReader(f)}


def test_sanzaru_tables_pool_each_runs_variants(tmp_path):
    """Cells pool the run's variants (successes summed), with the Wilson interval; the solo is
    the same model's ``bomb.solo_player`` run, the gap solo minus trio in points; a model
    without one, or without a ``hint=none`` run, gets cells naming the run it lacks."""
    llm = lambda model, **b: {"agent": "llm", "llm": {"model": model, "thinking_budget": 0},  # noqa: E731
                              "bomb": {"hint": "weak", "solo_player": False, **b}}
    won = {"bomb/base-1": (2, 3), "bomb/base-4": (1, 3), "bomb/carving-1": (3, 3)}
    trio = bank_run(tmp_path / "trio", won, **llm("m"))
    solo = bank_run(tmp_path / "solo", {v: (3, 3) for v in won}, **llm("m", solo_player=True))
    none = bank_run(tmp_path / "none", {v: (0, 3) for v in won}, **llm("m", hint="none"))
    other = bank_run(tmp_path / "other", {"bomb/base-1": (1, 3)}, **llm("x"))
    out = tmp_path / "tables"
    built = run_entry("eval/tables.py", "paper=sanzaru",
                      f"runs=[{trio},{solo},{none},{other}]", f"out_dir={out}")
    assert set(built) == {"table3", "table4", "table10", "table11", "table12", "protocols"}
    t3 = cells(out, "table3")
    base = t3[("m", "Base")]
    assert float(base["value"]) == pytest.approx(3 / 6) and base["episodes"] == "6"
    assert (float(base["low"]), float(base["high"])) == pytest.approx(wilson(3, 6))
    assert float(t3[("m", "Core")]["value"]) == pytest.approx(5 / 6)  # base-1, carving-1
    assert float(t3[("m", "All")]["value"]) == pytest.approx(6 / 9)
    assert t3[("m", "Haystack")]["missing"] == f"{trio} played no haystack variant"
    t4 = cells(out, "table4")
    assert float(t4[("m Core Gap", "Base")]["value"]) == pytest.approx(100 * (1 - 2 / 3))
    assert float(t4[("m Plus Gap", "All")]["value"]) == pytest.approx(100 * (1 - 1 / 3))
    assert t4[("m Plus Trio", "Carving")]["value"] == "–"  # carving has no Plus variant
    assert t4[("x Core Solo", "Base")]["missing"] == (
        "a solo run of x (bank=true bomb.solo_player=true)")
    t10 = cells(out, "table10")
    assert float(t10[("m bomb.hint=weak", "All")]["value"]) == pytest.approx(6 / 9)
    assert [float(t10[("m bomb.hint=weak", f"{g} Δ vs none")]["value"])
            for g in ("Core", "Plus", "All")] == pytest.approx([100 * 5 / 6, 100 / 3, 100 * 6 / 9])
    assert t10[("m bomb.hint=weak", "Timed out")]["value"] == "3"
    assert t10[("x bomb.hint=weak", "All Δ vs none")]["missing"] == "a run of x with bomb.hint=none"
    t12 = cells(out, "table12")
    assert float(t12[("base-1", "Mean")]["value"]) == pytest.approx((2 / 3 + 1 / 3) / 2)  # Weak
    assert t12[("base-2", "x")]["missing"] == f"{other} played no base-2 variant"
    assert cells(out, "protocols")[(
        "a bomb run analysed by eval/analyze.py (analysis.json with protocol_families)",
        "one_bit")]["missing"]
    md = (out / "sanzaru.md").read_text()
    assert "| m | 0 | 50.0 [" in md and (out / "table4.md").is_file()
    assert 'id="table12"' in (out / "sanzaru.html").read_text()


def test_bad_paper_or_runs_are_named(tmp_path):
    run = bank_run(tmp_path / "r", {"bomb/base-1": (1, 3)}, agent="symbol")
    with pytest.raises(ValueError, match=r"paper='nope'.*\['collabgap', 'gptnt', 'sanzaru'\]"):
        run_entry("eval/tables.py", "paper=nope", f"runs=[{run}]")
    with pytest.raises(ValueError, match=r"runs=\[\] is invalid"):
        run_entry("eval/tables.py", "paper=sanzaru", "runs=[]")
    with pytest.raises(ValueError, match=f"{tmp_path / 'gone'}.*not a directory"):
        run_entry("eval/tables.py", "paper=sanzaru", f"runs={tmp_path / 'gone'}")


@pytest.mark.full
def test_tables_of_scripted_bank_runs_match_their_results(tmp_path):
    """``python eval/tables.py`` (a subprocess) on bank runs of the ``symbol`` trio and the
    ``solo`` team: Table 12's cells are each run's per-variant success, Table 3's Core / Plus /
    All its ``summary``, Table 4's gap the solo's minus the trio's (the scripted trio's solo)."""
    runs = {}
    for team in ("symbol", "solo"):
        runs[team] = tmp_path / team
        run_entry("eval/rollout.py", "env=bomb/base", f"agent={team}", "bank=true",
                  "repeats=1", f"out_dir={runs[team]}")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = tmp_path / "tables"
    done = subprocess.run([sys.executable, "eval/tables.py", "paper=sanzaru",
                           f"runs=[{runs['symbol']},{runs['solo']}]", f"out_dir={out}"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    res = {t: json.loads((p / "results.json").read_text()) for t, p in runs.items()}
    t12 = cells(out, "table12")
    for name, v in res["symbol"]["variants"].items():
        cell = t12[(name.removeprefix("bomb/"), "symbol")]
        assert float(cell["value"]) == pytest.approx(v["success_rate"])
        assert cell["episodes"] == str(v["episodes"])
    t3 = cells(out, "table3")
    for col, key in (("Core", "core"), ("Plus", "plus"), ("All", "all")):
        s = res["symbol"]["summary"][key]
        assert float(t3[("symbol", col)]["value"]) == pytest.approx(
            s["success_rate"])
        assert successes(s["success_rate"], s["episodes"]) == successes(
            float(t3[("symbol", col)]["value"]), s["episodes"])
    t4 = cells(out, "table4")
    gap = 100 * (res["solo"]["summary"]["core"]["success_rate"]
                 - res["symbol"]["summary"]["core"]["success_rate"])
    assert float(t4[("symbol Core Gap", "All")]["value"]) == pytest.approx(gap)
    assert done.stdout.strip().endswith(f"{out / 'sanzaru.html'}")
    assert cells(out, "table10") == {}  # hint levels are the LLM prompts'; no LLM run


def _ktane(path: Path, results: dict, **ktane) -> Path:
    path.mkdir()
    (path / "results.json").write_text(json.dumps({"env": "ktane/missions/single", **results,
                                                   "config": {"env": "ktane/missions/single",
                                                              "agent": "llm",
                                                              "llm": {"model": "m"},
                                                              "ktane": ktane}}))
    return path


def test_gptnt_tables_read_pass_at_1_and_the_pairings(tmp_path):
    """Tables 4/5 split the runs by ``ktane.mode``, Table 11 by ``ktane.solo``; Table 6 is the
    other-play run's matrix, each cell with its pairing's episodes; Table 7 its rates; Table 2
    a multi-module run's outcome per mission."""
    sync = _ktane(tmp_path / "sync", {"pass_at_1": 0.5, "pass_at_1_by_module": {
        "wires": 0.7, "keypad": 0.3}}, mode="sync")
    solo = _ktane(tmp_path / "solo", {"pass_at_1": 0.2, "pass_at_1_by_module": {
        "wires": 0.2}}, mode="sync", solo="no_manual")
    other = tmp_path / "other"
    other.mkdir()
    pairs = [("m", "m", 0.5), ("m", "n", 0.25), ("n", "m", 0.0), ("n", "n", 1.0)]
    (other / "results.json").write_text(json.dumps({
        "env": "ktane/wires", "success_matrix": {"m": {"m": 0.5, "n": 0.25},
                                                 "n": {"m": 0.0, "n": 1.0}},
        "runs": [{"roles": {"defuser": a, "expert": b}, "episodes": 4, "success_rate": r}
                 for a, b, r in pairs],
        "communication": {"m": {"self": 0.5, "other_as_defuser": 0.25,
                                "other_as_expert": None}}}))
    out = tmp_path / "tables"
    run_entry("eval/tables.py", "paper=gptnt", f"runs=[{sync},{solo},{other}]",
              f"out_dir={out}")
    t5 = cells(out, "table5")
    assert float(t5[("m", "keypad")]["value"]) == 0.3 and t5[("m", "All")]["value"] == "0.5"
    assert cells(out, "table4")[("a self-play run with ktane.mode=async on "
                                 "ktane/missions/single", "All")]["missing"]
    t11 = cells(out, "table11")
    assert float(t11[("m (single, no manual)", "wires")]["value"]) == 0.2
    assert t11[("m (single, no manual)", "keypad")]["missing"] == (
        f"{solo} played no single keypad mission")
    t6 = cells(out, "table6")
    assert float(t6[("m", "n")]["value"]) == 0.25 and t6[("m", "n")]["episodes"] == "4"
    assert (float(t6[("m", "n")]["low"]), float(t6[("m", "n")]["high"])) == pytest.approx(
        wilson(1, 4))
    multi = _ktane(tmp_path / "multi", {"pass_at_1": 0.0, "pass_at_1_by_module": {},
                                         "per_module": {"ktane/missions/multi/m01": {
                                             "episodes": 1, "outcomes": {"timeout": 1},
                                             "mean_modules_solved": 2.0}}}, mode="async")
    run_entry("eval/tables.py", "paper=gptnt", f"runs=[{multi}]", f"out_dir={tmp_path / 'm'}")
    assert cells(tmp_path / "m", "table2")[("m", "ktane/missions/multi/m01")]["value"] == (
        "timeout (2 solved)")
    t7 = cells(out, "table7")
    assert t7[("m", "Other-play as Defuser")]["value"] == "25.0"
    assert t7[("m", "Other-play as Expert")]["missing"] == f"{other} has no other_as_expert " \
                                                            "assignment"


def test_collabgap_panels_line_up_the_models(tmp_path):
    """One row per model and step of each ``experiment=r3`` run, maze success by round with
    the interval the run stored; a figure without a run names the command that fills it."""
    runs = []
    for model, success in (("a", [0.25, 0.5]), ("b", [0.0, None])):
        runs.append(tmp_path / model)
        runs[-1].mkdir()
        (runs[-1] / "results.json").write_text(json.dumps({
            "experiment": "r3", "model": model, "protocols": {"verbalized": {
                "rounds": [1, 2], "maze_success": success,
                "maze_success_interval": [[0.1, 0.4], None],
                "calibration_loss": [0.2, 0.1], "calibration_loss_interval": [None, None]}}}))
    out = tmp_path / "tables"
    run_entry("eval/tables.py", "paper=collabgap", f"runs=[{runs[0]},{runs[1]}]",
              f"out_dir={out}")
    fig7 = cells(out, "fig7")
    a = fig7[("a verbalized", "round 1 maze success")]
    assert (a["value"], a["low"], a["high"]) == ("0.25", "0.1", "0.4")
    assert fig7[("b verbalized", "round 2 maze success")]["missing"] == (
        f"{runs[1]} step verbalized has no round 2 maze_success")
    assert fig7[("a verbalized", "round 2 calibration loss")]["value"] == "0.1"
    assert "| a verbalized | 25.0 [10.0, 40.0] | 50.0 |" in (out / "fig7.md").read_text()
    assert cells(out, "fig8")[("an eval/collabgap.py run with experiment=r4", "–")]["missing"]
