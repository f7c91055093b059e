"""Round-by-round collaborative training (Narrowing the Collaboration Gap, Probably, §3, §5 and
App. E); the experiments, options and ``results.json`` keys: :mod:`jaxcollab.collab.run`.

    python train/collab.py experiment=parity_separation preset=cpu     # the paper's Figure 3
    python train/collab.py task=parity protocol=action preset=cpu       # one protocol
    python train/collab.py task=parity preset=cpu seeds=[0,1,2,3]       # seeds, vmapped
    python train/collab.py experiment=maze_messages preset=cpu          # mazes + baselines
    python train/collab.py experiment=parity_calibration preset=cpu     # Figure 5 (R2)
    python train/collab.py experiment=maze_calibration preset=cpu

(``train/maze.py`` and ``train/calibration.py`` are this command under their old names.)
"""

from pathlib import Path

from jaxcollab.collab.run import run, run_process
from jaxcollab.io.run import hydra_main

main = hydra_main(run_process, str(Path(__file__).resolve().parents[1] / "configs"), "collab")
__all__ = ["main", "run"]  # run: the same job as a library call (no process-wide settings)


if __name__ == "__main__":
    main()
