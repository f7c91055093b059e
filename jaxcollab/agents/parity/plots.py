"""The chained-parity family's plots (style of :mod:`jaxcollab.io.plots`): the protocol
experiment's separation (``train/collab.py``, the paper's Figure 3) and the exact theory
(``eval/theory.py``)."""

from __future__ import annotations

from pathlib import Path

from jaxcollab.io.plots import COLORS, GRID_ALPHA, figure, save

#: The theory curve (:func:`jaxcollab.agents.parity.theory.parity_curves`) of each protocol.
THEORY_KEYS = {"action": "action_excess_mse", "probability": "prob_excess_mse"}


def theory_plot(results: dict, path: str | Path) -> None:
    """Exact excess squared error (log scale) and decision accuracy by round under both
    protocols (``results``: :func:`jaxcollab.agents.parity.theory.parity_curves`). Writes a PNG."""
    rounds = results["rounds"]
    fig, axes = figure(2, 5.0)
    ax_err, ax_acc = axes[0]
    for name, prefix, style in (("probability", "prob", "o-"), ("action", "action", "s--")):
        ax_err.plot(rounds, [max(v, 1e-12) for v in results[f"{prefix}_excess_mse"]], style,
                    color=COLORS[name], label=f"{name} exchange")
        ax_acc.plot(rounds, results[f"{prefix}_accuracy"], style, color=COLORS[name],
                    label=f"{name} exchange")
    ax_err.set(yscale="log", xlabel="round k", ylabel="E[(p* − q_k)²]", title="Posterior error")
    ax_acc.axhline(results["bayes_accuracy"], color="gray", ls=":", label="Bayes (full info)")
    ax_acc.set(xlabel="round k", ylabel="decision accuracy", title="Accuracy")
    for ax in (ax_err, ax_acc):
        ax.set_xticks(rounds)
        ax.grid(alpha=GRID_ALPHA)
        ax.legend()
    fig.suptitle("Chained parity: exact theory")
    save(fig, path)


def separation_plot(results: dict, path: str | Path) -> None:
    """The paper's Figure 3: test E[(p − p*)²] per round, learned (markers) vs theory (dashed),
    for each protocol in ``results["protocols"]``; log scale. Writes a PNG to ``path``."""
    fig, axes = figure()
    ax = axes[0, 0]
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
    ax.grid(True, which="both", alpha=GRID_ALPHA)
    ax.legend()
    save(fig, path)
