"""The maze family's plots (style of :mod:`jaxcollab.io.plots`): the trained transformers'
maze experiment (``train/maze.py``) and the collaboration-gap paper's LLM figures
(``eval/collabgap.py``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from jaxcollab.io.plots import BASELINE_STYLE, COLORS, GRID_ALPHA, figure, save, treatment_style

#: The LLM maze panels of :func:`llm_maze_plot`: results key -> axis label.
LLM_MAZE_PANELS = {"maze_success": "maze success", "step_accuracy": "move accuracy",
                   "calibration_loss": "calibration loss"}


def maze_success_plot(results: dict, path: str | Path) -> None:
    """Maze success (left) and step accuracy (right) by round for each protocol in
    ``results["protocols"]``, with the trained baselines as horizontal lines. Writes a PNG."""
    fig, axes = figure(2, 5.0)
    baselines = results.get("baselines", {})
    lines = dict(baselines.get("half_view", {}))
    if "solo" in baselines:
        lines["solo"] = baselines["solo"]
    rounds = sorted({r for res in results.get("protocols", {}).values() for r in res["rounds"]})
    for ax, key, title in zip(
        axes[0], ("maze_success", "step_accuracy"), ("maze success", "step accuracy"), strict=True
    ):
        for name, res in results.get("protocols", {}).items():
            ax.plot(res["rounds"], res[key], "o-", color=COLORS.get(name), label=name)
        for name, value in lines.items():
            color, style = BASELINE_STYLE.get(name, ("tab:green", "-."))
            label = "solo (full maze)" if name == "solo" else f"{name} alone (half view)"
            ax.axhline(value[key], color=color, linestyle=style, label=label)
        ax.set_xticks(rounds)
        ax.set_xlabel("round (decision after the round)")
        ax.set_ylabel(title)
        ax.set_ylim(0, 1)
        ax.grid(True, alpha=GRID_ALPHA)
        ax.set_title(f"Split-mask 6x6 mazes: {title}")
    axes[0, 0].legend(fontsize=8)
    save(fig, path)


def _floats(values) -> np.ndarray:
    """``values`` as floats, ``None`` as NaN (not drawn)."""
    return np.array([np.nan if v is None else v for v in values], float)


def llm_maze_plot(results: dict, path: str | Path, panels=("maze_success",)) -> None:
    """The collaboration-gap paper's LLM figures (Figs. 7-9, 11): one panel per key of
    ``panels`` (:data:`LLM_MAZE_PANELS`), one line per protocol of ``results["protocols"]``
    (lists by round; ``None`` is skipped) with its 90 % interval (``<key>_interval``) as a
    band; a one-round protocol (solo, full maze) is a horizontal reference line. The title
    names ``results["model"]``. Writes a PNG."""
    protocols = results.get("protocols", {})
    fig, axes = figure(len(panels), 5.0)
    for ax, key in zip(axes[0], panels, strict=True):
        for i, (name, res) in enumerate(protocols.items()):
            values = _floats(res[key])
            bands = res.get(f"{key}_interval") or [None] * len(values)
            lo, hi = (_floats([None if b is None else b[j] for b in bands]) for j in (0, 1))
            if len(values) == 1:
                ax.axhline(values[0], color="k", ls="--", label=f"{name} (reference)")
                continue
            line = ax.plot(res["rounds"], values, label=name, **treatment_style(i))[0]
            ax.fill_between(res["rounds"], lo, hi, color=line.get_color(), alpha=0.15)
            ax.set_xticks(res["rounds"])
        ax.set(xlabel="round", ylabel=LLM_MAZE_PANELS[key])
        if key != "calibration_loss":
            ax.set_ylim(0, 1)
        ax.grid(alpha=GRID_ALPHA)
        ax.legend(fontsize=8)
    fig.suptitle(f"LLM mazes ({results.get('model', '')}): means and 90 % bootstrap intervals")
    save(fig, path)


def confidence_plot(results: dict, path: str | Path) -> None:
    """The paper's Fig. 10: per protocol (rows) and round (columns), the histogram of the top
    probability of the communicated vectors (bars, left axis) with the accuracy of the argmax
    move per bin (dots, right axis; the dash is the bin's mean confidence, where a calibrated
    report's accuracy lies). ``results["protocols"][name]["confidence"]``: per round
    :func:`jaxcollab.agents.maze.llm_results.confidence_histogram`. Writes a PNG."""
    protocols = {n: r for n, r in results.get("protocols", {}).items() if r.get("confidence")}
    n_rounds = max(len(r["confidence"]) for r in protocols.values())
    fig, axes = figure(n_rounds, 3.2, 3.0, rows=len(protocols))
    twins = []  # each row's last accuracy axis
    for row, (name, res) in zip(axes, protocols.items(), strict=True):
        for k, ax in enumerate(row):
            if k >= len(res["confidence"]):
                ax.axis("off")
                continue
            hist = res["confidence"][k]
            x = np.arange(len(hist["bins"]))
            ax.bar(x, hist["count"], color=COLORS["probability"], alpha=0.5)
            ax.set_xticks(x, hist["bins"], rotation=60, fontsize=6)
            ax.set_title(f"{name}, round {k + 1}", fontsize=8)
            acc = ax.twinx()
            acc.plot(x, _floats(hist["accuracy"]), "o", color=COLORS["action"],
                     label="accuracy")
            acc.plot(x, _floats(hist["confidence"]), "_", color="k", markersize=14,
                     label="mean confidence")
            acc.set_ylim(0, 1)
            acc.tick_params(labelsize=6)
        row[0].set_ylabel("count", fontsize=8)
        acc.set_ylabel("accuracy", fontsize=8)
        twins.append(acc)
    twins[0].legend(fontsize=6, loc="upper left")
    fig.suptitle("Top probability of the communicated vector: count and accuracy per bin")
    save(fig, path)


#: The collaboration-gap experiment's ``plots`` names drawn into ``collabgap.png`` by
#: :func:`llm_maze_plot` (in order); ``confidence`` draws ``confidence.png``.
COLLABGAP_CURVES = ("maze_success", "step_accuracy", "calibration_loss")


def collabgap_plots(results: dict, out: Path, names) -> None:
    """The maze's :attr:`~jaxcollab.core.family.LLMGame.plots`: of ``names`` (the experiment's
    ``plots``), the :data:`COLLABGAP_CURVES` panels into ``out/collabgap.png`` and
    ``confidence`` into ``out/confidence.png``."""
    curves = [p for p in COLLABGAP_CURVES if p in names]
    if curves:
        llm_maze_plot(results, out / "collabgap.png", curves)
    if "confidence" in names:
        confidence_plot(results, out / "confidence.png")
