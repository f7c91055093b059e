"""Run logging: optional wandb (``logger.mode``) and a rich progress bar per round or chunk."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

MODES = ("disabled", "offline", "online")


class RunLogger:
    """Metrics to wandb (when enabled) and progress bars to the terminal.

    Args:
        mode: ``"disabled"`` (default; wandb is not even imported), ``"offline"`` (writes
            ``wandb/`` under ``run_dir`` for a later ``wandb sync``) or ``"online"``.
            ``WANDB_MODE=disabled`` in the environment (wandb's own switch; the test suite sets
            it) disables every mode.
        project, name, config: passed to ``wandb.init``.
        run_dir: where offline runs are stored.

    Raises:
        ValueError: unknown mode (lists the valid ones).
    """

    def __init__(self, mode: str = "disabled", project: str = "jaxcollab", name: str | None = None,
                 config: dict | None = None, run_dir: str | None = None):
        if mode not in MODES:
            raise ValueError(f"unknown logger.mode {mode!r}; expected one of {MODES}")
        if os.environ.get("WANDB_MODE") == "disabled":
            mode = "disabled"
        logging.getLogger("absl").setLevel(logging.WARNING)  # orbax logs every save at INFO
        self.run = None
        if mode != "disabled":
            import wandb

            self.run = wandb.init(project=project, name=name, config=config, mode=mode,
                                  dir=run_dir)

    def log(self, metrics: dict, step: int | None = None) -> None:
        """Send ``metrics`` to wandb (no-op when disabled)."""
        if self.run is not None:
            self.run.log(metrics, step=step)

    @contextlib.contextmanager
    def progress(self, description: str, total: int) -> Iterator[Callable[[int, float], None]]:
        """A progress bar showing loss, steps/s and ETA; yields ``update(step, loss, rate=None)``:
        ``rate`` is the steps/s to show (e.g. environment steps, compile excluded), else the
        bar's own rate of ``step``."""
        columns = (
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("loss {task.fields[loss]:.4f}"),
            TextColumn("{task.fields[rate]} steps/s"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
        )
        with Progress(*columns, refresh_per_second=2) as bar:
            task = bar.add_task(description, total=total, loss=float("nan"), rate="-")

            def update(step: int, loss: float, rate: float | None = None) -> None:
                speed = bar.tasks[task].speed if rate is None else rate
                bar.update(task, completed=step, loss=loss,
                           rate=f"{speed:,.1f}" if speed else "-")

            yield update

    def finish(self) -> None:
        if self.run is not None:
            self.run.finish()
