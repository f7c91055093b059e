"""A run directory as the report reads it: ``results.json``, transcripts, analysis, plots."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from jaxcollab.core.errors import ConfigValueError


class NotARunError(ConfigValueError):
    """``run=PATH`` is not a finished run directory (no ``results.json``)."""

    def __init__(self, path, why: str):
        super().__init__("run", str(path), f"a run directory holding results.json; {why}")


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _is_transcript(records: list[dict]) -> bool:
    return bool(records) and all(isinstance(r, dict) and "agents" in r and "episode" in r
                                 for r in records)


@dataclass
class RunDir:
    """One run: ``results`` (``results.json``), ``transcripts`` (env name -> its episode
    records, from the ``<env>.jsonl`` files eval/llm.py writes), ``analysis``
    (``analysis.json`` or ``None``), ``pngs`` (the run's own plots, top level) and ``replay``
    (episodes per environment the report replays step by step, :mod:`jaxcollab.report.replay`;
    a report option, not a file)."""

    path: Path
    results: dict
    transcripts: dict[str, list[dict]] = field(default_factory=dict)
    analysis: dict | None = None
    pngs: list[Path] = field(default_factory=list)
    replay: int = 0

    @classmethod
    def load(cls, path: str | Path, replay: int = 0) -> RunDir:
        """Read a run directory (``replay``: :attr:`replay`).

        Raises:
            NotARunError: ``path`` is not a directory or holds no ``results.json`` (named).
            ValueError: ``results.json`` or ``analysis.json`` is not a JSON object.
        """
        path = Path(path)
        if not path.is_dir():
            raise NotARunError(path, "it is not a directory")
        if not (path / "results.json").is_file():
            raise NotARunError(path, "it holds none (expected the output directory of a "
                               "finished eval/rollout.py, eval/llm.py or train/*.py run)")
        results = _object(path / "results.json")
        transcripts = {}
        for f in sorted(path.glob("*.jsonl")):
            records = _jsonl(f)
            if _is_transcript(records):
                transcripts[records[0].get("env", f.stem)] = sorted(
                    records, key=lambda r: r["episode"])
        analysis = _object(path / "analysis.json") if (path / "analysis.json").is_file() else None
        return cls(path, results, transcripts, analysis, sorted(path.glob("*.png")), replay)

    @property
    def env(self) -> str:
        return str(self.results.get("env") or self.results.get("config", {}).get("env") or "")

    @property
    def family(self) -> str:
        return self.env.split("/")[0]

    @property
    def label(self) -> str:
        """Who played: ``LLM <model>``, ``scripted <agent>`` / ``oracle``, else the dir name."""
        r = self.results
        if "model" in r:
            return f"LLM {r['model']}"
        if "agent" in r:
            return "oracle" if r["agent"] == "oracle" else f"scripted {r['agent']}"
        return r.get("config", {}).get("experiment_name") or self.path.name


def _object(path: Path) -> dict:
    data = json.loads(path.read_text())
    if not isinstance(data, dict):
        raise ValueError(f"{path} holds a JSON {type(data).__name__}; expected an object")
    return data
