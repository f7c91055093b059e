"""PNG plots for calibration runs: error by round, reliability diagrams, conversation cells.

Inputs are the host-side dictionaries built by :func:`jaxcollab.collab.metrics.round_metrics`,
keyed by treatment name. Figures are written with the Agg backend (no display needed).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

MARKERS = "osD^vx*"
DASHES = ("-", "--", "-.", ":")


def plot_error_by_round(path: Path, rounds: list[int], curves: dict, ylabel: str, title: str):
    """One line per treatment of ``curves[name]`` (values per round), log y axis.

    Each treatment gets its own marker and dash pattern: equal curves (e.g. the naive
    rare-action baseline when no report's arg-max is rare) stay visible on top of each other.
    """
    fig, ax = plt.subplots(figsize=(6, 4))
    for i, (name, values) in enumerate(curves.items()):
        ax.plot(rounds, np.maximum(np.asarray(values, float), 1e-12), label=name,
                marker=MARKERS[i % len(MARKERS)], ls=DASHES[i % len(DASHES)],
                markersize=9 - i % len(MARKERS), markerfacecolor="none" if i % 2 else None)
    ax.set(yscale="log", xlabel="round k", ylabel=ylabel, title=title)
    ax.set_xticks(rounds)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_reliability(path: Path, rounds: list[int], metrics: dict, title: str):
    """Reliability diagrams: one panel per round, one curve per treatment.

    ``metrics[name]["reliability"][k]`` is ``(mean_p, mean_y, mass)`` per bin; empty bins
    (NaN) are skipped; marker area follows the bin's mass.
    """
    fig, axes = plt.subplots(1, len(rounds), figsize=(3.2 * len(rounds), 3.4), squeeze=False)
    for k, ax in zip(range(len(rounds)), axes[0], strict=True):
        ax.plot([0, 1], [0, 1], color="gray", ls=":", lw=1)
        for name, m in metrics.items():
            mean_p, mean_y, mass = (np.asarray(v, float) for v in m["reliability"][k])
            keep = mass > 0
            line = ax.plot(mean_p[keep], mean_y[keep], "-", lw=1, label=name)[0]
            ax.scatter(mean_p[keep], mean_y[keep], s=10 + 300 * mass[keep], color=line.get_color())
        ax.set(xlim=(0, 1), ylim=(0, 1), title=f"round {rounds[k]}", xlabel="message")
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel("observed frequency")
    axes[0, 0].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_conversation_cells(path: Path, rounds: list[int], metrics: dict, title: str):
    """Heat maps of the calibration gap ``E[y − p]`` over cells of (message k, message k−1).

    One row per treatment, one column per round; empty cells are blank.
    """
    names = list(metrics)
    fig, axes = plt.subplots(
        len(names), len(rounds), figsize=(2.6 * len(rounds), 2.6 * len(names)), squeeze=False
    )
    image = None
    for row, name in zip(axes, names, strict=True):
        for k, ax in enumerate(row):
            gap = np.asarray(metrics[name]["cells"][k], float)
            image = ax.imshow(gap, origin="lower", extent=(0, 1, 0, 1), cmap="coolwarm",
                              vmin=-0.25, vmax=0.25)
            ax.set_title(f"{name}, round {rounds[k]}", fontsize=8)
            ax.tick_params(labelsize=6)
        row[0].set_ylabel("message k", fontsize=8)
    for ax in axes[-1]:
        ax.set_xlabel("message k−1", fontsize=8)
    fig.colorbar(image, ax=axes, shrink=0.6, label="E[y − p] in cell")
    fig.suptitle(title)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_by_condition(path: Path, rounds: list[int], panels: dict, ylabel: str, log: bool):
    """One panel per bias condition, one line per treatment (paper Figure 5 layout).

    ``panels[condition][treatment]`` is a list of values by round; ``log`` sets a log y axis
    (squared errors), otherwise the axis spans [0, 1] (success rates).
    """
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4), squeeze=False)
    for ax, (cond, curves) in zip(axes[0], panels.items(), strict=True):
        for i, (name, values) in enumerate(curves.items()):
            values = np.asarray(values, float)
            ax.plot(rounds, np.maximum(values, 1e-12) if log else values, label=name,
                    marker=MARKERS[i % len(MARKERS)], ls=DASHES[i % len(DASHES)],
                    markerfacecolor="none" if i % 2 else None)
        ax.set(xlabel="round k", ylabel=ylabel, title=cond)
        ax.set_yscale("log") if log else ax.set_ylim(0, 1)
        ax.set_xticks(rounds)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
