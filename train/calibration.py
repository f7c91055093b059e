"""``python train/calibration.py ...`` runs ``python train/collab.py ...``: the one training
driver, kept under this name for the documented commands (experiment=parity_calibration or
experiment=maze_calibration; see that module).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `train` when run as a script
from train.collab import main, run  # noqa: E402, F401

if __name__ == "__main__":
    main()
