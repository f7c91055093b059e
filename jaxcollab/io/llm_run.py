"""The LLM run as a library call: :class:`RunConfig` (what to play, checked by the rollout
schema of every family's keys) and :func:`evaluate` (play it with one model and write
``results.json``, as ``eval/rollout.py agent=llm`` does without its collision guard).

It lives in ``io`` because it needs the run schema (:mod:`jaxcollab.io.schema`), which sits
above :mod:`jaxcollab.llm`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jaxcollab
from jaxcollab.core.config import check_fields
from jaxcollab.core.family import Spec
from jaxcollab.io.schema import Rollout
from jaxcollab.llm import jsonl
from jaxcollab.llm.client import LLMConfig
from jaxcollab.llm.run import run_team


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """A library-level LLM run: what ``eval/rollout.py agent=llm`` configures from the command
    line. ``batch`` is the chunk (episodes kept per finished chunk) and ``seed`` the run's seed,
    None for the schema's (:data:`jaxcollab.io.schema.Rollout`); ``turn_order`` a permutation
    of the bomb's roles or ``"cycle"`` (a library run plays one order unless told);
    ``options`` any other key of the run config, a family's block included (e.g.
    ``{"ktane": {"reflection": False}}``, ``{"maze": {"setting": "sampled", "samples": 3}}``),
    every key not given at the schema's default. The model and its sampling are
    :func:`evaluate`'s ``cfg``."""

    env: str
    episodes: int
    seed: int | None = None
    batch: int | None = None
    turn_order: tuple[str, ...] | str = ("deaf", "mute", "blind")
    options: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def config(self, llm: LLMConfig, out_dir, cache_path=None) -> dict:
        """The run config this stands for (the keys ``eval/rollout.py`` reads), checked by its
        schema.

        Raises:
            ConfigValueError: a value out of range; omegaconf's ``ValidationError``: an
                unknown key or a value of the wrong type (both name it).
        """
        from omegaconf import OmegaConf

        order = self.turn_order if isinstance(self.turn_order, str) else list(self.turn_order)
        block = dataclasses.asdict(llm) | ({} if cache_path is None else
                                           {"cache": str(cache_path)})
        given = {"seed": self.seed, "chunk": self.batch}
        cfg = OmegaConf.merge(OmegaConf.structured(Rollout), dict(self.options), {
            "env": self.env, "agent": "llm", "episodes": self.episodes, "turn_order": order,
            "llm": block, "out_dir": str(out_dir),
            **{k: v for k, v in given.items() if v is not None}})
        check_fields(OmegaConf.to_object(cfg))
        return OmegaConf.to_container(cfg, enum_to_str=True)


def evaluate(cfg: LLMConfig, rc: RunConfig, out_dir, cache_path=None, progress=None) -> dict:
    """Library entry: play ``rc`` with the model of ``cfg``, write and return ``results.json``
    (the keys of ``eval/rollout.py agent=llm``, without its collision guard). Finished chunks
    are kept in ``out_dir/episodes`` and transcripts appended, so a rerun resumes.

    Raises:
        LLMError: unreachable endpoint or unknown model (before any episode is written).
        KeyError / ValueError: unknown environment or bad option (names the value).
        Preempted: SIGINT / SIGTERM (:func:`run_team`).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    options = rc.config(cfg, out, cache_path)
    spec = Spec(options["episodes"], options["seed"], options["chunk"], out / "episodes", options)
    family = jaxcollab.family(rc.env)
    family.check(jaxcollab.resolve(rc.env), options)
    results = {"env": rc.env, **run_team(rc.env, options, spec, out, progress)}
    jsonl.write_atomic(out / "results.json", json.dumps(results, indent=2) + "\n")
    return results


__all__ = ["RunConfig", "evaluate"]
