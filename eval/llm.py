"""``python eval/llm.py …`` is ``python eval/rollout.py agent=llm …`` (``configs/llm.yaml``
only sets ``agent=llm``, ``episodes=9`` and ``out_dir``): an LLM team on an environment or
group through any OpenAI-compatible endpoint, played by the one rollout driver. See
:mod:`eval.rollout` for the options and ``results.json`` keys."""

from __future__ import annotations

import sys
from pathlib import Path

# run as a script, Python puts eval/ on the path, not the repository root that holds eval/
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from eval.rollout import run  # noqa: E402
from jaxcollab.io.run import hydra_main  # noqa: E402

#: The alias: ``eval/rollout.py``'s ``run`` on ``configs/llm.yaml``.
main = hydra_main(run, "../configs", "llm")


if __name__ == "__main__":
    main()
