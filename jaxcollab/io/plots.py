"""Plots written next to ``results.json``."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

THEORY_KEYS = {"action": "action_excess_mse", "probability": "prob_excess_mse"}
COLORS = {"action": "tab:red", "probability": "tab:blue"}


def separation_plot(results: dict, path: str | Path) -> None:
    """The paper's Figure 3: test E[(p − p*)²] per round, learned (markers) vs theory (dashed),
    for each protocol in ``results["protocols"]``; log scale. Writes a PNG to ``path``."""
    fig, ax = plt.subplots(figsize=(6, 4))
    theory = results.get("theory", {})
    for name, res in results.get("protocols", {}).items():
        color = COLORS.get(name)
        ax.plot(res["rounds"], res["test_mse_vs_pstar"], "o-", color=color,
                label=f"{name} (learned)")
        if THEORY_KEYS.get(name) in theory:
            ax.plot(theory["rounds"], theory[THEORY_KEYS[name]], "--", color=color,
                    alpha=0.7, label=f"{name} (theory)")
    ax.set_yscale("log")
    ax.set_xlabel("round")
    ax.set_ylabel("test MSE vs p*")
    ax.set_title("Chained parity: probability vs action messages")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
