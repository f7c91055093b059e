"""Protocol families of bomb episodes (SANZARU Figs. 7-12) by rule from Mute's gestures: the
rules on hand-built messages, and the scripted teams whose protocol is known."""

from __future__ import annotations

import numpy as np
import pytest

from jaxcollab.agents.bomb.protocols import FAMILIES, classify
from jaxcollab.envs.bomb import tables as T

CLAP, FIST = T.SYMBOL_IDS["clap"], T.SYMBOL_IDS["fist"]
DOT, DASH = T.SYMBOL_IDS["point_up"], T.SYMBOL_IDS["point_down"]
YES, NO = T.SYMBOL_IDS["thumbs_up"], T.SYMBOL_IDS["thumbs_down"]


def counts(*values: int) -> list[int]:
    """Each value as that many claps, closed by a fist."""
    return [s for v in values for s in [CLAP] * v + [FIST]]


def morse(*letters: str) -> list[int]:
    return [s for word in letters for s in [DOT if c == "." else DASH for c in word] + [FIST]]


@pytest.mark.parametrize(("messages", "unprompted", "family"), [
    ([], [], "none"),
    ([[NO], [NO], [YES]], [False] * 3, "one_bit"),  # Fig. 7: one yes/no per round
    ([[3, 7, 2, 1, 9]], [False], "symbol_per_wire"),  # Fig. 8
    ([counts(1, 3, 2), counts(4)], [False, False], "counting"),  # Fig. 9
    ([counts(4, 4, 1, 5, 3, 1, 3, 1)], [False], "letter_grid"),  # Fig. 11: T E L L
    ([morse("-...", ".-..", ".-.")], [False], "morse"),  # Fig. 10: B L R
    ([morse("-.", ".-")], [False], "symbol_per_wire"),  # two letters: read as symbols
    ([counts(2, 1, 3, 2)], [True], "whole_table"),  # Fig. 12: sent before anyone asked
    ([counts(2, 1, 3, 2)], [False], "counting"),  # the same counts, asked for
    ([[CLAP, CLAP, CLAP]], [False], "undetermined"),  # one mark: a count or a symbol
    ([[1, 2, 2, 1]], [False], "undetermined"),
])
def test_rules_on_hand_built_messages(messages, unprompted, family):
    assert classify(messages, unprompted) == family


@pytest.mark.full
def test_scripted_teams_show_their_own_protocol():
    """``onebit`` answers one bit per round and ``counting`` in runs of claps in every episode
    Mute gestured in; ``symbol`` is never taken for bits or counts (an episode whose messages
    use two symbols or fewer is left undetermined)."""
    from jaxcollab.agents.bomb.traces import episode_traces

    names = ["bomb/base-2", "bomb/flashing-1", "bomb/bait-1"]
    got = {team: [FAMILIES[c] for c in episode_traces(names, team, 6, 0)["protocol"]]
           for team in ("onebit", "counting", "symbol")}
    assert got["onebit"] == ["one_bit"] * 18
    assert set(got["counting"]) <= {"counting", "none"} and "counting" in got["counting"]
    assert set(got["symbol"]) <= {"symbol_per_wire", "undetermined"}
    assert got["symbol"].count("symbol_per_wire") > 9
    oracle = episode_traces(names[:1], "oracle", 6, 0)["protocol"]
    assert np.array_equal(oracle, np.full(6, FAMILIES.index("none")))


# -- the judge's protocol question (SANZARU Figs. 7-12) for the episodes the rules leave open ----

def test_protocol_rubric_asks_for_one_family_of_figs_7_to_12():
    """The judge is offered exactly the rules' families (no stages, no flags, no endings) and
    names one under ``family``; the failure rubric's prompt keeps its stages and endings."""
    from llm_server import JUDGE_PROTOCOL_REPLY, JUDGE_REPLY

    from jaxcollab.agents.bomb.sanzaru import PROTOCOL_RUBRIC, RUBRIC
    from jaxcollab.analysis.judge import parse_verdict, system_prompt

    assert PROTOCOL_RUBRIC.codes == FAMILIES[:-1]  # all but "undetermined"
    prompt = system_prompt(PROTOCOL_RUBRIC)
    assert prompt.endswith('"family" is one of: one_bit, symbol_per_wire, counting, morse, '
                           'letter_grid, whole_table, none.')
    assert "Stage" not in prompt and "Also answer" not in prompt and "ends by" not in prompt
    assert sum(line.startswith("- ") for line in prompt.splitlines()) == 7
    assert "Stage communication:" in system_prompt(RUBRIC)
    assert "(the episode ends by timed_out)" in system_prompt(RUBRIC)
    v = parse_verdict(JUDGE_PROTOCOL_REPLY, PROTOCOL_RUBRIC)
    assert (v.outcome, v.mode, v.rationale) == (
        "coded", "symbol_per_wire", "Mute answered each query with one symbol.")
    assert parse_verdict('{"family": "Morse code"}', PROTOCOL_RUBRIC).mode == "morse"
    assert parse_verdict(JUDGE_REPLY, PROTOCOL_RUBRIC).reason == (
        "no JSON object with a 'family' key")
    assert parse_verdict('{"family": "semaphore"}', PROTOCOL_RUBRIC).reason == (
        "family 'semaphore' is not one of the rubric's codes")


def test_summary_counts_families_by_rule_and_by_judge():
    """Without a judge the undetermined are listed (``judge_ran`` false); with one, a coded
    episode counts under its family ``by: judge``, an uncoded one stays undetermined."""
    from jaxcollab.agents.bomb.protocols import summary

    und, spw = FAMILIES.index("undetermined"), FAMILIES.index("symbol_per_wire")
    ids = [{"env": "bomb/base-1", "episode": e} for e in range(4)]
    plain = summary(np.array([spw, und, spw, und]), np.zeros(4, int), ["bomb/base-1"], None, ids)
    assert plain["by"] == {"rule": 4, "judge": 0} and plain["judge_ran"] is False
    assert plain["judged"] == [] and [u["episode"] for u in plain["undetermined"]] == [1, 3]
    verdict = {"judge_outcome": "coded", "judge_rationale": "r", "judge_reason": ""}
    judged = [{"env": "bomb/base-1", "episode": 1, "protocol": "counting", **verdict},
              {"env": "bomb/base-1", "episode": 3, "protocol": "undetermined",
               **verdict, "judge_outcome": "unparsed", "judge_reason": "empty reply"}]
    cnt = FAMILIES.index("counting")
    got = summary(np.array([spw, cnt, spw, und]), np.zeros(4, int), ["bomb/base-1"], "m", ids,
                  judged)
    assert got["counts"] == {"symbol_per_wire": 2, "counting": 1, "undetermined": 1}
    assert got["by"] == {"rule": 3, "judge": 1} and got["judge_ran"] is True
    assert [j["by"] for j in got["judged"]] == ["judge", "rule"]
    assert got["undetermined"] == [{"env": "bomb/base-1", "episode": 3}]


def test_a_scripted_episode_is_rebuilt_as_the_transcript_a_judge_reads():
    """Two turns of a hand-built trajectory (Deaf speaks and gestures to Mute, Mute gestures
    two claps back, Blind cuts wire 2, then the episode is over): the calls an LLM transcript
    would hold, rendered by the judges' compact form."""
    from types import SimpleNamespace

    from jaxcollab.agents.bomb.protocols import episode_records
    from jaxcollab.agents.bomb.sanzaru import render

    steps, n = 4, T.N_AGENTS
    act, arg = np.zeros((steps, 1, n), int), np.zeros((steps, 1, n), int)
    speak_to, gesture_to = np.full((steps, 1, n), T.NO_TARGET), np.full((steps, 1, n), T.NO_TARGET)
    speech, gesture = np.zeros((steps, 1, n, 4), np.uint8), np.zeros((steps, 1, n, 3), np.uint8)
    speak_to[0, 0, T.DEAF], speech[0, 0, T.DEAF, :2] = T.MUTE, list(b"hi")
    gesture_to[0, 0, T.DEAF], gesture[0, 0, T.DEAF, 0] = T.MUTE, YES
    gesture_to[1, 0, T.MUTE], gesture[1, 0, T.MUTE, :2] = T.DEAF, CLAP
    act[2, 0, T.BLIND], arg[2, 0, T.BLIND] = T.ACT_NAMES.index("cut"), 1
    ending = np.array([[T.RUNNING]] * 3 + [[T.DEFUSED]])
    state = SimpleNamespace(turn=np.array([[0], [1], [2], [0]]), ending=ending)
    actions = SimpleNamespace(act=act, arg=arg, speak_to=speak_to, speech=speech,
                              gesture_to=gesture_to, gesture=gesture)
    [record] = episode_records(state, actions, np.array([[0, 1, 2]]), np.array([T.DEFUSED]),
                               [0])
    entry = {"env": "bomb/base-1", "turn_order": "DMB", "rounds": 1}
    assert render(record, entry).splitlines() == [
        "Variant bomb/base-1, turn order DMB, ended: defused after 1 rounds.", "",
        "[step 0] DEAF",
        '  calls call="speak" to="mute" text="hi"; call="gesture" to="mute" '
        'symbols=["thumbs_up"]',
        "[step 1] MUTE", '  calls call="gesture" to="deaf" symbols=["clap", "clap"]',
        "[step 2] BLIND", '  calls call="act" op="cut" position=2']


@pytest.mark.full
def test_the_judge_codes_a_scripted_runs_undetermined_episodes(server, tmp_path):
    """``symbol`` on base-1, 8 episodes, seed 0: the rules leave episodes 3 and 5
    undetermined; ``eval/analyze.py`` with the stub judge asks about exactly those two (their
    transcripts rebuilt from the replay), counts them ``by: judge`` as the judge's
    ``symbol_per_wire`` and leaves none undetermined; no failure modes without transcripts;
    ``eval/tables.py paper=sanzaru`` reports the judged families."""
    import csv

    from conftest import run_entry
    from llm_server import JUDGE_FAMILY

    run = tmp_path / "symbol"
    run_entry("eval/rollout.py", "env=bomb/base-1", "agent=symbol", "episodes=8", "seed=0",
              f"out_dir={run}")
    a = run_entry("eval/analyze.py", f"run={run}", "judge.model=judge",
                  f"judge.base_url={server.url}", "judge.backoff_s=0.01")
    p = a["protocol_families"]
    assert p["counts"] == {JUDGE_FAMILY: 8} and p["by"] == {"rule": 6, "judge": 2}
    assert p["undetermined"] == [] and p["judge_ran"] is True
    assert [(j["episode"], j["protocol"], j["by"], j["judge_outcome"]) for j in p["judged"]] == [
        (3, JUDGE_FAMILY, "judge", "coded"), (5, JUDGE_FAMILY, "judge", "coded")]
    asked = [b for b in server.requests if b["model"] == "judge"]
    assert len(asked) == 2 and "judge" not in a
    assert all('"family" is one of' in b["messages"][0]["content"] for b in asked)
    assert all("[step 0]" in b["messages"][1]["content"] and "MUTE" in b["messages"][1]["content"]
               for b in asked)
    out = tmp_path / "tables"
    run_entry("eval/tables.py", "paper=sanzaru", f"runs=[{run}]", f"out_dir={out}")
    with open(out / "protocols.csv") as f:
        cell = {(r["row"], r["column"]): r["value"] for r in csv.DictReader(f)}
    assert [cell[("symbol", c)] for c in (JUDGE_FAMILY, "undetermined", "by judge")] == [
        "8", "0", "2"]
    assert cell[("symbol base-1", "by judge")] == "2"
