"""Maze success per round (issue 4), written next to ``results.json``."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"action": "tab:red", "probability": "tab:blue"}
BASELINE_STYLE = {"solo": ("k", "--"), "agent0": ("tab:gray", ":"), "agent1": ("tab:olive", ":")}


def maze_success_plot(results: dict, path: str | Path) -> None:
    """Maze success (left) and step accuracy (right) by round for each protocol in
    ``results["protocols"]``, with the trained baselines as horizontal lines. Writes a PNG."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    baselines = results.get("baselines", {})
    lines = dict(baselines.get("half_view", {}))
    if "solo" in baselines:
        lines["solo"] = baselines["solo"]
    rounds = sorted({r for res in results.get("protocols", {}).values() for r in res["rounds"]})
    for ax, key, title in zip(
        axes, ("maze_success", "step_accuracy"), ("maze success", "step accuracy"), strict=True
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
        ax.grid(True, alpha=0.3)
        ax.set_title(f"Split-mask 6x6 mazes: {title}")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
