"""A weak model still gets results: against the test server's ``freetext`` model (prose that
never follows the reply format, never a probability vector), ``eval/collabgap.py``,
``eval/otherplay.py`` and ``eval/analyze.py`` finish as subprocesses, as a user runs them, with
every reply's error classified and no traceback; a calibrated step with nothing to fit records
that and plays on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jaxcollab.agents.maze.llm import fit_conversation_calibrator

ROOT = Path(__file__).resolve().parents[1]


def _cli(script: str, *args: str) -> subprocess.CompletedProcess:
    env = os.environ | {"PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, str(ROOT / script), *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=600)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    return done


def test_a_fit_with_no_vectors_gives_no_calibrator_and_its_counts():
    """Rounds with no vector (a model that never wrote one) leave nothing to fit; one step
    whose every round reported a vector is enough."""
    empty = {"data": {"labels": [0, 1], "rounds": [
        {"step": s, "round": k, "move": None, "probs": None, "raw": None}
        for s in range(2) for k in range(2)]}}
    assert fit_conversation_calibrator([empty, empty], 2) == (
        None, {"fitted": False, "records": 2, "vectors": 0, "steps": 0})
    half = {"data": {"labels": [0, 1], "rounds": [
        {"step": 0, "round": 0, "move": 0, "probs": [0.7, 0.1, 0.1, 0.1], "raw": None},
        {"step": 0, "round": 1, "move": 0, "probs": None, "raw": [0.6, 0.2, 0.1, 0.1]},
        {"step": 1, "round": 0, "move": 1, "probs": [0.1, 0.7, 0.1, 0.1], "raw": None}]}}
    cal, fit = fit_conversation_calibrator([half, empty], 2)
    assert fit == {"fitted": True, "records": 2, "vectors": 3, "steps": 1}
    assert cal.weights.shape == (2, 2) and bool(cal.converged.all())


@pytest.mark.full
def test_collabgap_r3_with_a_free_text_model_records_no_calibrator(server, tmp_path):
    """The issue's command: the held-out run gives no vector to fit; the calibrated step plays
    the raw (absent) vectors, every reply is a classified error and results are written."""
    _cli("eval/collabgap.py", "experiment=r3", "mazes=1", "rollouts=1", "calibration_mazes=1",
         "rounds=1", f"llm.base_url={server.url}", "llm.model=freetext", f"out_dir={tmp_path}")
    res = json.loads((tmp_path / "results.json").read_text())
    assert list(res["steps"]) == ["action", "verbalized", "calibration_fit",
                                  "verbalized_calibrated"]
    assert res["steps"]["verbalized_calibrated"]["calibration"] == {
        "maze/split-6x6": {"fitted": False, "records": 1, "vectors": 0, "steps": 0}}
    assert {n: p["maze_success"] for n, p in res["protocols"].items()} == {
        "action": [0.0], "verbalized": [0.0], "verbalized_calibrated": [0.0]}
    for step in res["steps"]:
        errors = json.loads((tmp_path / step / "results.json").read_text())["parse_errors"]
        assert errors["no_action"] > 0
        assert errors == {"no_action": errors["no_action"]} | (
            {} if step == "action" else {"unparseable": errors["no_action"]})


@pytest.mark.full
def test_otherplay_and_analyze_with_a_free_text_model(server, tmp_path):
    """Other-play of a free-text model with a good one, and the judge's analysis of a
    free-text bomb run coded by a free-text judge: finished, every failure classified."""
    _cli("eval/otherplay.py", "env=maze/split-6x6", "models=[freetext,good]", "episodes=1",
         "maze.rounds=1", f"llm.base_url={server.url}", f"out_dir={tmp_path / 'op'}")
    res = json.loads((tmp_path / "op" / "results.json").read_text())
    assert [r["roles"] for r in res["runs"]] == [
        {"agent0": a, "agent1": b} for a in ("freetext", "good") for b in ("freetext", "good")]
    selfplay = json.loads((Path(res["runs"][0]["dir"]) / "results.json").read_text())
    steps = json.loads((Path(res["runs"][0]["dir"]) / "maze-split-6x6.jsonl").read_text())["steps"]
    assert selfplay["success_rate"] == 0.0 and selfplay["parse_errors"] == {"no_action": steps}
    # the fallback d played every step (and was right on the first): none is the model's
    assert selfplay["step_accuracy"] == 0.0 and selfplay["fallback_moves"] == steps > 1
    run = tmp_path / "bomb"
    _cli("eval/rollout.py", "env=bomb/base-1", "agent=llm", "episodes=1",
         f"llm.base_url={server.url}", "llm.model=freetext", f"out_dir={run}")
    _cli("eval/analyze.py", f"run={run}", "judge.model=freetext", f"judge.base_url={server.url}")
    analysis = json.loads((run / "analysis.json").read_text())
    assert analysis["lost"] == 1 and analysis["judge"]["outcomes"] == {
        "coded": 0, "unparsed": 1, "refused": 0, "context_length": 0}
