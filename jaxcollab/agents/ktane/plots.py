"""The Keep-Talking family's plots (style of :mod:`jaxcollab.io.plots`): a learned protocol
(``train/marl.py``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from jaxcollab.io.plots import figure, save


def protocol_plot(tables: dict, path: str | Path) -> None:
    """A learned protocol (:func:`jaxcollab.agents.ktane.rl_protocol.message_information`):
    the right action against the Expert's message, one heatmap of counts."""
    t = tables["expert"]
    fig, axes = figure(1, max(4.0, 0.25 * len(t["messages"]) + 2), 3.6)
    ax = axes[0][0]
    ax.imshow(np.asarray(t["table"]).reshape(len(t["actions"]), len(t["messages"])),
              aspect="auto", cmap="viridis")
    ax.set_xticks(range(len(t["messages"])), t["messages"], fontsize=6, rotation=90)
    ax.set_yticks(range(len(t["actions"])), t["actions"], fontsize=6)
    ax.set(xlabel="Expert's message (word ids)", ylabel="right action (verb:target)",
           title=f"{t['mutual_information_bits']:.2f} of {t['action_entropy_bits']:.2f} bits")
    save(fig, path)
