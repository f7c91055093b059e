"""``python train/maze.py ...`` is ``python train/collab.py ...``: the one training driver
(:mod:`jaxcollab.collab.run`), kept under this name for the documented commands
(experiment=maze_messages).
"""

from pathlib import Path

from jaxcollab.collab.run import run
from jaxcollab.io.run import hydra_main

main = hydra_main(run, str(Path(__file__).resolve().parents[1] / "configs"), "collab")


if __name__ == "__main__":
    main()
