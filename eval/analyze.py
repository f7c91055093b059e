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
The judge also answers the family's per-episode questions its rules leave open
(:attr:`~jaxcollab.core.family.Analysis.questions`; bomb: the protocol family, SANZARU Figs.
7-12, of each episode the rules leave undetermined, also of a scripted team's run, whose
transcripts the replay rebuilds; without transcripts no failure modes are coded).
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


def has_transcripts(run_dir: str, data: dict) -> bool:
    """Whether the run in ``run_dir`` (``data`` its results) recorded any transcript."""
    env = (data.get("config") or {}).get("env") or data.get("env")
    return any(transcript_path(run_dir, n).is_file() for n in env_selection("run", env))


def _check(cfg: DictConfig) -> None:
    """Raises ConfigValueError: a run :func:`recorded` refuses, or a judge for a family
    without a rubric, or for a run without transcripts of a family that asks the judge no
    per-episode question (a scripted team's run has no transcripts to code failures from)."""
    data, family = recorded(cfg.run)
    if cfg.judge.model is None:
        return
    if family.analysis.judge is None and not family.analysis.questions:
        raise ConfigValueError("judge.model", cfg.judge.model, f"no judge: family "
                               f"{family.name} has no rubric")
    if not family.analysis.questions and not has_transcripts(cfg.run, data):
        raise ConfigValueError("judge.model", cfg.judge.model, f"a run with transcripts "
                               f"(agent=llm); {cfg.run} holds none")


def judged(analysis: dict, run_dir: Path, rubric: judge.Rubric, block: dict,
           client: ChatClient) -> dict:
    """``analysis`` with every lost episode coded by the judge (``client``; ``block`` the
    ``judge`` config) and the ``judge`` summary added.

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
    block, run_dir, slots = dict(job.cfg.judge), Path(job.cfg.run), family.analysis
    client = None
    if block["model"] is not None:
        settings = LLMConfig(**block)
        client = ChatClient(settings, settings.cache or run_dir / "judge_cache.jsonl")
    extra = ({"ask": client and judge.asker(client, slots.questions)} if slots.questions
             else {})
    analysis = slots.analyze(data, run_dir, job.cfg.chunk, **extra)
    if client is not None and slots.judge is not None:
        if has_transcripts(job.cfg.run, data):
            analysis = judged(analysis, run_dir, slots.judge, block, client)
        else:
            print("no transcripts (a scripted team): the judge answered the per-episode "
                  f"questions ({', '.join(slots.questions)}) only, no failure modes")
    job.results.update(analysis)
    short = {k: analysis[k] for k in ("lost", "shares") if k in analysis}
    if "judge" in analysis:
        short["judge"] = analysis["judge"]["outcomes"]
    print(short, f"-> {job.results.path}")
    return job.results.data


main = hydra_main(run, "../configs", "analyze")


if __name__ == "__main__":
    main()
