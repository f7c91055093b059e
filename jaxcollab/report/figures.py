"""The report's plots, in one matplotlib style, returned as PNG bytes for inline embedding."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from jaxcollab.report.stats import successes, wilson  # noqa: E402

STYLE = {"figure.dpi": 110, "font.size": 9, "axes.spines.top": False,
         "axes.spines.right": False, "axes.grid": True, "grid.alpha": 0.3,
         "axes.prop_cycle": matplotlib.cycler(color=plt.get_cmap("tab10").colors),
         "legend.frameon": False}


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")  # legends below the axes included
    plt.close(fig)
    return buf.getvalue()


def success_bars(names: Sequence[str], series: Mapping[str, Sequence[tuple]],
                 title: str) -> bytes:
    """Grouped bars of success rate (%) with 90 % Wilson intervals as error bars.

    Args:
        names: the groups on the x axis (families, variants or modules).
        series: label -> one ``(rate, episodes)`` per name (``(None, 0)`` where missing).
    """
    with plt.rc_context(STYLE):
        width_in = min(11.0, max(5.0, 0.3 * len(names) * len(series) + 2))
        fig, ax = plt.subplots(figsize=(width_in, 3.4))
        width = 0.8 / len(series)
        x = np.arange(len(names))
        for i, (label, cells) in enumerate(series.items()):
            rates = np.array([np.nan if r is None else 100 * r for r, _ in cells])
            lo, hi = np.array([wilson(successes(r, n), n) if n else (np.nan, np.nan)
                               for r, n in cells]).T * 100
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
        return _png(fig)


def round_curves(panels: Mapping[str, Mapping[str, tuple[Sequence, Sequence]]],
                 log: Sequence[str] = ()) -> bytes:
    """One panel per metric, one line per protocol: ``panels[metric][label] = (rounds,
    values)``; metrics in ``log`` get a log y axis."""
    with plt.rc_context(STYLE):
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
        return _png(fig)


def stacked_counts(groups: Sequence[str], counts: Mapping[str, Sequence[int]],
                   title: str) -> bytes:
    """Horizontal stacked bars of shares (%) per group (SANZARU Fig. 4's failure modes, as bars);
    ``counts[mode]`` is one count per group; each bar is labelled with its total."""
    with plt.rc_context(STYLE):
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
        return _png(fig)


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
    with plt.rc_context(STYLE):
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
        return _png(fig)
