"""``python train/maze.py ...`` is ``python train/collab.py ...``: the one training driver
(:mod:`jaxcollab.collab.run`), kept under this name for the documented commands
(experiment=maze_messages).
"""

from pathlib import Path

from jaxcollab.collab.run import run, run_process
from jaxcollab.io.run import hydra_main

main = hydra_main(run_process, str(Path(__file__).resolve().parents[1] / "configs"), "collab")
__all__ = ["main", "run"]  # run: the same job as a library call (no process-wide settings)


if __name__ == "__main__":
    main()
