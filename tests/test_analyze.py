"""Trace analysis (``eval/analyze.py``): the judge's reply parser, its agreement statistics,
failure-mode coding of a bomb LLM run by the stub server's judge, Keep-Talking behaviour, and
the entry points going through the family plug-in only."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llm_server import JUDGE_MODE, LLMServer

from jaxcollab.agents.bomb.sanzaru import MODES, RUBRIC
from jaxcollab.agents.ktane import behaviour as B
from jaxcollab.analysis.judge import agreement, parse_verdict, summary
from jaxcollab.envs.ktane.modules.base import CUT, MESSAGE, ROTATE, SELECT, WAIT

ROOT = Path(__file__).resolve().parent.parent
CODES = [m.code for m in MODES]


def analyze(*overrides: str) -> dict:
    """``python eval/analyze.py <overrides>`` in-process (the config Hydra composes)."""
    from hydra import compose, initialize_config_dir

    run = importlib.import_module("eval.analyze").run
    with initialize_config_dir(str(ROOT / "configs"), version_base=None):
        return run(compose("analyze", overrides=list(overrides)))


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)


# -- the judge's reply parser ----------------------------------------------------------------

def test_rubric_has_eight_modes_in_three_stages():
    """SANZARU Table 5: eight modes, three stages; each mode ends by a simulator ending."""
    assert len(RUBRIC.codes) == 8 and RUBRIC.stages == ("communication", "reasoning", "action")
    assert all(set(m.ends_by) <= {"wrong_action", "timed_out"} for m in MODES)
    assert set(RUBRIC.flags) == {"assumed_meaning", "ungrounded_ref"}


@pytest.mark.parametrize("text, mode, flags", [
    ('{"mode": "wrong_round", "assumed_meaning": true, "ungrounded_ref": "no", '
     '"rationale": "r"}', "wrong_round", (True, False)),
    ('Thinking...\n```json\n{"mode": "No shared code", "rationale": "x"}\n```', "no_shared_code",
     (None, None)),
    ('{"mode": "omission"} then {"mode": "Slow-Protocol", "assumed_meaning": "yes"}',
     "slow_protocol", (True, None)),
    ("misalignment", "misalignment", (None, None)),
])
def test_parse_verdict_accepts_valid_codes(text, mode, flags):
    v = parse_verdict(text, RUBRIC)
    assert (v.outcome, v.mode) == ("coded", mode)
    assert (v.flags["assumed_meaning"], v.flags["ungrounded_ref"]) == flags


@pytest.mark.parametrize("text, reason", [
    ("", "empty reply"),
    ("Let me think about the bomb.", "no JSON object"),
    ('{"mode": "bad luck", "rationale": "the bomb was hard"}', "not one of the rubric's codes"),
    ('{"mode": 3}', "not one of the rubric's codes"),
    ('{"mode": "omission"', "no JSON object"),
])
def test_parse_verdict_classifies_what_it_cannot_read(text, reason):
    v = parse_verdict(text, RUBRIC)
    assert (v.outcome, v.mode) == ("unparsed", None) and reason in v.reason


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_parse_verdict_never_raises(text):
    v = parse_verdict(text, RUBRIC)
    assert v.outcome in ("coded", "unparsed")
    assert (v.mode in CODES) == (v.outcome == "coded")


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(CODES), st.booleans(), st.text(max_size=80), st.text(max_size=80),
       st.text(max_size=80).filter(lambda s: "{" not in s))
def test_parse_verdict_finds_a_verdict_in_any_prose(code, flag, rationale, before, after):
    """A JSON verdict anywhere in the reply, prose around it, is read back exactly (the last
    object with a mode wins; prose after it holds no object)."""
    body = json.dumps({"rationale": rationale, "mode": code, "ungrounded_ref": flag})
    v = parse_verdict(f"{before}\n{body}\n{after}", RUBRIC)
    assert (v.outcome, v.mode, v.rationale, v.flags["ungrounded_ref"]) == ("coded", code,
                                                                            rationale, flag)


def test_agreement_counts_and_kappa():
    """4 episodes: flag [T, T, F, F], judge [T, F, F, F]: agreement 3/4, kappa 0.5."""
    a = agreement([True, True, False, False], [True, False, False, False])
    assert (a["both"], a["flag_only"], a["judge_only"], a["neither"]) == (1, 1, 0, 2)
    assert a["agreement"] == 0.75 and a["kappa"] == pytest.approx(0.5)
    assert agreement([False] * 3, [False] * 3)["kappa"] is None  # both constant: undefined
    assert agreement([], [])["agreement"] is None


def test_summary_counts_outcomes_and_ending_consistency():
    entries = [
        {"judge_outcome": "coded", "failure_mode": "slow_protocol", "failure_stage":
         "communication", "ending": "timed_out", "wrong_round": False, "omission": False,
         "dead_channel": True, "assumed_meaning": True, "ungrounded_ref": True},
        {"judge_outcome": "coded", "failure_mode": "wrong_round", "failure_stage": "reasoning",
         "ending": "timed_out", "wrong_round": True, "omission": False, "dead_channel": False,
         "assumed_meaning": None, "ungrounded_ref": False},
        {"judge_outcome": "unparsed", "failure_mode": None, "failure_stage": None,
         "ending": "wrong_action", "wrong_round": True, "omission": True,
         "dead_channel": False, "assumed_meaning": None, "ungrounded_ref": None},
    ]
    s = summary(RUBRIC, entries)
    assert s["outcomes"] == {"coded": 2, "unparsed": 1, "refused": 0, "context_length": 0}
    assert s["modes"]["slow_protocol"] == s["modes"]["wrong_round"] == 1
    assert s["shares"]["slow_protocol"] == 0.5 and s["stage_shares"]["action"] == 0.0
    assert s["ending_consistent"] == 0.5  # wrong_round cannot end by a time-out
    assert s["flags"]["assumed_meaning"] == {"share": 1.0, "answered": 1}
    assert s["agreement"]["wrong_round vs mode:wrong_round"]["agreement"] == 1.0
    assert s["agreement"]["dead_channel vs flag:ungrounded_ref"]["both"] == 1


# -- a bomb LLM run coded by the stub's judge --------------------------------------------------

@pytest.fixture(scope="module")
def bomb_run(server, tmp_path_factory):
    """Six episodes of the stub's ``good`` team on base-1, analysed with the ``judge`` model
    by the CLI (a subprocess)."""
    from conftest import run_entry

    out = tmp_path_factory.mktemp("bomb-llm")
    results = run_entry("eval/rollout.py", "env=bomb/base-1", "agent=llm",
                        f"llm.base_url={server.url}", "llm.model=good", "llm.backoff_s=0.01",
                        "episodes=6", f"out_dir={out}")
    sent = len(server.requests)
    done = _cli("eval/analyze.py", f"run={out}", "judge.model=judge",
                f"judge.base_url={server.url}", "judge.backoff_s=0.01")
    assert done.returncode == 0, done.stderr
    return out, results, json.loads((out / "analysis.json").read_text()), sent, done


def test_judge_codes_every_lost_episode(bomb_run, server):
    """Every lost episode gets the stub judge's fixed code, its rationale and judged flags;
    shares are exact; the judge saw one compact transcript per lost episode."""
    out, results, a, sent, _ = bomb_run
    lost = results["endings"]["wrong_action"] + results["endings"]["timed_out"]
    assert a["lost"] == lost == len(a["lost_episodes"]) > 0
    assert all(e["failure_mode"] == JUDGE_MODE and e["failure_stage"] == "communication"
               and e["judge_rationale"] == "Step 0: Deaf spoke only to Blind."
               and e["assumed_meaning"] is True and e["ungrounded_ref"] is False
               for e in a["lost_episodes"])
    j = a["judge"]
    assert j["outcomes"] == {"coded": lost, "unparsed": 0, "refused": 0, "context_length": 0}
    assert j["modes"] == {c: lost if c == JUDGE_MODE else 0 for c in CODES}
    assert j["shares"][JUDGE_MODE] == 1.0 and j["stage_shares"]["communication"] == 1.0
    assert j["flags"]["assumed_meaning"] == {"share": 1.0, "answered": lost}
    judged = [b for b in server.requests[sent:] if b["model"] == "judge"]
    assert len(judged) == lost
    assert all("[step 0]" in b["messages"][1]["content"] for b in judged)


def test_the_judged_run_prints_its_summary_without_request_lines(bomb_run):
    """httpx logs every request at INFO (``HTTP Request: POST ...``) under Hydra's job logging:
    the CLI quiets it (:data:`jaxcollab.io.run.QUIET_LOGGERS`) and keeps its own output."""
    out, _, a, _, done = bomb_run
    assert "HTTP Request" not in done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].endswith(f"-> {out / 'analysis.json'}")
    assert f"'judge': {a['judge']['outcomes']}" in done.stdout


def test_flags_of_the_llm_run_come_from_its_replay(bomb_run):
    """The stub team: Deaf speaks to Blind and gestures to Mute, Mute gestures to Deaf, Blind
    cuts wire 1; nothing bounces. Whoever has not spoken when Blind cuts left an omission, so
    a lost episode is an omission exactly when Blind does not play last; the judge's omission
    agrees with the flag on those episodes and no more."""
    _, _, a, _, _ = bomb_run
    lost = a["lost_episodes"]
    assert not any(e["dead_channel"] or e["wrong_round"] for e in lost)
    assert [e["omission"] for e in lost] == [not e["turn_order"].endswith("blind")
                                             for e in lost]
    agree = a["judge"]["agreement"]["omission vs mode:omission"]
    flagged = sum(e["omission"] for e in lost)
    assert (agree["both"], agree["judge_only"]) == (flagged, len(lost) - flagged)
    assert agree["agreement"] == flagged / len(lost)


def test_protocol_families_of_the_llm_run(bomb_run, tmp_path):
    """The stub's Mute gestures one symbol on its first turn, and Blind's first cut ends the
    episode: Mute answered one bit exactly when it plays before Blind (three of the six turn
    orders), else it never gestured (SANZARU Fig. 7's family, or none); ``eval/tables.py``
    counts them per model and variant."""
    _, _, a, _, _ = bomb_run
    p = a["protocol_families"]
    assert p["model"] == "good" and p["undetermined"] == []
    assert p["counts"] == p["variants"]["bomb/base-1"] == {"one_bit": 3, "none": 3}
    order = lambda e: e["turn_order"].split("-")  # noqa: E731
    assert [e["protocol"] for e in a["lost_episodes"]] == [
        "one_bit" if order(e).index("mute") < order(e).index("blind") else "none"
        for e in a["lost_episodes"]]

    from conftest import run_entry

    out, _, _, _, _ = bomb_run
    run_entry("eval/tables.py", "paper=sanzaru", f"runs=[{out}]", f"out_dir={tmp_path}")
    rows = [line.split(" | ") for line in (tmp_path / "protocols.md").read_text().splitlines()
            if line.startswith("| good")]
    assert [r[1:3] for r in rows] == [["3", "0"], ["3", "0"]]  # one_bit, symbol_per_wire
    assert [r[0] for r in rows] == ["| good", "| good base-1"]


@pytest.mark.full  # long: the default tier's time (issue 36)
def test_rerun_sends_nothing_and_garbage_is_unparsed(bomb_run, server, tmp_path):
    """A rerun answers every judge request from the cache; a judge that replies no verdict
    leaves every lost episode ``unparsed`` (counted, no crash)."""
    out, _, a, _, _ = bomb_run
    sent = len(server.requests)
    again = analyze(f"run={out}", "judge.model=judge", f"judge.base_url={server.url}")
    assert len(server.requests) == sent and again["judge"] == a["judge"]
    copy = tmp_path / "run"
    shutil.copytree(out, copy)  # the module's run keeps the stub judge's analysis
    (copy / "analysis.json").unlink()
    bad = analyze(f"run={copy}", "judge.model=garbage", f"judge.base_url={server.url}",
                  "judge.backoff_s=0.01")
    assert bad["judge"]["outcomes"]["unparsed"] == a["lost"]
    assert all(e["failure_mode"] is None and e["judge_reason"] for e in bad["lost_episodes"])


@pytest.mark.slow
def test_llm_bank_run_is_replayed_on_its_pinned_instances(server, tmp_path):
    """An ``agent=llm bank=true`` run (SANZARU's protocol) replays on the bank's pinned
    instances: every episode ends as its transcript says, and the flags follow the stub team's
    rule (omission exactly when Blind does not play last)."""
    from conftest import run_entry

    results = run_entry("eval/rollout.py", "env=bomb/base-1", "agent=llm", "bank=true",
                        "repeats=1", f"llm.base_url={server.url}", "llm.model=good",
                        "llm.backoff_s=0.01", f"out_dir={tmp_path}")
    a = analyze(f"run={tmp_path}")
    assert a["episodes"] == results["episodes"] == 3
    assert a["lost"] == results["endings"]["wrong_action"] + results["endings"]["timed_out"]
    assert [e["omission"] for e in a["lost_episodes"]] == [
        not e["turn_order"].endswith("blind") for e in a["lost_episodes"]]


@pytest.mark.full  # long: the default tier's time (issue 36)
def test_scripted_bank_run_is_replayed_on_its_pinned_instances(tmp_path):
    """``agent=random bank=true`` (3 instances x 1 repeat per base variant) replays on the
    bank's pinned instances and turn-order cycle: one entry per lost episode, with the flags,
    as many per variant (and with the same endings) as the run lost."""
    from conftest import run_entry

    from jaxcollab.envs.bomb.bank import bank_episodes
    from jaxcollab.envs.bomb.bounds import order_name

    results = run_entry("eval/rollout.py", "env=bomb/base", "agent=random", "bank=true",
                        "repeats=1", f"out_dir={tmp_path}")
    a = analyze(f"run={tmp_path}")
    lost = a["lost_episodes"]
    assert a["episodes"] == results["episodes"] == 15 and a["lost"] == len(lost) > 0
    for name, v in results["variants"].items():
        mine = [e for e in lost if e["variant"] == name]
        assert len(mine) == round((1 - v["success_rate"]) * v["episodes"])
        assert {k: sum(e["ending"] == k for e in mine) for k in v["endings"]} == {
            **v["endings"], "defused": 0}
    assert all({"dead_channel", "wrong_round", "omission"} <= e.keys() for e in lost)
    plan = bank_episodes(list(results["variants"]), 1)
    assert [e["turn_order"] for e in lost] == [
        order_name(np.asarray(plan.params.turn_order)[e["episode"]]) for e in lost]
    assert [e["variant"] for e in lost] == [str(plan.variant[e["episode"]]) for e in lost]


def test_judge_needs_a_rubric(tmp_path):
    """A judge for a family with no rubric and no question for one (Keep Talking) is refused
    up front, before any replay or request. (A scripted bomb run, without transcripts, is
    judged on its undetermined protocols only: tests/test_bomb_protocols.py.)"""
    (tmp_path / "results.json").write_text(json.dumps({"config": {
        "env": "ktane/wires", "agent": "random", "episodes": 6, "seed": 0}}))
    with pytest.raises(ValueError, match="judge.model.*family ktane has no rubric"):
        analyze(f"run={tmp_path}", "judge.model=judge", "judge.base_url=http://127.0.0.1:9/v1")


def report(run_dir) -> str:
    """``python eval/report.py run=DIR`` in-process; the page's HTML."""
    from hydra import compose, initialize_config_dir

    run = importlib.import_module("eval.report").run
    with initialize_config_dir(str(ROOT / "configs"), version_base=None):
        run(compose("report", overrides=[f"run={run_dir}"]))
    return (Path(run_dir) / "report.html").read_text()


def browsed(run_dir, tmp_path):
    """The report of ``run_dir`` as headless Chromium builds it (loaded without a script
    error)."""
    from test_report import Dom, assert_loaded, dump_dom

    report(run_dir)
    dom = Dom(dump_dom(Path(run_dir) / "report.html", tmp_path))
    assert_loaded(dom)
    return dom


def _texts(dom, table_id: str) -> dict[str, list[str]]:
    return {k: [c["text"].strip() for c in v] for k, v in dom.rows(table_id).items()}


def test_report_shows_the_failure_modes(bomb_run, tmp_path):
    """The report in a real browser: the modes table with the judge's counts, the ring figure
    and the agreement table; the rationale is not a badge."""
    out, _, a, _, _ = bomb_run
    dom = browsed(out, tmp_path)
    rows = _texts(dom, "failure-modes")
    assert list(rows) == CODES
    assert rows[JUDGE_MODE][:2] == ["communication", str(a["lost"])]
    assert any(el["attrs"].get("alt") == "failure modes" for el in dom.elements)
    assert _texts(dom, "judge-agreement")["omission vs mode:omission"][0] == str(a["lost"])
    assert not any(el["attrs"].get("data-flag") == "judge_rationale" for el in dom.elements)


# -- Keep Talking behaviour ------------------------------------------------------------------

def test_behaviour_of_a_hand_built_episode():
    """Defuser/Expert alternate over 12 steps; the Defuser rotates, selects, cuts (strike),
    cuts (strike), waits, messages; the Expert messages after the first strike only."""
    d = [ROTATE, SELECT, CUT, CUT, WAIT, MESSAGE]
    e = [WAIT, WAIT, MESSAGE, WAIT, WAIT, WAIT]
    verb = np.array([v for pair in zip(d, e) for v in pair])
    strike = np.zeros(12, bool)
    strike[[4, 6]] = True
    ep = {"role": np.arange(12) % 2, "verb": verb, "strike": strike,
          "solved": np.zeros(12, bool), "outcome": "strikeout"}
    out = B.behaviour([ep])
    dd = out["defuser"]["strikeout"]
    assert dd["all"] == {"navigating": 2 / 6, "interacting": 2 / 6, "messaging": 1 / 6,
                         "waiting": 1 / 6, "steps": 6}
    assert dd["early"]["navigating"] == 1.0 and dd["late"]["messaging"] == 0.5
    assert out["expert"]["all"]["middle"] == {"messaging": 0.5, "waiting": 0.5, "steps": 2}
    assert out["defuser"]["solved"]["all"]["steps"] == 0
    assert out["message_rate"] == {"defuser": 1 / 6, "expert": 1 / 6, "either": 2 / 6}
    s = out["after_strike"]
    assert s["strikes"] == 2 and s["next_event"] == {"strike": 1, "solved_module": 0, "none": 1}
    assert s["defuser_next"]["steps"] == 5  # 3 after the first, 2 after the second
    assert s["expert_messaged"] == 0.5 and s["outcomes"] == {"strikeout": 1}


@pytest.mark.full  # long for the default tier (measured idle)
def test_ktane_scripted_behaviour_matches_the_env_counters(tmp_path):
    """``talking`` on ktane/wires, analysed by the CLI: the Defuser's non-message steps are the
    env's action count, and each role's messages the run's message count."""
    from conftest import run_entry

    results = run_entry("eval/rollout.py", "env=ktane/wires", "agent=talking", "episodes=4",
                        f"out_dir={tmp_path}")
    done = _cli("eval/analyze.py", f"run={tmp_path}")
    assert done.returncode == 0, done.stderr
    a = json.loads((tmp_path / "analysis.json").read_text())
    b = a["behaviour"]
    d, e = b["defuser"]["all"]["all"], b["expert"]["all"]["all"]
    n = results["episodes"]
    assert a["lost"] == 0 and b["episodes"]["solved"] == n
    assert round(d["steps"] * (1 - d["messaging"])) == results["mean_defuser_actions"] * n
    messages = round(d["steps"] * d["messaging"] + e["steps"] * e["messaging"])
    assert messages == results["messages_per_module"] * n  # one module
    assert sum(d[k] for k in B.KINDS) == pytest.approx(1.0)


@pytest.mark.full  # long: the default tier's time (issue 36)
def test_ktane_llm_behaviour_from_transcripts(tmp_path, server):
    """The stub's ktane team (Defuser selects then cuts B every turn, Expert always messages),
    replayed from its transcripts: exact shares, rates and one strike per episode."""
    from conftest import run_entry

    results = run_entry("eval/rollout.py", "env=ktane/wires", "agent=llm",
                        f"llm.base_url={server.url}", "llm.model=good", "llm.backoff_s=0.01",
                        "episodes=2", "ktane.reflection=false", f"out_dir={tmp_path}")
    b = analyze(f"run={tmp_path}")["behaviour"]
    rows = _texts(browsed(tmp_path, tmp_path), "behaviour-defuser")
    assert rows["timeout · all"][-1] == str(b["defuser"]["timeout"]["all"]["steps"])
    d = b["defuser"]["timeout"]["all"]
    n = d["steps"]
    assert results["outcomes"]["timeout"] == 2 and n % 2 == 0
    assert d == {"navigating": 2 / n, "interacting": (n - 2) / n, "messaging": 0.0,
                 "waiting": 0.0, "steps": n}
    assert b["message_rate"]["defuser"] == 0.0 and b["message_rate"]["expert"] == 1.0
    assert b["after_strike"]["strikes"] == round(results["mean_strikes"] * 2)


def _late(body: dict) -> float:
    """The Expert answers in 0.5 s; the Defuser's first reply (nothing zoomed) takes 3.2 s,
    so its action lands one 3 s slot late; later replies take 0.05 s."""
    if "You are the Expert" in body["messages"][0]["content"]:
        return 0.5
    return 3.2 if "zoom none" in body["messages"][-1]["content"] else 0.05


@pytest.fixture(scope="module")
def late_server():
    with LLMServer(latency=_late) as srv:
        yield srv


@pytest.mark.full  # a long run: the default tier's budget (CI runs -m full)
def test_ktane_async_llm_behaviour_reads_one_step_per_cycle(tmp_path, late_server):
    """``ktane.mode=async`` against a late server on the wires board the stub solves by
    cutting B (seed 1). Steps: the Defuser's wait while it thinks (3.2 s), Expert messages,
    select, Expert, wait (0.05 s), Expert, cut. By cycle: select with the Expert's messages
    during it, then the cut (the episode ends on it)."""
    from conftest import run_entry

    results = run_entry("eval/rollout.py", "env=ktane/wires", "agent=llm", "ktane.mode=async",
                        f"llm.base_url={late_server.url}", "llm.model=good",
                        "llm.backoff_s=0.01", "seed=1", "episodes=1", "ktane.reflection=false",
                        f"out_dir={tmp_path}")
    a = analyze(f"run={tmp_path}")
    b = a["behaviour"]
    assert results["success_rate"] == 1.0 and a["lost"] == 0 and b["episodes"]["solved"] == 1
    d = b["defuser"]["solved"]
    assert d["all"] == {"navigating": 1 / 2, "interacting": 1 / 2, "messaging": 0.0,
                        "waiting": 0.0, "steps": 2}
    assert d["early"]["navigating"] == 1.0 and d["middle"]["interacting"] == 1.0
    assert b["expert"]["solved"]["all"] == {"messaging": 1.0, "waiting": 0.0, "steps": 1}
    assert b["message_rate"] == {"defuser": 0.0, "expert": 1.0, "either": 1 / 2}
    assert b["after_strike"]["strikes"] == 0


def test_per_cycle_folds_the_thinking_waits():
    from types import SimpleNamespace

    from jaxcollab.agents.ktane.analysis import per_cycle
    from jaxcollab.envs.ktane import tables as KT

    t = np.arange(8)[:, None]  # one episode: think, E msg, select, E, think, E, cut, E (ended)
    states = SimpleNamespace(turn=t, outcome=np.where(t < 7, KT.RUNNING, KT.SOLVED),
                             strikes=np.zeros((8, 1), int), solved=np.zeros((8, 1, 1), int))
    verbs = np.zeros((8, 1, 2), int)
    verbs[1, 0, 1], verbs[2, 0, 0], verbs[6, 0, 0] = MESSAGE, SELECT, CUT
    thinking = np.array([[True, False, False, False, True, False, False, False]])
    turn, outcome, v, *_ = per_cycle(states, verbs, thinking)
    assert turn[:, 0].tolist() == [2, 3, 6, 7, 7, 7, 7, 7]
    assert (outcome[:3, 0] == KT.RUNNING).all() and (outcome[3:, 0] != KT.RUNNING).all()
    assert v[:3, 0].tolist() == [[SELECT, 0], [0, MESSAGE], [CUT, 0]]


# -- entry points through the plug-in ----------------------------------------------------------

def test_analyze_refuses_a_family_without_analysis(tmp_path):
    (tmp_path / "results.json").write_text(json.dumps({"config": {"env": "parity/action"}}))
    with pytest.raises(ValueError, match="run=.*a family with a trace analysis, not parity"):
        analyze(f"run={tmp_path}")
