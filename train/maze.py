"""``python train/maze.py ...`` runs ``python train/collab.py ...``: the one training driver,
kept under this name for the documented commands (experiment=maze_messages; see that module).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `train` when run as a script
from train.collab import main, run  # noqa: E402, F401

if __name__ == "__main__":
    main()
