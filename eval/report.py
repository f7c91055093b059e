"""An HTML report of a finished run: ``python eval/report.py runs=DIR`` writes ``DIR/report.html``.

One self-contained page (inline style and script, plots as inline PNGs; open it from disk, no
server or network) for any run directory: rollout runs (``eval/rollout.py``: per variant or per
module, the bank protocol's SANZARU Tables 3/4/12 layouts), LLM runs (``eval/llm.py``: the same
tables, parse errors and tokens, and every episode's transcript by episode, step and role),
training runs (``train/*.py``: curves by round, the run's PNGs) and ``analysis.json`` codes when
the run has one. ``python eval/report.py 'runs=[A,B,C]'`` puts several runs side by side
(success by family, variant and module with 90 % Wilson intervals) in ``A/compare.html``;
``out=FILE`` writes elsewhere; ``run=`` is an alias of ``runs=`` (give one). ``replay=N``
(default 5) replays each environment's first N episodes step by step as pictures (0: none);
``screenshots=DIR`` also writes
``DIR/replay-<family>.png`` of each run's first replayed episode at its middle step (the
README's pictures). See :mod:`jaxcollab.report`.
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from jaxcollab.io.run import hydra_main, validate
from jaxcollab.io.schema import Report
from jaxcollab.report import RunDir, write_report
from jaxcollab.report.screenshot import screenshot


def run(cfg: DictConfig):
    """Check the config and the run directories, write the report; returns its path.

    Raises:
        ConfigValueError: a bad ``runs`` (or ``run``) value, both or neither given, or a path
            that is not a directory holding ``results.json``
            (:class:`jaxcollab.report.NotARunError`, the path named).
    """
    cfg = validate(cfg)
    runs = Report(**OmegaConf.to_object(cfg)).dirs()
    path = write_report(runs, cfg.out, cfg.replay)
    print(f"-> {path}")
    for r in runs if cfg.screenshots is not None else ():
        run_dir = RunDir.load(r, max(cfg.replay, 1))
        shot = screenshot(run_dir, Path(cfg.screenshots) / f"replay-{run_dir.family}.png")
        print(f"-> {shot}" if shot else f"{r}: nothing replayed, no screenshot")
    return path


main = hydra_main(run, "../configs", "report")


if __name__ == "__main__":
    main()
