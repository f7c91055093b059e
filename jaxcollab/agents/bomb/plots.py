"""The bomb family's plots (style of :mod:`jaxcollab.io.plots`): a learned protocol
(``train/marl.py``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from jaxcollab.io.plots import figure, save


def protocol_plot(tables: dict, path: str | Path) -> None:
    """A learned protocol (:func:`jaxcollab.agents.bomb.rl_protocol.protocol_tables`): one
    heatmap per role and channel, its most informative feature against the symbol sent."""
    fig, axes = figure(len(tables), 4.0, 3.4)
    for ax, (key, t) in zip(axes[0], tables.items(), strict=True):
        fname, f = max(t["features"].items(), key=lambda kv: kv[1]["mutual_information_bits"])
        ax.imshow(np.asarray(f["table"]), aspect="auto", cmap="viridis")
        ax.set_xticks(range(len(t["symbols"])), [str(s) for s in t["symbols"]], fontsize=6)
        ax.set_yticks(range(len(f["values"])), [str(v) for v in f["values"]], fontsize=6)
        ax.set(xlabel="symbol sent", ylabel=fname,
               title=f"{key}: {f['mutual_information_bits']:.2f} bits, "
                     f"dead {t['dead_channel']:.0%}")
        ax.title.set_fontsize(8)
    save(fig, path)
