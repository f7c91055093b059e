"""A team learns a bomb variant or a Keep-Talking module from scratch by multi-agent PPO::

    python train/marl.py env=bomb/base-1 preset=cpu out_dir=DIR

The options, what it writes and the ``results.json`` keys: :mod:`jaxcollab.marl.run`.
"""

from pathlib import Path

from jaxcollab.io.run import hydra_main
from jaxcollab.marl.run import run

main = hydra_main(run, str(Path(__file__).resolve().parents[1] / "configs/marl"), "marl")


if __name__ == "__main__":
    main()
