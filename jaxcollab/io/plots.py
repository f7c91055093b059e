"""Every plot the entry points write next to their ``results.json``, in one style (:func:`figure`
/ :func:`save`: Agg backend, one colour per protocol, light grids, 120 dpi PNGs).

Training: :func:`seeds_plot` (a seed sweep), :func:`plot_by_condition` (the calibration
experiment, Figure 5 layout). Calibration analysis: :func:`plot_error_by_round`,
:func:`plot_reliability`, :func:`plot_conversation_cells`. Tables of rates (teams x variants,
model pairs): :func:`heatmap_panels`. Information bounds: :func:`bounds_plot`. Learned
teams: :func:`learning_curve_plot`, :func:`learned_plot` (a sweep). A family's own plots live in
its wing, in this style: chained parity's separation and exact theory in
:mod:`jaxcollab.agents.parity.plots`, the maze experiment's and the LLM mazes' in
:mod:`jaxcollab.agents.maze.plots`, a learned bomb protocol's in
:mod:`jaxcollab.agents.bomb.plots`.
For pages (PNG bytes,
``eval/report.py``): :func:`success_bars`, :func:`round_curves`, :func:`stacked_counts`,
:func:`failure_rings`.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import EngFormatter  # noqa: E402

COLORS = {"action": "tab:red", "probability": "tab:blue"}
BASELINE_STYLE = {"solo": ("k", "--"), "agent0": ("tab:gray", ":"), "agent1": ("tab:olive", ":")}
#: Treatment lines cycle markers and dashes, so equal curves stay visible on top of each other.
MARKERS = "osD^vx*"
DASHES = ("-", "--", "-.", ":")
GRID_ALPHA = 0.3
DPI = 120


def figure(n_panels: int = 1, width: float = 6.0, height: float = 4.0, rows: int = 1):
    """``(fig, axes [rows, n_panels])``: a figure of equal panels, each ``width`` x ``height``
    inches."""
    return plt.subplots(rows, n_panels, figsize=(width * n_panels, height * rows), squeeze=False)


def save(fig, path: str | Path, tight: bool = True) -> None:
    """Write ``fig`` to ``path`` as a PNG and close it."""
    if tight:
        fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def treatment_style(i: int) -> dict:
    """Line style ``i`` of a set of curves (marker, dash, hollow every other one)."""
    return {"marker": MARKERS[i % len(MARKERS)], "ls": DASHES[i % len(DASHES)],
            "markerfacecolor": "none" if i % 2 else None}


def seeds_plot(summary: dict, path: str | Path, metric: str = "test_mse_vs_pstar") -> None:
    """Each protocol's per-seed curves (thin) and mean ± std band (thick) by round; log scale
    for the MSE. ``summary``: :func:`jaxcollab.io.seeds.summarise` or a vmapped run's results.
    Writes a PNG to ``path``."""
    fig, axes = figure()
    ax = axes[0, 0]
    for name, res in summary["protocols"].items():
        color, rounds, m = COLORS.get(name), res["rounds"], res[metric]
        for curve in m["per_seed"]:
            ax.plot(rounds, curve, "-", color=color, alpha=0.3, lw=0.8)
        mean, std = np.array(m["mean"]), np.array(m["std"])
        ax.plot(rounds, mean, "o-", color=color, lw=2,
                label=f"{name}: mean ± std over {len(m['per_seed'])} seeds")
        ax.fill_between(rounds, mean - std, mean + std, color=color, alpha=0.2)
    if metric == "test_mse_vs_pstar":
        ax.set_yscale("log")
    ax.set_xlabel("round")
    ax.set_ylabel(metric)
    ax.grid(True, which="both", alpha=GRID_ALPHA)
    ax.legend()
    save(fig, path)


def plot_by_condition(path: Path, rounds: list[int], panels: dict, ylabel: str, log: bool):
    """One panel per bias condition, one line per treatment (paper Figure 5 layout).

    ``panels[condition][treatment]`` is a list of values by round; ``log`` sets a log y axis
    (squared errors), otherwise the axis spans [0, 1] (success rates).
    """
    fig, axes = figure(len(panels), 5.5)
    for ax, (cond, curves) in zip(axes[0], panels.items(), strict=True):
        for i, (name, values) in enumerate(curves.items()):
            values = np.asarray(values, float)
            ax.plot(rounds, np.maximum(values, 1e-12) if log else values, label=name,
                    **treatment_style(i))
        ax.set(xlabel="round k", ylabel=ylabel, title=cond)
        ax.set_yscale("log") if log else ax.set_ylim(0, 1)
        ax.set_xticks(rounds)
        ax.grid(alpha=GRID_ALPHA)
    axes[0][0].legend(fontsize=8)
    save(fig, path)


def plot_error_by_round(path: Path, rounds: list[int], curves: dict, ylabel: str, title: str):
    """One line per treatment of ``curves[name]`` (values per round), log y axis."""
    fig, axes = figure()
    ax = axes[0, 0]
    for i, (name, values) in enumerate(curves.items()):
        ax.plot(rounds, np.maximum(np.asarray(values, float), 1e-12), label=name,
                markersize=9 - i % len(MARKERS), **treatment_style(i))
    ax.set(yscale="log", xlabel="round k", ylabel=ylabel, title=title)
    ax.set_xticks(rounds)
    ax.grid(alpha=GRID_ALPHA)
    ax.legend()
    save(fig, path)


def plot_reliability(path: Path, rounds: list[int], metrics: dict, title: str):
    """Reliability diagrams: one panel per round, one curve per treatment.

    ``metrics[name]["reliability"][k]`` is ``(mean_p, mean_y, mass)`` per bin; empty bins
    (NaN) are skipped; marker area follows the bin's mass.
    """
    fig, axes = figure(len(rounds), 3.2, 3.4)
    for k, ax in zip(range(len(rounds)), axes[0], strict=True):
        ax.plot([0, 1], [0, 1], color="gray", ls=":", lw=1)
        for name, m in metrics.items():
            mean_p, mean_y, mass = (np.asarray(v, float) for v in m["reliability"][k])
            keep = mass > 0
            line = ax.plot(mean_p[keep], mean_y[keep], "-", lw=1, label=name)[0]
            ax.scatter(mean_p[keep], mean_y[keep], s=10 + 300 * mass[keep], color=line.get_color())
        ax.set(xlim=(0, 1), ylim=(0, 1), title=f"round {rounds[k]}", xlabel="message")
        ax.grid(alpha=GRID_ALPHA)
    axes[0, 0].set_ylabel("observed frequency")
    axes[0, 0].legend(fontsize=8)
    fig.suptitle(title)
    save(fig, path)


def plot_conversation_cells(path: Path, rounds: list[int], metrics: dict, title: str):
    """Heat maps of the calibration gap ``E[y − p]`` over cells of (message k, message k−1).

    One row per treatment, one column per round; empty cells are blank.
    """
    names = list(metrics)
    fig, axes = figure(len(rounds), 2.6, 2.6, rows=len(names))
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
    save(fig, path, tight=False)  # the shared colour bar does not take tight_layout


def heatmap_panels(path: str | Path, panels: list[dict], title: str = "") -> None:
    """One annotated heatmap per panel, side by side (e.g. GPTNT Table 6's Defuser x Expert
    success matrix and each model's success by role). A panel: ``values`` (rows x columns
    floats in [0, 1], NaN = not played), ``rows`` / ``cols`` labels, ``xlabel``, ``ylabel``,
    ``title``. Writes a PNG."""
    cols = max(len(p["cols"]) for p in panels)
    fig, axes = figure(len(panels), max(4.8, 0.45 * cols + 2.5), 4.2)
    for ax, panel in zip(axes[0], panels, strict=True):
        values = np.asarray(panel["values"], float)
        image = ax.imshow(values, vmin=0.0, vmax=1.0, cmap="viridis", aspect="auto")
        for (i, j), v in np.ndenumerate(values):
            ax.text(j, i, "–" if np.isnan(v) else f"{100 * v:.0f}%", ha="center",
                    va="center", color="w" if np.isnan(v) or v < 0.6 else "k",
                    fontsize=9 if cols <= 8 else 6)
        ax.set_xticks(range(len(panel["cols"])), panel["cols"], rotation=30, ha="right")
        ax.set_yticks(range(len(panel["rows"])), panel["rows"])
        ax.set_xlabel(panel["xlabel"])
        ax.set_ylabel(panel["ylabel"])
        ax.set_title(panel["title"])
        fig.colorbar(image, ax=ax, fraction=0.046)
    if title:
        fig.suptitle(title)
    save(fig, path)


def bounds_plot(variants: dict[str, dict], path: str | Path) -> None:
    """Two panels (rounds, symbols): each variant's information bound (bars) and each team's
    mean over its successful episodes (dots); ``variants.<name>`` holds ``min_rounds``,
    ``min_symbols`` and ``teams.<team>.mean_rounds|mean_symbols`` (``eval/bounds.py``)."""
    names = [n.split("/", 1)[-1] for n in variants]
    teams = list(next(iter(variants.values()))["teams"])
    x = np.arange(len(names))
    fig, axes = figure(1, 0.45 * len(names) + 3, 3.5, rows=2)
    for ax, key, bound in ((axes[0, 0], "mean_rounds", "min_rounds"),
                           (axes[1, 0], "mean_symbols", "min_symbols")):
        ax.bar(x, [v[bound] or 0 for v in variants.values()], color="0.85", label="bound")
        for j, t in enumerate(teams):
            ys = [v["teams"][t].get(key) for v in variants.values()]
            ax.plot(x + 0.1 * (j - len(teams) / 2), [np.nan if y is None else y for y in ys],
                    "o", ms=4, label=t)
        ax.set_ylabel(key.removeprefix("mean_"))
        ax.set_yscale("log" if key == "mean_symbols" else "linear")
        ax.grid(alpha=GRID_ALPHA)
        ax.set_xticks(x, names if key == "mean_symbols" else [], rotation=70, fontsize=8)
    axes[0, 0].legend(fontsize=7, ncol=3)
    family = next(iter(variants)).split("/")[0]
    axes[0, 0].set_title(f"{family}: information bounds and teams (successful episodes)")
    save(fig, path)


def learning_curve_plot(results: dict, path: str | Path) -> None:
    """``train/marl.py``: held-out (greedy, solid) and training (sampled, dashed) success per
    seed against environment steps per seed, from ``results["curve"]``; the final
    ``success_rate`` as a dot when present."""
    curve = results["curve"]
    steps = np.asarray(curve["env_steps"], float)
    fig, axes = figure()
    ax = axes[0, 0]
    for name, style in (("heldout_success", "-"), ("train_success", "--")):
        values = np.asarray(curve[name], float)  # [points, seeds]
        for s in range(values.shape[1]):
            ax.plot(steps, values[:, s], style, color=f"C{s}",
                    label=f"{name.split('_')[0]} seed {s}")
    if "success_rate" in results:
        ax.plot(steps[-1:], [results["success_rate"]], "ko", label="held-out (rollout)")
    ax.set(xlabel="environment steps (turns) per seed", ylabel="success rate", ylim=(-0.02, 1.02),
           title=results["config"]["env"] + " " + results["config"]["ppo"]["algo"])
    ax.grid(alpha=GRID_ALPHA)
    ax.legend(fontsize=7)
    save(fig, path)


def learned_plot(envs: Mapping[str, dict], path: str | Path, columns: int = 4) -> None:
    """``eval/learned.py``: one panel per environment, the learned team's held-out greedy
    success (mean over seeds) against environment steps per seed, its final held-out success as
    a dot, and each scripted team's (and rollout run's) held-out success as a horizontal line,
    one colour and dash per team name across panels (equal rates stay visible)."""
    names = list(envs)
    teams = list(dict.fromkeys(t for e in envs.values() for t in {**e["teams"], **e["runs"]}))
    styles = {t: {"color": f"C{(i + 1) % 10}", "ls": DASHES[1 + i % (len(DASHES) - 1)]}
              for i, t in enumerate(teams)}
    cols = min(columns, len(names))
    fig, axes = figure(cols, 3.2, 2.5, rows=-(-len(names) // cols))
    for ax in axes.flat[len(names):]:
        ax.axis("off")
    for ax, name in zip(axes.flat, names):
        e = envs[name]
        curve = e["learned"]["curve"]
        ax.plot(curve["env_steps"], curve["heldout_success"], "-", color="C0", label="learned")
        ax.plot(curve["env_steps"][-1:], [e["learned"]["success_rate"]], "o", color="C0")
        for team, row in {**e["teams"], **e["runs"]}.items():
            if row.get("success_rate") is not None:
                ax.axhline(row["success_rate"], lw=1.2, label=team, **styles[team])
        ax.set(ylim=(-0.03, 1.03), title=name)
        ax.xaxis.set_major_formatter(EngFormatter(sep=""))  # 100k, 1M
        ax.title.set_fontsize(9)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=GRID_ALPHA)
    handles = {label: h for ax in axes.flat for h, label in zip(*ax.get_legend_handles_labels())}
    fig.legend(handles.values(), handles.keys(), loc="center left", bbox_to_anchor=(0.86, 0.5),
               fontsize=7)
    fig.supxlabel("environment steps (turns) per seed", fontsize=8)
    fig.supylabel("held-out success rate", fontsize=8)
    fig.tight_layout(rect=(0, 0, 0.86, 1))
    save(fig, path, tight=False)


# -- plots for pages: PNG bytes in the report's inline style ----------------------------------

#: The pages' style (``eval/report.py``), over the same grid and dpi as the files' plots.
PAGE_STYLE = {"figure.dpi": DPI, "font.size": 9, "axes.spines.top": False,
         "axes.spines.right": False, "axes.grid": True, "grid.alpha": GRID_ALPHA,
         "axes.prop_cycle": matplotlib.cycler(color=plt.get_cmap("tab10").colors),
         "legend.frameon": False}


def png_bytes(fig) -> bytes:
    """``fig`` as PNG bytes (for a self-contained page), closed."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")  # legends below the axes included
    plt.close(fig)
    return buf.getvalue()


def success_bars(names: Sequence[str], series: Mapping[str, Sequence[tuple]],
                 title: str) -> bytes:
    """Grouped bars of success rate (%) with 90 % intervals as error bars; PNG bytes.

    Args:
        names: the groups on the x axis (families, variants or modules).
        series: label -> one ``(rate, low, high)`` per name (``(None, None, None)`` where
            missing), e.g. from :func:`jaxcollab.report.stats.with_intervals`.
    """
    with plt.rc_context(PAGE_STYLE):
        width_in = min(11.0, max(5.0, 0.3 * len(names) * len(series) + 2))
        fig, ax = plt.subplots(figsize=(width_in, 3.4))
        width = 0.8 / len(series)
        x = np.arange(len(names))
        for i, (label, cells) in enumerate(series.items()):
            rates, lo, hi = (100 * np.array([np.nan if v is None else v for v in col], float)
                             for col in zip(*cells, strict=True))
            err = np.clip(np.nan_to_num(np.stack([rates - lo, hi - rates])), 0, None)
            ax.bar(x + (i - (len(series) - 1) / 2) * width, rates, width, yerr=err,
                   capsize=2, label=label, error_kw={"lw": 0.8})
        ax.set_xticks(x, names, rotation=45 if len(names) > 6 else 0,
                      ha="right" if len(names) > 6 else "center")
        ax.set_ylim(0, 105)
        ax.set_ylabel("success rate (%)")
        ax.set_title(title + " — bars: 90 % Wilson intervals")
        if len(series) > 1:
            ax.legend(fontsize=8, ncols=min(len(series), 4), loc="upper left",
                      bbox_to_anchor=(0, -0.25 if len(names) > 6 else -0.12))
        return png_bytes(fig)


def round_curves(panels: Mapping[str, Mapping[str, tuple[Sequence, Sequence]]],
                 log: Sequence[str] = ()) -> bytes:
    """One panel per metric, one line per protocol: ``panels[metric][label] = (rounds,
    values)``; metrics in ``log`` get a log y axis."""
    with plt.rc_context(PAGE_STYLE):
        n = len(panels)
        fig, axes = plt.subplots(1, n, figsize=(3.6 * n + 0.6, 3.0), squeeze=False)
        for ax, (metric, lines) in zip(axes[0], panels.items(), strict=True):
            for label, (rounds, values) in lines.items():
                dashed = "theory" in label
                ax.plot(rounds, [np.nan if v is None else v for v in values],
                        "--" if dashed else "o-", ms=3.5, label=label, alpha=0.8 if dashed else 1)
            if metric in log:
                ax.set_yscale("log")
            ax.set_xlabel("round")
            ax.set_title(metric)
            if any(lines):
                ax.legend(fontsize=7)
        return png_bytes(fig)


def stacked_counts(groups: Sequence[str], counts: Mapping[str, Sequence[int]],
                   title: str) -> bytes:
    """Horizontal stacked bars of shares (%) per group (SANZARU Fig. 4's failure modes, as bars);
    ``counts[mode]`` is one count per group; each bar is labelled with its total."""
    with plt.rc_context(PAGE_STYLE):
        fig, ax = plt.subplots(figsize=(7.0, 0.45 * len(groups) + 1.6))
        totals = np.maximum(np.sum([list(c) for c in counts.values()], axis=0), 1)
        left = np.zeros(len(groups))
        for mode, c in counts.items():
            share = 100 * np.asarray(c) / totals
            ax.barh(groups, share, left=left, label=mode)
            left += share
        for y, total in enumerate(np.sum([list(c) for c in counts.values()], axis=0)):
            ax.text(101, y, f"n={int(total)}", va="center", fontsize=8)
        ax.set_xlim(0, 110)
        ax.set_xlabel("share of lost episodes (%)")
        ax.set_title(title)
        ax.invert_yaxis()
        ax.legend(fontsize=7, ncols=4, loc="upper left", bbox_to_anchor=(0, -0.18))
        return png_bytes(fig)


_STAGE_MAPS = ("Blues", "Oranges", "Greens", "Purples", "Greys")


def failure_rings(groups: Mapping[str, Mapping[str, int]], stage_of: Mapping[str, str],
                  title: str) -> bytes:
    """One ring per group, as SANZARU Fig. 4 / Fig. 13 draw failure modes: the inner ring the
    stages, the outer ring the modes (in ``stage_of``'s order, shaded by stage), the centre the
    number of coded losses; ``groups[name][mode]`` are counts. Percent labels on wedges of at
    least 8 %."""
    stages = list(dict.fromkeys(stage_of.values()))
    colour = {}
    for i, stage in enumerate(stages):
        modes = [m for m, s in stage_of.items() if s == stage]
        cmap = plt.get_cmap(_STAGE_MAPS[i % len(_STAGE_MAPS)])
        colour[stage] = cmap(0.75)
        colour |= {m: cmap(0.35 + 0.45 * j / max(len(modes) - 1, 1)) for j, m in enumerate(modes)}
    n = len(groups)
    with plt.rc_context(PAGE_STYLE):
        fig, axes = plt.subplots(1, n, figsize=(2.6 * n + 0.4, 3.4), squeeze=False)
        for ax, (name, counts) in zip(axes[0], groups.items()):
            modes = [m for m in stage_of if counts.get(m, 0)]
            total = sum(counts.get(m, 0) for m in stage_of)
            inner = [sum(counts.get(m, 0) for m in stage_of if stage_of[m] == s) for s in stages]
            label = lambda pct: f"{pct:.0f}" if pct >= 8 else ""  # noqa: E731
            ax.pie([c for c in inner if c], radius=0.7, colors=[colour[s] for s, c in
                                                               zip(stages, inner) if c],
                   wedgeprops={"width": 0.3, "edgecolor": "w"}, startangle=90,
                   counterclock=False, autopct=label, pctdistance=0.78, textprops={"fontsize": 7})
            ax.pie([counts[m] for m in modes], radius=1.0, colors=[colour[m] for m in modes],
                   wedgeprops={"width": 0.3, "edgecolor": "w"}, startangle=90,
                   counterclock=False, autopct=label, pctdistance=0.85, textprops={"fontsize": 7})
            ax.text(0, 0, str(total), ha="center", va="center", fontsize=11)
            ax.set_title(name, fontsize=9)
            ax.set_aspect("equal")
        handles = [plt.Rectangle((0, 0), 1, 1, color=colour[k]) for k in (*stages, *stage_of)]
        fig.legend(handles, [*stages, *stage_of], fontsize=7, ncols=min(6, len(handles)),
                   loc="lower center", bbox_to_anchor=(0.5, -0.12))
        fig.suptitle(title)
        return png_bytes(fig)
