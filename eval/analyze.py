"""Trace analysis of a finished run, through its family's plug-in.

``python eval/analyze.py run=DIR [judge.model=NAME judge.base_url=URL]`` reads ``DIR/results.json``
of a finished ``eval/rollout.py`` run (a scripted team or ``agent=llm``), asks the family of its
``env`` for its analysis (:attr:`jaxcollab.core.family.Family.analysis`) and writes
``DIR/analysis.json``: the family's keys (bomb: SANZARU Table 6's deterministic flags per lost
episode, :mod:`jaxcollab.agents.bomb.analysis`; Keep Talking: GPTNT §8 / Table 7 behaviour,
:mod:`jaxcollab.agents.ktane.behaviour`). With ``judge.model`` set, a judge model codes every lost
episode from its transcript with the family's rubric (bomb: SANZARU Table 5,
:mod:`jaxcollab.agents.bomb.sanzaru`): each lost episode gets ``failure_mode``, ``failure_stage``
and ``judge_rationale`` (and the judged flags), and ``judge`` holds the counts, shares and the
judge's agreement with the deterministic flags (:func:`jaxcollab.analysis.judge.summary`).
Judge requests go through :class:`jaxcollab.llm.client.ChatClient` and are cached
(``judge.cache``, default ``DIR/judge_cache.jsonl``): a rerun replays them and sends nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

from omegaconf import DictConfig

import jaxcollab
from jaxcollab.analysis import judge
from jaxcollab.core.errors import ConfigValueError
from jaxcollab.io.run import env_selection, hydra_main, start_run
from jaxcollab.llm.client import ChatClient, LLMConfig
from jaxcollab.llm.run import read_transcripts, transcript_path


def recorded(run_dir: str):
    """``(results, family)`` of the finished run in ``run_dir``.

    Raises:
        ConfigValueError: no results.json, no recorded ``env``, or a family without an
            analysis.
    """
    path = Path(run_dir) / "results.json"
    if not path.is_file():
        raise ConfigValueError("run", run_dir, "a finished run directory with results.json")
    data = json.loads(path.read_text())
    env = (data.get("config") or {}).get("env") or data.get("env")
    if not env:
        raise ConfigValueError("run", run_dir, "an eval/rollout.py run (results with env)")
    family = jaxcollab.family(env_selection("run", env)[0])
    if family.analysis is None:
        raise ConfigValueError("run", run_dir, f"a run of a family with a trace analysis, not "
                               f"{family.name}")
    return data, family


def _check(cfg: DictConfig) -> None:
    """Raises ConfigValueError: a run :func:`recorded` refuses, or a judge for a family
    without a rubric or a run without transcripts."""
    data, family = recorded(cfg.run)
    if cfg.judge.model is None:
        return
    if family.analysis.judge is None:
        raise ConfigValueError("judge.model", cfg.judge.model, f"no judge: family "
                               f"{family.name} has no failure-mode rubric")
    env = (data.get("config") or {}).get("env") or data.get("env")
    if not any(transcript_path(cfg.run, n).is_file() for n in env_selection("run", env)):
        raise ConfigValueError("judge.model", cfg.judge.model, f"a run with transcripts "
                               f"(agent=llm); {cfg.run} holds none")


def judged(analysis: dict, run_dir: Path, rubric: judge.Rubric, block: dict) -> dict:
    """``analysis`` with every lost episode coded by the judge of ``block`` (the ``judge``
    config) and the ``judge`` summary added.

    Raises:
        ConfigValueError: a lost episode without a transcript (not an ``agent=llm`` run).
        LLMError: the judge endpoint cannot serve.
    """
    lost = analysis.get("lost_episodes", [])
    records = {}
    for env in {e["env"] for e in lost}:
        for r in read_transcripts(transcript_path(run_dir, env)):
            records[(env, int(r["episode"]))] = r
    missing = [e for e in lost if (e["env"], int(e["episode"])) not in records]
    if missing:
        raise ConfigValueError("judge.model", block["model"], f"a run with transcripts of its "
                               f"lost episodes (agent=llm); none for {missing[0]['env']} "
                               f"episode {missing[0]['episode']}")
    settings = LLMConfig(**block)
    client = ChatClient(settings, settings.cache or run_dir / "judge_cache.jsonl")
    coded = judge.code_lost(client, rubric, lost, records)
    return {**analysis, "lost_episodes": coded,
            "judge": {"model": block["model"], "base_url": block["base_url"],
                      **judge.summary(rubric, coded)}}


def run(cfg: DictConfig) -> dict:
    """Check the run, analyse it (and judge its losses) and write ``analysis.json`` into it;
    returns the analysis."""
    job = start_run(cfg, frozen=["run"], check=_check, out_key="run",
                    results_name="analysis.json")  # chunk and judge settings may change
    data, family = recorded(job.cfg.run)
    analysis = family.analysis.analyze(data, Path(job.cfg.run), job.cfg.chunk)
    block = dict(job.cfg.judge)
    if block["model"] is not None:
        analysis = judged(analysis, Path(job.cfg.run), family.analysis.judge, block)
    job.results.update(analysis)
    short = {k: analysis[k] for k in ("lost", "shares") if k in analysis}
    if "judge" in analysis:
        short["judge"] = analysis["judge"]["outcomes"]
    print(short, f"-> {job.results.path}")
    return job.results.data


main = hydra_main(run, "../configs", "analyze")


if __name__ == "__main__":
    main()
