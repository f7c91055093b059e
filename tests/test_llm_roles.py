"""Mixed teams: per-role models (``llm.roles``), one client per model with a shared cache, and
the other-play command (GPTNT §7 Tables 6-7; SANZARU trios) against a local server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from eval.otherplay import assignments, parse_args, summarize
from eval.otherplay import run as otherplay
from jaxcollab.core.errors import ConfigValueError
from jaxcollab.io.llm_run import RunConfig, evaluate
from jaxcollab.io.run import RunCollision
from jaxcollab.llm.client import ChatClient, LLMConfig, Request
from jaxcollab.llm.roles import TeamClient, role_configs
from jaxcollab.llm.run import transcript_path

ROOT = Path(__file__).parents[1]


def cfg(server, model="good", **kw) -> LLMConfig:
    return LLMConfig(base_url=server.url, model=model, backoff_s=0.01, **kw)


def _role_of(body: dict) -> str:
    return "expert" if "You are the Expert" in body["messages"][0]["content"] else "defuser"


def test_each_role_plays_its_own_model(server, tmp_path):
    """The Expert plays the GPT-5-style model (token limit learned as max_completion_tokens,
    thinking fields dropped, the least reasoning effort it takes sent instead: GPTNT F.3), the
    Defuser the base model with Keep Talking's defaults (1,000 tokens, thinking off: GPTNT §4);
    one shared cache replays both (and the reflections, asked for) on a rerun."""
    rc = RunConfig(env="ktane/wires", episodes=1, options={"ktane": {"reflection": True}})
    n = len(server.requests)
    llm = cfg(server, max_tokens=1000, thinking_budget=0, roles={"expert": {"model": "gpt5"}})
    results = evaluate(llm, rc, tmp_path)
    sent = [b for b in server.requests[n:] if b["model"] in ("good", "gpt5")]
    by_role = {(b["model"], _role_of(b)) for b in sent}
    assert by_role == {("good", "defuser"), ("gpt5", "expert")}
    good = [b for b in sent if b["model"] == "good"]
    assert all(b["max_tokens"] == 1000 and b["thinking_budget"] == 0 for b in good)
    expert = [b for b in sent if b["model"] == "gpt5"]
    learned = [("max_tokens" in b, "thinking_budget" in b, b.get("reasoning_effort"))
               for b in expert[:7]]
    assert learned == [(True, True, None)] + [(False, True, None)] * 3 + [
        (False, False, "none")] + [(False, False, "minimal")] * 2  # then remembered:
    assert all(b["max_completion_tokens"] == 1000 and "thinking_budget" not in b
               and b["reasoning_effort"] == "minimal" and "temperature" not in b
               for b in expert[6:])  # GPT-5: least effort (GPTNT F.3), default temperature
    assert results["roles"] == {"expert": {"model": "gpt5", "base_url": server.url}}
    assert results["adapted"] == {"gpt5": {"token_limit_key": "max_completion_tokens",
                                           "dropped": ["chat_template_kwargs", "temperature",
                                                       "thinking_budget",
                                                       "thinking_token_budget"],
                                           "reasoning_effort": "minimal"}}
    rec = json.loads(transcript_path(tmp_path, "ktane/wires").read_text())
    assert set(rec["data"]["reflection"]) == {"defuser", "expert"}  # one batch, two clients
    n = len(server.requests)
    again = evaluate(llm, rc, tmp_path / "b",
                     cache_path=tmp_path / "cache.jsonl")
    assert len(server.requests) == n and again["success_rate"] == results["success_rate"]


def test_roles_fall_back_and_share_clients(server):
    base = cfg(server, temperature=0.6)
    roles = role_configs(base, {"deaf": {"model": "slow"}, "mute": {"model": None},
                                "blind": {"model": "slow"}}, ("deaf", "mute", "blind"))
    assert roles["mute"] == base and roles["deaf"].model == "slow"
    assert roles["deaf"].base_url == base.base_url and roles["deaf"].temperature == 0.6
    assert roles["deaf"].api_key_env == base.api_key_env == "OPENAI_API_KEY"
    away = role_configs(base, {"deaf": {"base_url": "http://elsewhere:1/v1"},
                               "mute": {"base_url": "http://elsewhere:1/v1",
                                        "api_key_env": "ELSEWHERE_KEY"}})
    assert away["deaf"].api_key_env == "" and away["mute"].api_key_env == "ELSEWHERE_KEY"
    team = TeamClient(base, roles)
    assert len(team.clients) == 2 and team.client("deaf") is team.client("blind")
    assert team.client("mute") is team.default is team.client("solo")
    with pytest.raises(ValueError, match="llm.roles.pilot: unknown role 'pilot'; valid: deaf"):
        role_configs(base, {"pilot": {"model": "x"}}, ("deaf", "mute", "blind"))
    with pytest.raises(ValueError, match="llm.roles.deaf.timeout_s is not a role setting"):
        role_configs(base, {"deaf": {"timeout_s": 3}})


def test_otherplay_tables_from_runs():
    """Exact tables from known per-assignment numbers: the success matrix (GPTNT Table 6),
    success by role and the self- vs other-play communication rates (Table 7)."""
    roles = ("defuser", "expert")
    teams = assignments(["A", "B"], roles)
    assert teams == [{"defuser": "A", "expert": "A"}, {"defuser": "A", "expert": "B"},
                     {"defuser": "B", "expert": "A"}, {"defuser": "B", "expert": "B"}]
    numbers = [(0.5, 2, 10), (0.25, 6, 10), (0.0, 3, 10), (1.0, 1, 5)]
    runs = [{"roles": t, "success_rate": s, "messages": m, "steps": k}
            for t, (s, m, k) in zip(teams, numbers)]
    out = summarize(["A", "B@http://127.0.0.1:1/v1"], roles, runs)
    assert out["success_matrix"] == {"A": {"A": 0.5, "B": 0.25}, "B": {"A": 0.0, "B": 1.0}}
    assert out["success_by_role"] == {"defuser": {"A": 0.375, "B": 0.5},
                                      "expert": {"A": 0.25, "B": 0.625}}
    assert out["communication"] == {
        "A": {"self": 0.2, "other_as_defuser": 0.6, "other_as_expert": 0.3},
        "B": {"self": 0.2, "other_as_defuser": 0.3, "other_as_expert": 0.6}}
    trios = assignments(["A", "B"], ("deaf", "mute", "blind"))
    assert len(trios) == 8 and trios[5] == {"deaf": "B", "mute": "A", "blind": "B"}


def test_otherplay_arguments_are_checked():
    assert parse_args(["models=[a,b]", "out_dir=x", "env=ktane/wires"]) == (
        ["a", "b"], "x", ["env=ktane/wires"])
    with pytest.raises(ConfigValueError, match="out_dir"):
        parse_args(["models=[a,b]"])
    from eval.otherplay import _role_overrides

    assert _role_overrides("expert", "m") == ['+llm.roles.expert.model="m"']
    local, hosted = (_role_overrides("expert", e) for e in ("q/q@http://h:1/v1",
                                                            "g@https://api/v1@G_KEY"))
    assert local[1:] == ['+llm.roles.expert.base_url="http://h:1/v1"',
                         '+llm.roles.expert.api_key_env=""']  # llm.*'s key stays home
    assert hosted[2] == '+llm.roles.expert.api_key_env="G_KEY"'


@pytest.mark.parametrize("models", ["[good]", "good", "[good,good]",
                                    "[good,good@http://127.0.0.1:1/v1]"])
def test_otherplay_refuses_fewer_than_two_distinct_models(tmp_path, models):
    """``models=[good]`` played one self-play assignment; a name twice (also at another
    endpoint: the tables are by name) pairs nothing new. Refused before any file is written,
    with the message alone."""
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "eval/otherplay.py", "env=ktane/wires",
                           f"models={models}", "llm.base_url=http://127.0.0.1:1/v1",
                           f"out_dir={out}"], cwd=ROOT, capture_output=True, text=True,
                          env=os.environ | {"PYTHONPATH": str(ROOT)}, timeout=600)
    assert done.returncode == 1
    assert done.stderr.startswith("Error: models=") and done.stderr.count("\n") == 1
    assert "is invalid; expected two or more distinct model names" in done.stderr
    assert not out.exists()


def _args(server, out, models="[good,gpt5]"):
    # the README's command on one of its fixed missions (GPTNT §7: single-module, sync)
    return ["env=ktane/missions/single/wires/0", "ktane.mode=sync", f"models={models}",
            "episodes=1",
            f"llm.base_url={server.url}", "llm.backoff_s=0.01", f"out_dir={out}"]


@pytest.mark.full  # long for the default tier (measured idle)
def test_otherplay_cli_plays_every_pair_and_resumes(server, tmp_path):
    """The README command as a subprocess: 4 ordered pairs, each its own sub-run; a rerun
    reads them back and sends nothing; another model list in the same out_dir is refused.
    The callback pool is sized before JAX starts (it used to start with one thread a core:
    about 2 requests in flight at llm.concurrency=16, and a warning naming PJRT_NPROC)."""
    proc = subprocess.run([sys.executable, "eval/otherplay.py", *_args(server, tmp_path)],
                          cwd=ROOT, env={k: v for k, v in os.environ.items()
                                         if k != "PJRT_NPROC"} | {"PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "PJRT_NPROC" not in proc.stderr, proc.stderr[-2000:]
    results = json.loads((tmp_path / "results.json").read_text())
    assert [r["roles"] for r in results["runs"]] == assignments(["good", "gpt5"],
                                                                ("defuser", "expert"))
    for r in results["runs"]:
        sub = json.loads((Path(r["dir"]) / "results.json").read_text())
        assert sub["success_rate"] == r["success_rate"] == \
            results["success_matrix"][r["roles"]["defuser"]][r["roles"]["expert"]]
        assert sub["config"]["llm"]["roles"] == {role: {"model": m}
                                                 for role, m in r["roles"].items()}
        assert 0 < r["messages"] <= r["steps"]  # the good Expert sends a message every turn
    assert set(results["communication"]["good"]) == {"self", "other_as_defuser",
                                                     "other_as_expert"}
    assert (tmp_path / "otherplay.png").stat().st_size > 0
    n = len(server.requests)
    assert otherplay(_args(server, tmp_path))["runs"] == results["runs"]  # read back
    assert len(server.requests) == n
    with pytest.raises(RunCollision, match="different config"):
        otherplay(_args(server, tmp_path, models="[good,slow]"))


@pytest.mark.slow  # 8 sub-runs; the 2-role path is the default suite's CLI test
def test_sanzaru_trios_from_two_models(server, tmp_path):
    """The README's trio command in-process: all 8 (Deaf, Mute, Blind) assignments of two
    models, each role's requests sent to its model, and the tables over all of them."""
    n = len(server.requests)
    results = otherplay(["env=bomb/base-1", "models=[good,gpt5]", "episodes=1",
                         f"llm.base_url={server.url}", "llm.backoff_s=0.01",
                         f"out_dir={tmp_path}"])
    assert len(results["runs"]) == 8 and results["roles"] == ["deaf", "mute", "blind"]
    assert "success_matrix" not in results  # a matrix needs two roles
    for r in results["runs"]:
        sub = json.loads((Path(r["dir"]) / "results.json").read_text())
        assert sub["success_rate"] == r["success_rate"] and sub["episodes"] == 1
    asked = {(b["model"], role) for b in server.requests[n:]
                for role in ("DEAF", "MUTE", "BLIND")
                if f"You are {role}" in b["messages"][0]["content"]}
    assert asked == {(m, role) for m in ("good", "gpt5") for role in ("DEAF", "MUTE",
                                                                         "BLIND")}
    means = results["success_by_role"]
    for role in ("deaf", "mute", "blind"):
        for m in ("good", "gpt5"):
            rates = [r["success_rate"] for r in results["runs"] if r["roles"][role] == m]
            assert means[role][m] == pytest.approx(sum(rates) / 4)


def test_roles_are_run_identity_and_checked_up_front(tmp_path):
    """The collision guard compares ``llm.roles`` like any other key (another Expert model is
    another run); a role the family lacks is refused before anything is written."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from jaxcollab.agents.driver import check_config
    from jaxcollab.io.results import ResultsFile
    from jaxcollab.io.run import guard_results, validate

    base = ["env=ktane/wires", "agent=llm", f"out_dir={tmp_path}"]
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base=None):
        a, b, bad = (OmegaConf.to_container(validate(compose("rollout", overrides=base + o))) for
                     o in (["+llm.roles.expert.model=A"], ["+llm.roles.expert.model=B"],
                           ["+llm.roles.pilot.model=A"]))
        with pytest.raises(ConfigValueError, match="unknown role 'pilot'; valid: defuser"):
            check_config(OmegaConf.create(bad))
    results = ResultsFile(tmp_path / "results.json")
    results.update({"config": a})
    (tmp_path / "cache.jsonl").write_text("{}\n")  # the run did some work
    guard_results(results, a, None)  # the same run resumes
    with pytest.raises(RunCollision, match=r"llm.roles.expert.model: 'A' -> 'B'"):
        guard_results(results, b, None)


def test_family_defaults_and_the_seed_salt(tmp_path):
    """Per-family token budgets and thinking (GPTNT §4; collaboration-gap paper §6) fill the
    nulls; the run's seed salts every cache key."""
    import jaxcollab
    from jaxcollab.llm.run import LLMTeam, llm_config

    block = {"llm": {"base_url": "http://127.0.0.1:1/v1", "max_tokens": None,
                     "thinking_budget": None, "temperature": None}}
    got = {f: (c.max_tokens, c.thinking_budget, c.temperature) for f, c in (
        (f, llm_config(jaxcollab.family(f"{f}/x"), block)) for f in ("ktane", "maze", "bomb"))}
    assert got == {"ktane": (1000, 0, 0.6), "maze": (2048, None, 1.0), "bomb": (2048, None, 0.6)}
    explicit = llm_config(jaxcollab.family("ktane/x"), {"llm": {"thinking_budget": -1}})
    assert "thinking_budget" not in ChatClient(explicit).body(Request("expert", ()))
    team = LLMTeam(jaxcollab.family("ktane/x"), {"seed": 7, **block}, tmp_path)
    assert team.client.default.salt == "seed 7"



def test_communication_counts_of_a_record():
    """GPTNT Table 7's count on Keep Talking: Defuser cycles (its turn and the Expert's after it)
    with a carried-out message from either player; the bomb's: turns with a speak or gesture."""
    import jaxcollab

    msg = {"result": {"kind": "send_message", "data": {"message": "hi"}}}
    act = {"result": {"kind": "interact_game", "data": {"action": "cut", "location": "A"}}}
    ktane = {"steps": 7, "agents": {
        "defuser": [{"step": 0, "ok": True, "action": act}, {"step": 2, "ok": True, "action": msg},
                    {"step": 4, "ok": False, "action": msg}, {"step": 6, "ok": True,
                                                               "action": act}],
        "expert": [{"step": 1, "ok": True, "action": msg}, {"step": 3, "ok": True, "action": msg},
                   {"step": 5, "ok": True, "action": {"result": {"kind": "do_nothing"}}}]}}
    assert jaxcollab.family("ktane/x").llm.communication(ktane) == (2, 4)  # cycles 0, 1 of 4
    # async: each cycle a wait while the Defuser thought, its action, an Expert step after each
    ktane["agents"] = {"defuser": [{"step": s, "ok": True, "action": act} for s in (0, 4, 6)],
                       "expert": [{"step": s, "ok": True, "action": msg} for s in (3, 5)]}
    assert jaxcollab.family("ktane/x").llm.communication(ktane) == (2, 3)  # cycles 0, 1 of 3
    bomb = {"steps": 3, "agents": {
        "deaf": [{"ok": True, "action": [{"call": "speak", "text": "x"}, {"call": "wait"}]}],
        "mute": [{"ok": True, "action": [{"call": "wait"}]}],
        "blind": [{"ok": False, "action": None}]}}
    assert jaxcollab.family("bomb/x").llm.communication(bomb) == (1, 3)
