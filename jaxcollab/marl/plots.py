"""Learning-curve plot of ``train/marl.py``: success rate against environment steps."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def curve_plot(results: dict, path: str | Path) -> None:
    """Held-out (greedy, solid) and training (sampled, dashed) success per seed against
    environment steps per seed, from ``results["curve"]``; the final ``success_rate`` as a
    dot when present."""
    curve = results["curve"]
    steps = np.asarray(curve["env_steps"], float)
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, style in (("heldout_success", "-"), ("train_success", "--")):
        values = np.asarray(curve[name], float)  # [points, seeds]
        for s in range(values.shape[1]):
            ax.plot(steps, values[:, s], style, color=f"C{s}",
                    label=f"{name.split('_')[0]} seed {s}")
    if "success_rate" in results:
        ax.plot(steps[-1:], [results["success_rate"]], "ko", label="held-out (rollout)")
    ax.set(xlabel="environment steps (turns) per seed", ylabel="success rate", ylim=(-0.02, 1.02),
           title=results["config"]["env"] + " " + results["config"]["ppo"]["algo"])
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
